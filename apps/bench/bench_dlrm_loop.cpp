// actorps_bench_dlrm_loop: the no-actor baseline for `actorps simulate --model dlrm --workers 1`.
//
// One thread runs exactly the arithmetic that one worker + its shards do per clock — the batch
// of clock c (criteo_batches, part 0 of 1), its keys de-duplicated (dedup_keys, as the worker's
// batch_tables), their rows read from one local sparse_table built from dlrm_model(shape)'s
// table config and the run's seed (a row starts the same on any shard, so one table stands for
// all of them), set_parameters + train_step, the row gradients applied with lr scale 1 (a shard
// with one live worker in ssp or async), then the run's dense optimizer with its schedule at
// clock c on the flat parameters — with no messages, no encoding and no copies between roles.
// samples_per_s of a W=1 simulation divided by this figure is the runtime's overhead ratio.
// Only the training loop is timed; opening the file, reading clock 0 and building the model and
// the table are not. split_ms says where a step's time goes (a clock read per piece).
#include "actors/chief/metrics.hpp"
#include "actors/data/criteo_batches.hpp"
#include "actors/model/dlrm_plugin.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/ps/lr_schedule.hpp"
#include "kernels/denormals.hpp"
#include "kernels/dlrm.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/sparse/key_dedup.hpp"
#include "kernels/sparse/sparse_table.hpp"

#include "apps/bench/bench_main.hpp"
#include "apps/bench/bench_scratch.hpp"
#include "kernels/blas_core.hpp"

#include <boost/program_options.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;

namespace {

struct options {
  std::string train, model = "dlrm", optimizer = "adam", schedule = "cosine";
  int batch = 256;
  int64_t steps = 1000;
  double lr = 0.003;  ///< 0: the optimizer's default, as simulate's --lr 0
  uint64_t seed = 1;
};

/// "dlrm" or "dlrm:ARGS" → the shape; po::error otherwise (the plug-in's message for bad ARGS).
dlrm_shape shape_of(const std::string& model) {
  if (model != "dlrm" && model.rfind("dlrm:", 0) != 0)
    throw po::error("--model must be dlrm[:DIM[:BOTTOM[:TOP]]] (got " + model + ")");
  try {
    auto shape = parse_dlrm_shape(model == "dlrm" ? "" : model.substr(5));
    validate_dlrm_shape(shape);
    return shape;
  } catch (const std::exception& e) {
    throw po::error(std::string("--model ") + e.what());
  }
}

/// The pieces of one step, in the order they run.
enum piece { read_batch, dedup, table_read, train, table_apply, dense_update, pieces };
constexpr std::array<const char*, pieces> piece_names = {
  "read_batch", "dedup", "table_read", "train_step", "table_apply", "dense_update"};

int run(const options& o) {
  const double load_before = load_average();
  const dlrm_shape shape = shape_of(o.model);
  const model_spec spec = dlrm_model(shape);
  optimizer_config opt;  // the shards' config, as simulate builds it from the flags
  opt.kind = *parse_optimizer_kind(o.optimizer);
  opt.learning_rate = o.lr > 0 ? float(o.lr) : default_learning_rate(opt.kind);
  const lr_schedule schedule = *parse_lr_schedule(o.schedule);

  flush_denormals_to_zero();
  criteo_batches data(o.train, 0, 1, o.batch);
  auto be = make_cpu_backend();
  dlrm model(*be, shape, o.batch);
  const auto& table_spec = spec.sparse_tables.at(0).config;
  const uint32_t dim = table_spec.dim;
  sparse_table table(table_spec, o.seed, 0);

  auto params = initial_values(spec, o.seed);
  std::vector<float> grads(params.size()), state(optimizer_state_slots(opt.kind) * params.size());
  std::vector<uint64_t> keys;
  std::vector<uint32_t> inverse;
  std::vector<float> rows, row_grads;

  using clock = std::chrono::steady_clock;
  std::array<double, pieces> split{};  // seconds per piece, summed over the steps
  auto mark = clock::now();
  auto lap = [&](piece p) {
    auto now = clock::now();
    split[p] += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  double loss_sum = 0;
  int64_t samples = 0, distinct = 0;
  const auto start = mark = clock::now();
  for (int64_t step = 0; step < o.steps; ++step) {
    const criteo_batch& b = data.at(step);
    lap(read_batch);
    dedup_keys(b.keys.data(), b.keys.size(), keys, inverse);
    lap(dedup);
    rows.resize(keys.size() * dim);
    row_grads.assign(keys.size() * dim, 0.0f);
    table.read(keys.data(), keys.size(), rows.data());
    lap(table_read);
    model.set_parameters(params.data());
    auto stats = model.train_step(b.dense.data(), b.labels.data(), rows.data(),
                                  static_cast<int>(keys.size()),
                                  reinterpret_cast<const int32_t*>(inverse.data()),
                                  static_cast<int>(b.rows()), grads.data(), row_grads.data());
    lap(train);
    table.apply(keys.data(), keys.size(), row_grads.data(), 1.0f);
    lap(table_apply);
    // A W=1 shard applies clock c with the schedule at min_clock = c, divided by 1 live worker.
    auto lr = scheduled_learning_rate(schedule, opt.learning_rate, step, o.steps);
    apply_update(opt, lr, step + 1, params.data(), grads.data(), state.data(), params.size());
    lap(dense_update);
    loss_sum += stats.loss_sum;
    samples += stats.rows;
    distinct += static_cast<int64_t>(keys.size());
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();

  auto split_ms = json_object();
  for (int p = 0; p < pieces; ++p) split_ms.add(piece_names[p], 1e3 * split[p] / double(o.steps));
  std::printf("%s\n", json_object()
                          .add("bench", "dlrm_loop")
                          .add("model", spec.name)
                          .add("train", o.train)
                          .add("batch", o.batch)
                          .add("steps", o.steps)
                          .add("optimizer", to_string(opt.kind))
                          .add("lr", opt.learning_rate)
                          .add("lr_schedule", to_string(schedule))
                          .add("samples", samples)
                          .add("samples_per_s", double(samples) / seconds)
                          .add("step_ms", 1e3 * seconds / double(o.steps))
                          .add("split_ms", split_ms.json())
                          .add("wall_s", seconds)
                          .add("mean_distinct_keys", double(distinct) / double(o.steps))
                          .add("table_rows", table.rows())
                          .add("mean_train_loss", loss_sum / double(samples))
                          .add("loadavg_1m_before", load_before)
                          .add("loadavg_1m_after", load_average())
                          .str()
                          .c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  actorps::rerun_with_better_blas_core(argv);  // before any GEMM: see blas_core.hpp
  options o;
  po::options_description desc("actorps_bench_dlrm_loop flags");
  desc.add_options()
    ("help,h", "print this help")
    ("train", po::value(&o.train)->required(),
     "Criteo TSV (plain or gzip), e.g. gen-data's train.tsv")
    ("model", po::value(&o.model)->default_value(o.model), "dlrm[:DIM[:BOTTOM[:TOP]]]")
    ("batch", po::value(&o.batch)->default_value(o.batch), "minibatch rows per step")
    ("steps", po::value(&o.steps)->default_value(o.steps), "training steps to time")
    ("optimizer", po::value(&o.optimizer)->default_value(o.optimizer),
     "the dense optimizer: sgd | momentum | adam | adagrad")
    ("lr", po::value(&o.lr)->default_value(o.lr), "its learning rate (0: the optimizer's default)")
    ("lr-schedule", po::value(&o.schedule)->default_value(o.schedule),
     "constant | cosine | linear over --steps")
    ("seed", po::value(&o.seed)->default_value(o.seed),
     "seed for the dense parameters and the rows");
  return run_benchmark("actorps_bench_dlrm_loop", argc, argv, desc, [&] {
    shape_of(o.model);
    if (o.batch < 1 || o.steps < 1) throw po::error("--batch and --steps must be positive");
    if (!(o.lr >= 0)) throw po::error("--lr must be 0 or more");
    if (!parse_optimizer_kind(o.optimizer))
      throw po::error("--optimizer must be sgd, momentum, adam or adagrad");
    if (!parse_lr_schedule(o.schedule))
      throw po::error("--lr-schedule must be constant, cosine or linear");
  }, [&] { return run(o); });
}
