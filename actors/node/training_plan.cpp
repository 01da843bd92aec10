#include "actors/node/training_plan.hpp"

#include "actors/node/checkpoint_plan.hpp"
#include "actors/storage/checkpoint_signing.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "actors/ps/log_level.hpp"

#include "actors/chief/metrics.hpp"
#include "actors/chief/tensorboard_writer.hpp"
#include "actors/ps/feature_schema.hpp"
#include "actors/data/load_split.hpp"
#include "actors/ps/model_registry.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "kernels/optimizer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <cstdio>
#include <sstream>
#include <thread>

namespace actorps {

namespace {
constexpr int fashion_mnist_train_rows = 60000;
// Bounds that keep a typo from running away (memory, threads, a diverged model that exits 0);
// each is far beyond any run that makes sense, and a refusal names the flag and the bound.
constexpr int max_tasks_per_role = 1024;   // --ps, --workers: one actor (and thread) each
constexpr int max_batch = 1 << 20;
constexpr double max_epochs = 1e6;
constexpr double max_learning_rate = 100;  // every optimizer here diverges far below it
constexpr double max_timeout_s = 7 * 24 * 3600;
constexpr int64_t max_admission_memory = int64_t(1) << 40;

constexpr int fashion_mnist_classes = 10;

template <class T>
void require(bool ok, const char* flag, const T& value, const std::string& what) {
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

/// Refuses a checkpoint directory that cannot be created or written, before any training: a
/// probe file is created and removed (permission bits alone say nothing to root).
void check_writable(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw usage_error("--checkpoint-dir " + dir + " cannot be created (" + ec.message() + ")");
  auto probe = fs::path(dir) / (".actorps-probe-" + std::to_string(::getpid()));
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) throw usage_error("--checkpoint-dir " + dir + " is not writable (" + std::strerror(errno) + ")");
  std::fclose(f);
  fs::remove(probe, ec);
}

/// Applies the table settings in effect (--table-optimizer, --table-lr, --admit-after, or the
/// model's) to every sparse table of `model`; throws usage_error naming the flag for a bad typed
/// value or a typed table flag on a model without tables.
void set_table_flags(const training_flags& o, const training_settings& settings,
                     model_spec& model) {
  const char* typed = o.given.count("table-optimizer") ? "--table-optimizer"
                      : o.given.count("table-lr")      ? "--table-lr"
                      : o.given.count("admit-after")   ? "--admit-after"
                      : o.given.count("evict-after")   ? "--evict-after"
                      : o.given.count("max-rows-per-shard") ? "--max-rows-per-shard"
                      : o.given.count("admission-memory") ? "--admission-memory"
                                                       : nullptr;
  if (typed && model.sparse_tables.empty())
    throw usage_error(std::string(typed) + ": --model " + o.model + " has no sparse tables");
  const float table_lr = o.table_lr.value_or(0);  // in effect: 0 keeps each table's own
  if (table_lr != 0) {
    require(table_lr > 0, "table-lr", table_lr, "must be a positive learning rate");
    require(table_lr <= max_learning_rate, "table-lr", table_lr,
            "must be at most " + std::to_string(int(max_learning_rate)));
  }
  const int64_t admit_after = o.admit_after.value_or(-1);  // -1 keeps each table's own
  if (admit_after != -1)
    require(admit_after >= 1 && admit_after <= int64_t(UINT32_MAX), "admit-after", admit_after,
            "must be at least 1 (1: a key's first push creates its row)");
  if (o.given.count("evict-after"))
    require(*o.evict_after >= 0 && *o.evict_after <= int64_t(UINT32_MAX), "evict-after",
            *o.evict_after, "must be a number of global clocks (0: rows stay)");
  if (o.given.count("max-rows-per-shard"))
    require(*o.max_rows_per_shard >= 0, "max-rows-per-shard", *o.max_rows_per_shard,
            "must be a number of rows (0: no bound)");
  if (o.given.count("admission-memory"))
    require(*o.admission_memory >= 0 && *o.admission_memory <= max_admission_memory,
            "admission-memory", *o.admission_memory,
            "must be a number of bytes up to 2^40 (0: exact counters)");
  try {
    apply_table_settings(settings, model);
  } catch (const std::invalid_argument& e) {
    // The sketch's own refusals (its size, the admission it needs) name its flag.
    if (o.given.count("admission-memory") && std::strstr(e.what(), "admission_memory"))
      typed = "--admission-memory";
    throw usage_error(std::string(typed ? typed : "--model " + o.model) + ": " + e.what());
  }
}

/// What the typed model-defaulted flags choose (training_flags::given), parsed; throws
/// usage_error naming a flag whose value is none of its choices.
training_choices chosen_by(const training_flags& o) {
  training_choices c;
  auto typed = [&](const char* name) { return o.given.count(name) > 0; };
  const auto opt = o.optimizer.value_or(optimizer_config{});
  if (typed("optimizer")) c.optimizer = opt.kind;
  if (typed("lr")) c.lr = opt.learning_rate;
  if (typed("momentum")) c.momentum = opt.momentum;
  if (typed("batch")) c.batch = *o.batch;
  if (typed("epochs")) c.epochs = *o.epochs;
  if (typed("table-optimizer")) {
    auto kind = parse_row_optimizer_kind(o.table_optimizer);
    require(kind.has_value(), "table-optimizer", o.table_optimizer,
            "must be " + row_optimizer_names());
    c.table_optimizer = *kind;
  }
  if (typed("table-lr")) c.table_lr = *o.table_lr;
  if (typed("admit-after")) c.admit_after = *o.admit_after;
  if (typed("evict-after")) c.evict_after = *o.evict_after;
  if (typed("max-rows-per-shard")) c.max_rows = *o.max_rows_per_shard;
  if (typed("admission-memory")) c.admission_memory = *o.admission_memory;
  return c;
}

/// The flags in effect: each model-defaulted flag that was not typed holds the settings' value
/// (a typed one keeps its value, so that a refusal quotes what was typed); the optimizer,
/// batch, epochs, table_lr and admit_after are set from here on.
training_flags in_effect(const training_flags& typed, const training_settings& settings) {
  auto o = typed;
  const auto& v = settings.values;
  auto untyped = [&](const char* name) { return typed.given.count(name) == 0; };
  auto& opt = o.optimizer ? *o.optimizer : o.optimizer.emplace();
  if (untyped("optimizer")) opt.kind = v.optimizer;
  if (untyped("lr") || opt.learning_rate == 0) opt.learning_rate = v.lr;
  if (untyped("momentum")) opt.momentum = v.momentum;
  if (untyped("batch")) o.batch = v.batch;
  if (untyped("epochs")) o.epochs = v.epochs;
  if (untyped("table-lr")) o.table_lr = v.table_lr;
  if (untyped("admit-after")) o.admit_after = v.admit_after;
  return o;
}

} // namespace
planned_resize parse_resize(const std::string& text) {
  auto bad = [&](const std::string& why) { return usage_error("--resize " + text + ": " + why); };
  const auto at = text.find("@clock=");
  long long clock = -1;
  char tail = 0;
  if (at == std::string::npos
      || std::sscanf(text.c_str() + at, "@clock=%lld%c", &clock, &tail) != 1)
    throw bad("expected ps=N@clock=C, workers=N@clock=C or ps=N,workers=M@clock=C");
  planned_resize out;
  out.at_clock = static_cast<int64_t>(clock);
  std::istringstream sizes(text.substr(0, at));
  for (std::string item; std::getline(sizes, item, ',');) {
    long long n = 0;
    tail = 0;
    const bool ps = std::sscanf(item.c_str(), "ps=%lld%c", &n, &tail) == 1;
    if (!ps && std::sscanf(item.c_str(), "workers=%lld%c", &n, &tail) != 1)
      throw bad("expected ps=N@clock=C, workers=N@clock=C or ps=N,workers=M@clock=C");
    const long long most = ps ? max_shards : max_workers;
    if (n < 1 || n > most)
      throw bad(std::string("the number of ") + (ps ? "shards" : "workers") + " is 1 to "
                + std::to_string(most));
    (ps ? out.shards : out.workers) = static_cast<int32_t>(n);
  }
  if (out.shards == 0 && out.workers == 0)
    throw bad("expected ps=N@clock=C, workers=N@clock=C or ps=N,workers=M@clock=C");
  return out;
}

planned_kill parse_kill(const std::string& text, int workers, int shards, int64_t* crash_at,
                        int64_t* disk_fail_at) {
  auto bad = [&](const std::string& why) {
    return usage_error("--kill " + text + ": " + why);
  };
  long long value = -1;
  char tail = 0;
  if (std::sscanf(text.c_str(), "process@checkpoint=%lld%c", &value, &tail) == 1) {
    if (value < 0) throw bad("the clock must be 0 or more");
    *crash_at = value;
    return {};
  }
  if (std::sscanf(text.c_str(), "disk@checkpoint=%lld%c", &value, &tail) == 1) {
    if (value < 0) throw bad("the clock must be 0 or more");
    if (disk_fail_at) *disk_fail_at = value;
    return {};
  }
  auto at = text.find('@'), colon = text.find(':');
  if (at == std::string::npos || colon == std::string::npos || colon > at)
    throw bad("expected ROLE:INDEX@clock=C, ROLE:INDEX@seconds=T or ps:INDEX@resize=K");
  planned_kill k;
  auto role = text.substr(0, colon);
  if (role == "worker") k.target = planned_kill::role::worker;
  else if (role == "ps") k.target = planned_kill::role::ps;
  else if (role == "evaluator") k.target = planned_kill::role::evaluator;
  else throw bad("ROLE must be worker, ps or evaluator");
  int index = -1;
  if (std::sscanf(text.c_str() + colon + 1, "%d%c", &index, &tail) != 2 || tail != '@')
    throw bad("INDEX must be a number");
  auto when = text.substr(at + 1);
  double seconds = -1;
  if (std::sscanf(when.c_str(), "clock=%lld%c", &value, &tail) == 1 && value >= 0)
    k.at_clock = value;
  else if (std::sscanf(when.c_str(), "seconds=%lf%c", &seconds, &tail) == 1 && seconds >= 0
           && std::isfinite(seconds))
    k.at_seconds = seconds;
  else if (std::sscanf(when.c_str(), "resize=%lld%c", &value, &tail) == 1 && value >= 1
           && value <= 1000000)
    k.at_resize = static_cast<int32_t>(value);
  else
    throw bad("the moment must be clock=C, seconds=T (non-negative) or resize=K (1 or more)");
  int limit = k.target == planned_kill::role::worker ? workers
              : k.target == planned_kill::role::ps   ? shards
                                                     : 1;
  // a shard of a resize is checked against the size that resize leaves (resize_refusal)
  if (index < 0 || (k.at_resize < 0 && index >= limit))
    throw bad("there is no " + role + ":" + std::to_string(index) + " (" + std::to_string(limit)
              + " in this run)");
  k.index = index;
  return k;
}


/// Clocks per worker from --steps, or from --epochs over `train_rows` (each worker's share in
/// whole batches); the checkpoint clocks follow the length.
void set_run_length(const training_flags& o, int64_t train_rows, chief_config& c) {
  c.train_rows = train_rows;
  auto per_epoch = (train_rows / o.workers) / *o.batch;
  // A followed stream ends when it is told to (--stop-file, a signal), or at --steps.
  c.steps = o.steps > 0 ? o.steps
            : o.follow  ? endless_clocks
                        : std::max<int64_t>(1, std::llround(*o.epochs * double(per_epoch)));
  c.spec.total_clocks = c.steps;
  const auto& ck = c.checkpoints;
  c.spec.checkpoint_every = ck.dir.empty() ? 0 : (ck.every > 0 ? ck.every : c.steps);
}

void check_value_bounds(const value_bounds& b) {
  if (auto why = invalid_bound(b.max_gradient); !why.empty())
    throw usage_error("--max-gradient " + why);
  if (auto why = invalid_bound(b.max_parameter); !why.empty())
    throw usage_error("--max-parameter " + why);
  if (!(b.gradient_norm_bound == 0 || (b.gradient_norm_bound >= 1 && std::isfinite(b.gradient_norm_bound))))
    throw usage_error("--gradient-norm-bound " + value_text(b.gradient_norm_bound)
                      + ": must be 0 (no bound) or a finite number of at least 1");
}

void set_slice_field(data_source& d, const std::string& field) {
  try {
    d.slice_field = key_field_index(d, field);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("--slice-auc ") + e.what());
  }
}

int max_scheduler_threads() {
  return 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

checked_flags check_training_flags(const training_flags& typed, const known_data* known) {
  checked_flags v;
  std::unique_ptr<model_plugin> model;
  try {
    model = make_model(typed.model);
  } catch (const model_error& e) {
    throw usage_error(std::string("--model ") + typed.model + ": " + e.what());
  }
  v.model = model->spec();
  v.settings = resolve_training(v.model.name, model->defaults(), chosen_by(typed));
  const auto o = in_effect(typed, v.settings);  // checked from here on
  if (!is_log_level(o.log_level))
    throw usage_error("--log-level " + o.log_level + " is none of error, warn, info, debug");
  require(o.ps >= 1 && o.ps <= max_tasks_per_role, "ps", o.ps,
          "must be 1 to " + std::to_string(max_tasks_per_role));
  require(o.workers >= 1 && o.workers <= max_tasks_per_role, "workers", o.workers,
          "must be 1 to " + std::to_string(max_tasks_per_role));
  require(*o.batch >= 1 && *o.batch <= max_batch, "batch", *o.batch,
          "must be 1 to " + std::to_string(max_batch));
  require(o.staleness >= 0, "staleness", o.staleness, "must be 0 or more");
  require(o.eval_every >= 0, "eval-every", o.eval_every, "must be 0 or more");
  require(o.steps >= 0, "steps", o.steps, "must be 0 or more");
  require(*o.epochs > 0 && *o.epochs <= max_epochs, "epochs", *o.epochs,
          "must be positive and at most " + std::to_string(int(max_epochs)));
  const auto& opt = *o.optimizer;  // in effect: set
  require(opt.learning_rate >= 0 && opt.learning_rate <= max_learning_rate, "lr",
          opt.learning_rate, "must be positive and at most "
                               + std::to_string(int(max_learning_rate))
                               + " (or 0 for the optimizer's default)");
  require(opt.momentum >= 0 && opt.momentum < 1, "momentum", opt.momentum,
          "must be at least 0 and below 1");
  const int threads_bound = max_scheduler_threads();
  require(o.threads >= 0 && o.threads <= threads_bound, "threads", o.threads,
          "must be 0 (one per core) to " + std::to_string(threads_bound)
            + " (4 per core of this host)");
  require(o.block_floats >= 1, "block-floats", o.block_floats, "must be at least 1");
  require(o.prometheus_port >= 0 && o.prometheus_port <= 65535, "prometheus-port",
          o.prometheus_port, "must be a port, 1 to 65535 (0: none)");
  require(o.request_timeout > 0 && o.request_timeout <= max_timeout_s, "request-timeout",
          o.request_timeout, "must be positive and at most " + std::to_string(int(max_timeout_s))
                               + " seconds");
  check_value_bounds(o.bounds);
  set_table_flags(o, v.settings, v.model);
  const auto layers = mlp_layers(v.model);  // synthetic data takes an MLP's input width
  v.mode = o.mode;
  // A bound the mode ignores is a mistake worth saying; the default is fine with every mode.
  if (o.staleness_given && v.mode != consistency::ssp)
    throw usage_error("--staleness " + std::to_string(o.staleness) + " has no effect with --mode "
                      + to_string(o.mode) + ": the bound only applies to --mode ssp");
  v.schedule = schedule_or_default(o.schedule, 1);  // the run's clocks are known
  auto wire = parse_wire_precision(o.wire_precision);
  require(wire.has_value(), "wire-precision", o.wire_precision, "must be fp32 or bf16");
  v.wire = *wire;

  auto backend = parse_backend_kind(o.backend);
  require(backend.has_value(), "backend", o.backend, "must be auto, cpu or cuda");
  v.backend = *backend;
  std::stringstream list(o.gpus);
  for (std::string id; std::getline(list, id, ',');) {
    require(!id.empty() && id.size() < 4 && id.find_first_not_of("0123456789") == std::string::npos,
            "gpus", o.gpus, "must be device ids like 0,1");
    v.gpus.push_back(std::stoi(id));
  }
  require(!v.gpus.empty(), "gpus", o.gpus, "must name at least one device");
  v.slow_ms = parse_slow(o.slow, o.workers);

  auto& d = v.data;
  if (known) {  // the library's data, as a value
    d = known->source;
    v.train_rows = known->train_rows;
  } else if (o.dataset == "fashion-mnist") {
    d.what = data_source::kind::fashion_mnist;
    d.dir = o.data_dir;
    v.train_rows = fashion_mnist_train_rows;  // the package's; open_training_files counts
  } else if (o.dataset == "synthetic") {
    require(o.synthetic_rows > 0 && o.synthetic_rows < (1 << 30), "synthetic-rows",
            o.synthetic_rows, "must be positive");
    require(o.synthetic_test_rows > 0 && o.synthetic_test_rows < (1 << 30),
            "synthetic-test-rows", o.synthetic_test_rows, "must be positive");
    d.what = data_source::kind::synthetic;
    d.train_rows = static_cast<int>(o.synthetic_rows);
    d.test_rows = static_cast<int>(o.synthetic_test_rows);
    d.seed = o.seed;
    d.cols = layers ? layers->front() : d.cols;
    v.train_rows = o.synthetic_rows;
  } else if (o.dataset.rfind("tsv:", 0) == 0
             || (o.dataset.rfind("csv:", 0) == 0 && !o.schema.empty())) {
    d.what = data_source::kind::logs;
    d.delimiter = o.dataset[0] == 't' ? '\t' : ',';
    d.train_path = o.dataset.substr(4);
    d.test_path = o.test;
    d.schema_path = o.schema;
    require(!d.train_path.empty(), "dataset", o.dataset, "must name a file: tsv:PATH");
    if (o.schema.empty()) throw usage_error("--dataset " + o.dataset + " needs --schema FILE");
    if (d.test_path.empty()) throw usage_error("--dataset " + o.dataset + " needs --test PATH");
  } else if (o.dataset.rfind("csv:", 0) == 0) {
    d.what = data_source::kind::csv;
    d.train_path = o.dataset.substr(4);
    d.test_path = o.test;
    require(!d.train_path.empty(), "dataset", o.dataset, "must name a file: csv:PATH");
    if (d.test_path.empty()) throw usage_error("--dataset csv:PATH needs --test PATH");
  } else if (o.dataset.rfind("libsvm:", 0) == 0) {
    d.what = data_source::kind::libsvm;
    d.train_path = o.dataset.substr(7);
    d.test_path = o.test;
    require(!d.train_path.empty(), "dataset", o.dataset, "must name a file: libsvm:PATH");
    if (d.test_path.empty()) throw usage_error("--dataset libsvm:PATH needs --test PATH");
  } else if (o.dataset.rfind("criteo:", 0) == 0) {
    d.what = data_source::kind::criteo;
    d.train_path = o.dataset.substr(7);
    d.test_path = o.test;
    require(!d.train_path.empty(), "dataset", o.dataset, "must name a file: criteo:PATH");
    if (d.test_path.empty()) throw usage_error("--dataset criteo:PATH needs --test PATH");
  } else {
    throw usage_error("--dataset must be fashion-mnist, synthetic, csv:PATH, libsvm:PATH or "
                      "criteo:PATH, or tsv:PATH with --schema (got " + o.dataset + ")");
  }
  if (!o.schema.empty() && d.what != data_source::kind::logs)
    throw usage_error("--schema " + o.schema + " needs --dataset tsv:PATH or csv:PATH");
  std::optional<feature_schema> schema;
  if (d.what == data_source::kind::logs) {
    try {
      schema = load_feature_schema(o.schema);
    } catch (const schema_error& e) {
      throw usage_error(std::string("--schema: ") + e.what());
    }
  }
  if (!o.gauc_group.empty() && schema) {
    d.group_field = schema->field(o.gauc_group);
    if (d.group_field < 0)
      throw usage_error("--gauc-group " + o.gauc_group + " is no key field of " + o.schema);
  } else if (!o.gauc_group.empty()) {
    if (d.what != data_source::kind::criteo)
      throw usage_error("--gauc-group " + o.gauc_group + " needs --dataset criteo:PATH");
    const auto& g = o.gauc_group;
    const bool field = g.size() >= 2 && g.size() <= 3 && (g[0] == 'C' || g[0] == 'c')
                       && g.find_first_not_of("0123456789", 1) == std::string::npos;
    const int k = field ? std::stoi(g.substr(1)) : 0;
    require(k >= 1 && k <= criteo_categorical_fields, "gauc-group", g,
            "must be a categorical field of the Criteo layout, C1..C26");
    d.group_field = k - 1;
  }
  if (!o.slice_auc.empty()) set_slice_field(d, o.slice_auc);
  if (o.follow) {
    if (!read_in_parts(d.what))
      throw usage_error("--follow needs --dataset csv:DIR, libsvm:DIR or criteo:DIR (a directory "
                        "read as one stream), not " + o.dataset);
    if (typed.given.count("epochs"))
      throw usage_error("--follow reads the stream once, up to its stop: --epochs has no meaning "
                        "with it (--steps N ends it at clock N at the latest)");
    d.follow = true;
  }
  if (!o.stop_file.empty() && !o.follow) throw usage_error("--stop-file needs --follow");
  const bool files = d.what == data_source::kind::csv || streamed(d.what);
  if (!o.test.empty() && !files)
    throw usage_error("--test " + o.test + " only applies to --dataset csv:PATH, libsvm:PATH or "
                      "criteo:PATH");
  if (auto why = model->check_source(d.what); !why.empty())
    throw usage_error("--model " + o.model + " does not fit --dataset " + o.dataset + ": " + why);
  if (schema) {
    if (auto shaped = model->for_schema(*schema)) {  // the schema's widths in the spec's shapes
      model = std::move(shaped);
      const auto spec = model->spec();
      v.model.name = spec.name;
      v.model.tensors = spec.tensors;
      // refused now rather than after the run: versions while training carry no schema
      if (o.export_every > 0)
        throw usage_error("--export-every: versions while training serve Criteo's layout; "
                          + v.model.name + " reads what " + o.schema + " gives (--export-dir "
                          "alone exports it after the run)");
    }
    if (auto why = model->check_schema(*schema); !why.empty())
      throw usage_error("--model " + o.model + " does not fit --schema " + o.schema + ": " + why);
  }
  if (known && known->train_rows > 0) {  // loaded: the splits' own shape
    if (auto why = model->check_data(known->cols, known->classes); !why.empty())
      throw usage_error("--model " + o.model + " does not fit --dataset " + o.dataset + ": " + why);
    require(v.train_rows / o.workers >= *o.batch, "batch", *o.batch,
            "is larger than a worker's shard of the training set");
  } else if (!known && d.what != data_source::kind::csv) {  // a CSV's shape: once it is read
    // Streamed rows (libsvm, criteo) have no fixed width and are binary, as the readers say.
    const bool sparse = streamed(d.what);
    const int cols = sparse ? 0 : d.what == data_source::kind::fashion_mnist ? 784 : d.cols;
    if (auto why = model->check_data(cols, sparse ? 2 : fashion_mnist_classes); !why.empty())
      throw usage_error("--model " + o.model + " does not fit --dataset " + o.dataset + ": " + why);
    if (!sparse)  // streamed rows are counted by open_training_files
      require(v.train_rows / o.workers >= *o.batch, "batch", *o.batch,
              "is larger than a worker's shard of the training set");
  }

  require(o.keep >= 1, "keep", o.keep, "must be at least 1");
  require(o.full_checkpoint_every >= 1, "full-checkpoint-every", o.full_checkpoint_every,
          "must be at least 1");
  require(o.checkpoint_every >= 0, "checkpoint-every", o.checkpoint_every, "must be 0 or more");
  require(o.max_replacements >= 0, "max-replacements", o.max_replacements, "must be 0 or more");
  require(o.replicas == 0 || o.replicas == 1, "replicas", o.replicas, "must be 0 or 1");
  if (o.checkpoint_every > 0 && o.checkpoint_dir.empty())
    throw usage_error("--checkpoint-every needs --checkpoint-dir");
  // the library's 0 is none; the command's --export-every 0 a mistake
  require(o.export_every >= (typed.given.count("export-every") ? 1 : 0), "export-every",
          o.export_every, "must be at least 1");
  require(o.full_export_every >= 1, "full-export-every", o.full_export_every,
          "must be at least 1");
  if (o.export_every > 0 && o.export_dir.empty())
    throw usage_error("--export-every needs --export-dir");
  for (const auto& r : o.resize) v.resizes.push_back(parse_resize(r));
  for (const auto& r : o.resizes)
    v.resizes.push_back(parse_resize(to_string(planned_resize{r.ps, r.at_clock, r.workers})));
  // A shard a planned growth adds may be killed at a clock too (before the change: while the
  // rows are copied ahead to it; a kill finding none says so).
  int shards = o.ps;
  for (const auto& r : v.resizes) shards = std::max(shards, r.shards);
  for (const auto& kills : o.kill) {  // repeatable, and each may list several: a,b,c
    std::stringstream items(kills);
    for (std::string k; std::getline(items, k, ',');) {
      auto kill = parse_kill(k, o.workers, shards, &v.crash_at, &v.disk_fail_at);
      if (k.rfind("process@", 0) != 0 && k.rfind("disk@", 0) != 0) v.kills.push_back(kill);
    }
  }
  for (const auto& k : o.kills)  // the library's, as values: checked as typed ones are
    v.kills.push_back(parse_kill(k.role + ":" + std::to_string(k.index) + "@clock="
                                   + std::to_string(k.at_clock),
                                 o.workers, shards, &v.crash_at, &v.disk_fail_at));
  if (v.crash_at >= 0 && o.checkpoint_dir.empty())
    throw usage_error("--kill process@checkpoint needs --checkpoint-dir");
  if (v.disk_fail_at >= 0 && o.checkpoint_dir.empty())
    throw usage_error("--kill disk@checkpoint needs --checkpoint-dir");
  if (o.resume_given && o.resume == "auto" && o.checkpoint_dir.empty())
    throw usage_error("--resume auto needs --checkpoint-dir");
  if (o.overwrite_checkpoints && o.checkpoint_dir.empty())
    throw usage_error("--overwrite-checkpoints needs --checkpoint-dir");
  require(o.writer == "shards" || o.writer == "chief", "checkpoint-writer",
          o.writer, "must be shards or chief");
  require(o.copy_ahead == "auto" || o.copy_ahead == "always" || o.copy_ahead == "never",
          "copy-ahead", o.copy_ahead, "must be auto, always or never");
  return v;
}

training_plan build_training_plan(const training_flags& typed, const checked_flags& v) {
  const auto o = in_effect(typed, v.settings);
  training_plan plan;
  auto& c = plan.chief;
  c.settings = v.settings;
  c.backend = v.backend;
  c.gpus = v.gpus;
  c.spec.model = v.model;
  c.spec.block_floats = o.block_floats;
  c.spec.shards = o.ps;
  c.spec.workers = o.workers;
  c.spec.mode = v.mode;
  c.spec.staleness = o.staleness;
  // beta1, beta2, epsilon (and momentum with another optimizer) have no flag: the library's
  c.spec.optimizer = dense_optimizer(v.settings, *o.optimizer);
  c.spec.schedule = v.schedule;
  c.spec.wire = v.wire;
  c.spec.seed = o.seed;
  c.batch = *o.batch;
  c.eval_every = o.eval_every;
  c.stop_file = o.stop_file;
  c.slow_ms = v.slow_ms;
  c.progress = o.progress;
  c.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout * 1000));
  plan.scheduler_threads = o.threads;
  plan.export_dir = o.export_dir;
  plan.export_every = o.export_every;
  plan.full_export_every = o.full_export_every;
  plan.prometheus_port = static_cast<uint16_t>(o.prometheus_port);

  plan.data = v.data;
  set_run_length(o, v.train_rows, c);
  c.max_replacements = o.max_replacements;
  c.replicas = o.replicas;
  c.bounds = o.bounds;
  auto& ck = c.checkpoints;
  ck.dir = o.checkpoint_dir;
  ck.every = o.checkpoint_every;
  ck.keep = o.keep;
  ck.full_every = o.full_checkpoint_every;
  ck.crash_at = v.crash_at;
  ck.fail_at = v.disk_fail_at;
  ck.writer = o.writer == "chief" ? checkpoint_writer::chief : checkpoint_writer::shards;
  set_run_length(o, v.train_rows, c);  // again: the checkpoint clocks follow --checkpoint-dir
  c.kills = v.kills;
  c.resizes = v.resizes;  // checked once the run's length is known (open_training_files)
  c.copy_ahead = o.copy_ahead == "always" ? copy_ahead_policy::always
                 : o.copy_ahead == "never" ? copy_ahead_policy::never
                                           : copy_ahead_policy::automatic;
  return plan;
}

/// --follow's directory and --stop-file's place, on disk.
void check_followed(const data_source& d, const training_flags& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(d.train_path, ec))
    throw usage_error("--follow needs a directory of files, and --dataset " + o.dataset
                      + " is not one");
  if (o.stop_file.empty()) return;
  const fs::path stop(o.stop_file);
  const auto parent = stop.parent_path().empty() ? fs::path(".") : stop.parent_path();
  if (!fs::is_directory(parent, ec))
    throw usage_error("--stop-file " + o.stop_file + ": its directory " + parent.string()
                      + " does not exist");
  const auto name = stop.filename().string();
  if (fs::equivalent(parent, d.train_path, ec) && !name.empty() && name[0] != '.')
    throw usage_error("--stop-file " + o.stop_file + " lies in the followed directory, where it "
                      "would be read as data (name it .NAME there, or put it elsewhere)");
}

void open_training_files(const training_flags& typed, training_plan& plan,
                         const known_data* known) {
  const auto o = in_effect(typed, plan.chief.settings);
  if (!known) set_log_level(o.log_level);  // checked by check_training_flags
  auto& c = plan.chief;
  auto& d = plan.data;
  if (known) {
    if (d.follow) check_followed(d, o);
    if (known->train_rows > 0) set_run_length(o, known->train_rows, c);
  } else if (d.what == data_source::kind::csv) {  // counted, never loaded: workers stream their parts
    if (d.follow) check_followed(d, o);
    // Its shape and classes are in the files: one pass counts them (kept for simulate).
    plan.train_split = std::make_shared<dataset>(
      count_csv_training(d.train_path, o.workers, &c.checkpoints.files));
    const auto& train = *plan.train_split;
    if (auto why = make_model(o.model)->check_data(train.cols, train.classes); !why.empty())
      throw usage_error("--model " + o.model + " does not fit --dataset " + o.dataset + ": " + why);
    if (!d.follow)  // a followed stream's batches may come later
      require(train.rows / o.workers >= *o.batch, "batch", *o.batch,
              "is larger than a worker's shard of the training set");
    set_run_length(o, train.rows, c);
  } else if (streamed(d.what)) {  // counted, never loaded: workers stream
    if (d.follow) check_followed(d, o);
    auto rows = training_rows(d, o.workers, &c.checkpoints.files);
    if (!d.follow)  // a followed stream's batches may come later
      require(rows / o.workers >= *o.batch, "batch", *o.batch,
              "is larger than a worker's shard of the training set");
    set_run_length(o, rows, c);
  } else if (d.what == data_source::kind::fashion_mnist && std::filesystem::is_directory(d.dir)) {
    // The rows really there (a smaller IDX file trains one pass per epoch too); a chief whose
    // host lacks the files (its workers have them) keeps the Debian package's 60 000.
    auto rows = training_rows(d);
    require(rows / o.workers >= *o.batch, "batch", *o.batch,
            "is larger than a worker's shard of the training set");
    set_run_length(o, rows, c);
  }
  auto planned = c;  // as the chief will be: with its export versions (set from the plan later)
  planned.exports.every = plan.export_every;
  if (auto why = resize_refusal(planned); !why.empty()) throw usage_error("--resize: " + why);
  try {
    // A resumed run (--resume, also --resume auto's first start) adds to the file: restarts
    // under an orchestrator leave one history, each life from its "start" event on.
    c.metrics = std::make_shared<metrics_file>(o.metrics, o.resume_given);
  } catch (const std::exception& e) {
    throw usage_error(std::string("--metrics: ") + e.what());
  }
  if (!o.tensorboard_dir.empty()) {
    try {
      c.metrics->add_observer(std::make_shared<tensorboard_writer>(o.tensorboard_dir));
    } catch (const std::exception& e) {
      throw usage_error(std::string("--tensorboard: ") + e.what());
    }
  }
  auto& ck = c.checkpoints;
  if (!ck.dir.empty()) check_writable(ck.dir);
  if (!o.checkpoint_key.empty()) {
    try {
      ck.key = read_checkpoint_key(o.checkpoint_key);
    } catch (const checkpoint_error& e) {
      throw usage_error(std::string("--checkpoint-key ") + e.what());
    }
  }
  plan_checkpoints(o, plan);
}

training_plan plan_training(const training_flags& flags) {
  auto plan = build_training_plan(flags, check_training_flags(flags));
  open_training_files(flags, plan);
  return plan;
}

namespace {

/// --dataset's text for a source (what a refusal quotes).
std::string dataset_text(const data_source& d) {
  switch (d.what) {
    case data_source::kind::fashion_mnist: return "fashion-mnist";
    case data_source::kind::synthetic: return "synthetic";
    case data_source::kind::csv: return "csv:" + d.train_path;
    case data_source::kind::libsvm: return "libsvm:" + d.train_path;
    case data_source::kind::criteo: return "criteo:" + d.train_path;
    case data_source::kind::logs: return (d.delimiter == ',' ? "csv:" : "tsv:") + d.train_path;
  }
  return "unknown";
}

} // namespace

training_flags flags_of(const train_options& o) {
  training_flags f;
  static_cast<train_options&>(f) = o;  // the same fields, whole
  // What the command spells as text, for the refusals that quote it (the planner reads the
  // data from `source` when it is given as a value: check_training_flags' `known`).
  const auto& d = o.source;
  f.dataset = dataset_text(d);
  f.data_dir = d.dir;
  f.synthetic_rows = d.train_rows;
  f.synthetic_test_rows = d.test_rows;
  f.test = d.test_path;
  if (d.what == data_source::kind::logs) f.schema = d.schema_path;
  f.follow = d.follow;
  f.backend = "cpu";  // the library's workers train on the CPU
  f.resume_given = !o.resume.empty();
  // What counts as typed: a field set (the staleness not: sync and async ignore it here), and
  // -1 in the table fields is each table's own, as not typed.
  auto typed = [&](const char* flag) { f.given.insert(flag); };
  if (o.optimizer) {
    typed("optimizer");
    if (o.optimizer->learning_rate != 0) typed("lr");
    if (optimizer_hyper_parameters(o.optimizer->kind) & hyper_momentum) typed("momentum");
  }
  if (o.batch) typed("batch");
  if (o.epochs) typed("epochs");
  if (o.table_lr) typed("table-lr");
  if (o.admit_after.value_or(-1) != -1) typed("admit-after");
  if (o.evict_after.value_or(-1) != -1) typed("evict-after");
  if (o.max_rows_per_shard.value_or(-1) != -1) typed("max-rows-per-shard");
  if (o.admission_memory.value_or(-1) != -1) typed("admission-memory");
  return f;
}

training_plan plan_library_run(const train_options& o, const known_data& data) {
  const auto flags = flags_of(o);
  auto plan = build_training_plan(flags, check_training_flags(flags, &data));
  auto& c = plan.chief;
  c.checkpoints.dataset = data.identity;
  open_training_files(flags, plan, &data);
  return plan;
}

} // namespace actorps
