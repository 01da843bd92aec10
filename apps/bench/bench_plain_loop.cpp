// actorps_bench_loop: the no-actor baseline for `actorps simulate --workers 1`.
//
// One thread runs exactly the arithmetic that one worker + its shards do per clock —
// set_parameters, fill_batch, train_step, then the momentum update with the shards' cosine
// schedule on the flat parameters — with no messages, no encoding and no copies between roles.
// samples_per_s of a W=1 simulation divided by this figure is the runtime's overhead ratio.
// Only the training loop is timed; loading the data and building the model are not.
#include "actors/ps/dataset.hpp"
#include "actors/chief/metrics.hpp"
#include "actors/protocol/model_spec.hpp"
#include "kernels/denormals.hpp"
#include "actors/ps/lr_schedule.hpp"
#include "kernels/mlp.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/parameter_init.hpp"

#include "apps/bench/bench_main.hpp"
#include "kernels/blas_core.hpp"

#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;

namespace {

struct options {
  std::string model = "784-256-128-10", data_dir = default_fashion_mnist_dir;
  int batch = 64;
  int64_t steps = 2000;
  uint64_t seed = 1;
};

int run(const options& o) {
  auto layers = parse_layers(o.model);
  if (!layers || layers->front() != 784 || layers->back() != 10) {
    std::fprintf(stderr, "actorps_bench_loop: --model must be 784-...-10 (got %s)\n",
                 o.model.c_str());
    return 2;
  }
  if (o.batch < 1 || o.steps < 1) {
    std::fprintf(stderr, "actorps_bench_loop: --batch and --steps must be positive\n");
    return 2;
  }
  flush_denormals_to_zero();
  auto data = std::make_shared<const dataset>(load_fashion_mnist(o.data_dir, true));
  data_shard shard(data, 0, 1, o.batch, o.seed);
  auto be = make_cpu_backend();
  mlp model(*be, *layers, o.batch);

  optimizer_config opt;  // momentum, lr 0.05, 0.9: the simulate defaults
  auto params = initial_parameters(*layers, o.seed);
  std::vector<float> grads(params.size()), state(optimizer_state_slots(opt.kind) * params.size());
  std::vector<float> x(std::size_t(o.batch) * data->cols);
  std::vector<int32_t> y(o.batch);

  double loss_sum = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < o.steps; ++step) {
    model.set_parameters(params.data());
    shard.fill_batch(step, x.data(), y.data());
    loss_sum += model.train_step(x.data(), y.data(), o.batch, grads.data()).loss_sum;
    // A W=1 shard applies clock c with the schedule at min_clock = c, divided by 1 live worker.
    auto lr = scheduled_learning_rate(lr_schedule::cosine, opt.learning_rate, step, o.steps);
    apply_update(opt, lr, step + 1, params.data(), grads.data(), state.data(), params.size());
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  auto samples = double(o.steps) * o.batch;
  nlohmann::ordered_json result{{"bench", "plain_loop"},
                                {"model", o.model},
                                {"batch", o.batch},
                                {"steps", o.steps},
                                {"samples_per_s", samples / seconds},
                                {"step_ms", 1e3 * seconds / double(o.steps)},
                                {"wall_s", seconds},
                                {"mean_train_loss", loss_sum / samples}};
  std::printf("%s\n", render_json(result).c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  actorps::rerun_with_better_blas_core(argv);  // before any GEMM: see blas_core.hpp
  options o;
  po::options_description desc("actorps_bench_loop flags");
  desc.add_options()
    ("help,h", "print this help")
    ("model", po::value(&o.model)->default_value(o.model), "MLP layer widths, 784 inputs, 10 outputs")
    ("batch", po::value(&o.batch)->default_value(o.batch), "minibatch rows per step")
    ("steps", po::value(&o.steps)->default_value(o.steps), "training steps to time")
    ("seed", po::value(&o.seed)->default_value(o.seed), "seed for parameters and data order")
    ("data-dir", po::value(&o.data_dir)->default_value(o.data_dir), "Fashion-MNIST directory");
  return run_benchmark("actorps_bench_loop", argc, argv, desc, [] {}, [&] { return run(o); });
}
