#include "apps/training_flags.hpp"

#include "actors/metrics.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace po = boost::program_options;

namespace actorps {

namespace {

constexpr int fashion_mnist_train_rows = 60000;
constexpr int fashion_mnist_classes = 10;

template <class T>
void require(bool ok, const char* flag, const T& value, const char* what) {
  if (ok) return;
  std::ostringstream out;
  out << "--" << flag << " " << what << " (got " << value << ")";
  throw usage_error(out.str());
}

std::vector<int> parse_slow(const std::vector<std::string>& specs, int workers) {
  std::vector<int> slow(workers, 0);
  for (const auto& s : specs) {
    int index = -1, ms = -1;
    char tail = 0;
    if (std::sscanf(s.c_str(), "worker:%d=%d%c", &index, &ms, &tail) != 2 || ms < 0)
      throw usage_error("--slow expects worker:I=MS (got " + s + ")");
    require(index >= 0 && index < workers, "slow", s, "names a worker outside --workers");
    slow[index] = ms;
  }
  return slow;
}

float default_learning_rate(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd: return 0.1f;
    case optimizer_kind::momentum: return 0.05f;
    case optimizer_kind::adam: return 0.001f;
    case optimizer_kind::adagrad: return 0.05f;
  }
  return 0.05f;
}

} // namespace

void add_training_options(po::options_description& desc, training_flags& o) {
  desc.add_options()
    ("ps", po::value(&o.ps)->default_value(o.ps), "number of parameter shards")
    ("workers", po::value(&o.workers)->default_value(o.workers), "number of workers")
    ("model", po::value(&o.model)->default_value(o.model),
     "MLP layer widths, input first (the input must match the data: 784 for fashion-mnist)")
    ("dataset", po::value(&o.dataset)->default_value(o.dataset),
     "fashion-mnist | synthetic (a seeded 10-class problem that trains in seconds)")
    ("data-dir", po::value(&o.data_dir)->default_value(o.data_dir),
     "directory holding the Fashion-MNIST IDX files (Debian's dataset-fashion-mnist)")
    ("synthetic-rows", po::value(&o.synthetic_rows)->default_value(o.synthetic_rows),
     "training rows of the synthetic dataset")
    ("synthetic-test-rows", po::value(&o.synthetic_test_rows)->default_value(o.synthetic_test_rows),
     "test rows of the synthetic dataset")
    ("epochs", po::value(&o.epochs)->default_value(o.epochs),
     "passes over the training set (each worker runs its shard this many times)")
    ("steps", po::value(&o.steps)->default_value(o.steps),
     "clocks per worker; overrides --epochs when > 0")
    ("batch", po::value(&o.batch)->default_value(o.batch), "minibatch rows per worker and clock")
    ("optimizer", po::value(&o.optimizer)->default_value(o.optimizer),
     "sgd | momentum | adam | adagrad (applied by the shards)")
    ("lr", po::value(&o.lr)->default_value(o.lr),
     "learning rate; 0 picks the optimizer's default (sgd 0.1, momentum 0.05, adam 0.001, "
     "adagrad 0.05). ssp/async apply each push with lr / workers")
    ("lr-schedule", po::value(&o.lr_schedule)->default_value(o.lr_schedule),
     "constant | cosine | linear: decay from --lr to 5 % of it over the run, evaluated at the "
     "shards from the global clock")
    ("momentum", po::value(&o.momentum)->default_value(o.momentum), "momentum coefficient")
    ("mode", po::value(&o.mode)->default_value(o.mode),
     "consistency: sync (average all workers, apply once per clock) | ssp (stale-synchronous, "
     "bounded by --staleness) | async")
    ("staleness", po::value(&o.staleness)->default_value(o.staleness),
     "ssp bound S: a worker at clock c gets parameters once every live worker finished c - S")
    ("block-floats", po::value(&o.block_floats)->default_value(o.block_floats),
     "tensors are cut into blocks of at most this many floats, balanced over the shards")
    ("eval-every", po::value(&o.eval_every)->default_value(o.eval_every),
     "evaluate on the test set every N global clocks (0: only at the end)")
    ("metrics", po::value(&o.metrics), "write one JSON object per event to this file (JSONL)")
    ("seed", po::value(&o.seed)->default_value(o.seed), "seed for parameters, data order, synthetic data")
    ("threads", po::value(&o.threads)->default_value(o.threads),
     "CAF scheduler threads (0: one per core); workers and the evaluator have their own")
    ("slow", po::value(&o.slow)->composing(),
     "worker:I=MS adds MS milliseconds to every step of worker I (repeatable): a straggler")
    ("request-timeout", po::value(&o.request_timeout)->default_value(o.request_timeout),
     "seconds any request between actors may take before it fails")
    ("no-progress", po::bool_switch(&o.no_progress), "do not draw the progress line")
    ("backend", po::value(&o.backend)->default_value(o.backend),
     "auto | cpu | cuda: where workers run forward/backward (auto: CUDA when a usable GPU "
     "exists, else the CPU)")
    ("gpus", po::value(&o.gpus)->default_value(o.gpus),
     "comma-separated CUDA device ids; workers are assigned round-robin")
    ("export-dir", po::value(&o.export_dir),
     "after a successful run, export the model to DIR/<version>/ (model.capnp, model.onnx, "
     "metadata.json; version = the largest existing + 1, never overwritten)");
}


training_plan plan_training(const training_flags& o) {
  require(o.ps >= 1, "ps", o.ps, "must be at least 1");
  require(o.workers >= 1, "workers", o.workers, "must be at least 1");
  require(o.batch >= 1, "batch", o.batch, "must be at least 1");
  require(o.staleness >= 0, "staleness", o.staleness, "must be 0 or more");
  require(o.eval_every >= 0, "eval-every", o.eval_every, "must be 0 or more");
  require(o.steps >= 0, "steps", o.steps, "must be 0 or more");
  require(o.epochs > 0 && std::isfinite(o.epochs), "epochs", o.epochs, "must be positive");
  require(o.lr >= 0 && std::isfinite(o.lr), "lr", o.lr, "must be positive (or 0 for the default)");
  require(o.threads >= 0, "threads", o.threads, "must be 0 or more");
  require(o.block_floats >= 1, "block-floats", o.block_floats, "must be at least 1");
  require(o.request_timeout > 0, "request-timeout", o.request_timeout, "must be positive");
  auto layers = parse_layers(o.model);
  require(layers.has_value(), "model", o.model,
          "must be at least two positive widths joined by '-', e.g. 784-256-128-10");
  auto mode = parse_consistency(o.mode);
  require(mode.has_value(), "mode", o.mode, "must be sync, ssp or async");
  auto schedule = parse_lr_schedule(o.lr_schedule);
  require(schedule.has_value(), "lr-schedule", o.lr_schedule, "must be constant, cosine or linear");
  auto opt = parse_optimizer_kind(o.optimizer);
  require(opt.has_value(), "optimizer", o.optimizer, "must be sgd, momentum, adam or adagrad");

  auto backend = parse_backend_kind(o.backend);
  require(backend.has_value(), "backend", o.backend, "must be auto, cpu or cuda");
  std::vector<int> gpus;
  {
    std::stringstream list(o.gpus);
    for (std::string id; std::getline(list, id, ',');) {
      require(!id.empty() && id.size() < 4 && id.find_first_not_of("0123456789") == std::string::npos,
              "gpus", o.gpus, "must be device ids like 0,1");
      gpus.push_back(std::stoi(id));
    }
    require(!gpus.empty(), "gpus", o.gpus, "must name at least one device");
  }

  training_plan plan;
  auto& c = plan.chief;
  c.backend = *backend;
  c.gpus = gpus;
  c.spec.layers = *layers;
  c.spec.block_floats = o.block_floats;
  c.spec.shards = o.ps;
  c.spec.workers = o.workers;
  c.spec.mode = *mode;
  c.spec.staleness = o.staleness;
  c.spec.optimizer.kind = *opt;
  c.spec.optimizer.learning_rate = o.lr > 0 ? float(o.lr) : default_learning_rate(*opt);
  c.spec.optimizer.momentum = float(o.momentum);
  c.spec.schedule = *schedule;
  c.spec.seed = o.seed;
  c.batch = o.batch;
  c.eval_every = o.eval_every;
  c.slow_ms = parse_slow(o.slow, o.workers);
  try {
    c.metrics = std::make_shared<metrics_file>(o.metrics);
  } catch (const std::exception& e) {
    throw usage_error(std::string("--metrics: ") + e.what());
  }
  c.progress = !o.no_progress;
  c.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout * 1000));
  plan.scheduler_threads = o.threads;
  plan.export_dir = o.export_dir;

  auto& d = plan.data;
  if (o.dataset == "fashion-mnist") {
    require(layers->front() == 784, "model", o.model, "must take 784 inputs for fashion-mnist");
    d.what = data_source::kind::fashion_mnist;
    d.dir = o.data_dir;
    c.train_rows = fashion_mnist_train_rows;
  } else if (o.dataset == "synthetic") {
    require(o.synthetic_rows > 0 && o.synthetic_rows < (1 << 30), "synthetic-rows",
            o.synthetic_rows, "must be positive");
    require(o.synthetic_test_rows > 0 && o.synthetic_test_rows < (1 << 30),
            "synthetic-test-rows", o.synthetic_test_rows, "must be positive");
    d.what = data_source::kind::synthetic;
    d.train_rows = static_cast<int>(o.synthetic_rows);
    d.test_rows = static_cast<int>(o.synthetic_test_rows);
    d.seed = o.seed;
    d.cols = layers->front();
    c.train_rows = d.train_rows;
  } else {
    throw usage_error("--dataset must be fashion-mnist or synthetic (got " + o.dataset + ")");
  }
  require(layers->back() == fashion_mnist_classes, "model", o.model,
          "must end in one output per class (10)");
  auto shard_rows = c.train_rows / o.workers;
  require(shard_rows >= o.batch, "batch", o.batch,
          "is larger than a worker's shard of the training set");
  auto per_epoch = shard_rows / o.batch;
  c.steps = o.steps > 0 ? o.steps
                        : std::max<int64_t>(1, std::llround(o.epochs * double(per_epoch)));
  c.spec.total_clocks = c.steps;
  return plan;
}

void print_summary(const run_summary& s) {
  std::printf("summary: mode %s (staleness bound %d), %d workers, %d shards, backend %s\n"
              "  %lld clocks, %lld samples in %.2f s = %.0f samples/s\n"
              "  final test accuracy %.4f, test loss %.4f, max staleness %lld, "
              "dropped messages %llu\n",
              s.mode.c_str(), s.staleness_bound, s.workers, s.shards, s.backend.c_str(),
              static_cast<long long>(s.clocks), static_cast<long long>(s.samples), s.wall_s,
              s.samples_per_s, s.final_test_accuracy, s.final_test_loss,
              static_cast<long long>(s.max_staleness),
              static_cast<unsigned long long>(s.dropped_messages));
}

} // namespace actorps
