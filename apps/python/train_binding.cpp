// actorps.train: the runtime owns the loop (actors/ps.hpp train()) with a model plug-in written
// in Python. The workers and the evaluator are detached actors on threads of their own: each
// takes the GIL only inside its callback, and train() releases it while the run goes, so the
// runtime keeps owning consistency, checkpoints and resume, the evaluator hook, metrics JSONL
// and the progress line.
//
// The Python object is registered as a model plug-in under its spec's name for the run (every
// role resolves its model by that name) and unregistered when the run ends. A model named by a
// string is a built-in plug-in (or one registered in C++) training on files, as `actorps
// simulate --model NAME --dataset KIND:PATH --test PATH`.
#include "actors/ps.hpp"
#include "apps/python/binding.hpp"
#include "apps/python/choices.hpp"
#include "apps/python/errors.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

namespace actorps::python {

namespace {

/// The Python model of a run, shared by the plug-in, the trainers and the evaluation: the
/// last of them to let go drops the Python object, taking the GIL to do so. The first
/// exception a callback raised is kept for train() to raise when the run ends.
struct python_model {
  py::object model;
  model_spec spec;
  std::mutex mutex;
  std::optional<std::string> first_error;

  void note_error(const std::string& where, const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!first_error) first_error = where + ": " + what;
  }
};

std::shared_ptr<python_model> share(py::object model, model_spec spec) {
  return std::shared_ptr<python_model>(new python_model{std::move(model), std::move(spec), {}, {}},
                                       [](python_model* m) {
                                         py::gil_scoped_acquire gil;
                                         delete m;
                                       });
}

/// A NumPy view of `count` floats at `data` (no copy), read-only unless `writable`. Valid
/// only during the callback it is passed to.
py::array floats_view(const float* data, std::size_t count, bool writable) {
  py::array_t<float> a({count}, {sizeof(float)}, data, py::none());
  if (!writable) a.attr("setflags")(py::arg("write") = false);
  return std::move(a);
}

py::array matrix_view(const float* data, std::size_t rows, std::size_t cols) {
  py::array_t<float> a({rows, cols}, {cols * sizeof(float), sizeof(float)}, data, py::none());
  a.attr("setflags")(py::arg("write") = false);
  return std::move(a);
}

py::array labels_view(const int32_t* data, std::size_t count) {
  py::array_t<int32_t> a({count}, {sizeof(int32_t)}, data, py::none());
  a.attr("setflags")(py::arg("write") = false);
  return std::move(a);
}

/// Runs `call` with the GIL held; a Python exception is noted on the model and thrown as
/// std::runtime_error (the runtime then treats the role as failed).
template <class Call>
auto with_gil(python_model& m, const char* where, Call call) {
  py::gil_scoped_acquire gil;
  try {
    return call();
  } catch (py::error_already_set& e) {
    std::string what = e.what();
    m.note_error(where, what);
    throw std::runtime_error(std::string(where) + ": " + what);
  }
}

class python_trainer : public trainer {
public:
  python_trainer(std::shared_ptr<python_model> model, const trainer_context& ctx)
    : model_(std::move(model)), data_(ctx.data), worker_(ctx.worker),
      x_(std::size_t(ctx.batch) * std::size_t(ctx.data->cols())), y_(std::size_t(ctx.batch)) {}

  step_loss step(int64_t clock, const float* params, float* grad) override {
    data_->fill_batch(clock, x_.data(), y_.data());
    const auto n = model_->spec.total_floats();
    std::fill(grad, grad + n, 0.0f);
    const auto rows = y_.size();
    double loss = with_gil(*model_, "step", [&] {
      return model_->model.attr("step")(worker_, clock, floats_view(params, n, false),
                                        floats_view(grad, n, true),
                                        matrix_view(x_.data(), rows, x_.size() / rows),
                                        labels_view(y_.data(), rows))
        .cast<double>();
    });
    return {loss * double(rows), int64_t(rows)};
  }

private:
  std::shared_ptr<python_model> model_;
  const batch_source* data_;
  int worker_;
  std::vector<float> x_;
  std::vector<int32_t> y_;
};

class python_evaluation : public evaluation {
public:
  python_evaluation(std::shared_ptr<python_model> model, std::shared_ptr<const dataset> test)
    : model_(std::move(model)), test_(std::move(test)) {}

  /// evaluate(params, x, y) returns the accuracy, or (accuracy, loss).
  eval_metrics evaluate(const float* params) override {
    eval_metrics out;
    out.rows = test_->rows;
    with_gil(*model_, "evaluate", [&] {
      auto r = model_->model.attr("evaluate")(
        floats_view(params, model_->spec.total_floats(), false),
        matrix_view(test_->x.data(), std::size_t(test_->rows), std::size_t(test_->cols)),
        labels_view(test_->y.data(), std::size_t(test_->rows)));
      if (py::isinstance<py::tuple>(r)) {
        auto t = r.cast<py::tuple>();
        out.accuracy = t[0].cast<double>();
        if (t.size() > 1) out.loss = t[1].cast<double>();
      } else {
        out.accuracy = r.cast<double>();
      }
    });
    return out;
  }

private:
  std::shared_ptr<python_model> model_;
  std::shared_ptr<const dataset> test_;
};

class python_plugin : public model_plugin {
public:
  explicit python_plugin(std::shared_ptr<python_model> model) : model_(std::move(model)) {}
  model_spec spec() const override { return model_->spec; }
  std::string check_data(int, int) const override { return ""; }
  std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const override {
    if (!ctx.data) throw std::invalid_argument("a Python model trains on in-memory data");
    return std::make_unique<python_trainer>(model_, ctx);
  }
  std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset> test) const override {
    return std::make_unique<python_evaluation>(model_, std::move(test));
  }

private:
  std::shared_ptr<python_model> model_;
};

/// (x, y): x rows × cols float32, y rows integer labels ≥ 0, copied once into the runtime's
/// dataset (the runtime owns its data; the per-clock parameter traffic stays in place).
std::shared_ptr<dataset> dataset_of(py::handle split, const char* arg) {
  auto pair = py::reinterpret_borrow<py::tuple>(split);
  if (pair.size() != 2) throw py::value_error(std::string(arg) + ": expected (x, y)");
  auto x = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(pair[0]);
  auto y = py::array_t<int32_t, py::array::c_style | py::array::forcecast>::ensure(pair[1]);
  if (!x || x.ndim() != 2) throw py::value_error(std::string(arg) + ": x must be 2-D (rows, cols)");
  if (!y || y.ndim() != 1 || y.shape(0) != x.shape(0))
    throw py::value_error(std::string(arg) + ": y must be 1-D with one label per row of x");
  auto d = std::make_shared<dataset>();
  d->rows = static_cast<int>(x.shape(0));
  d->cols = static_cast<int>(x.shape(1));
  d->x.assign(x.data(), x.data() + x.size());
  d->y.assign(y.data(), y.data() + y.size());
  for (auto label : d->y) {
    if (label < 0) throw py::value_error(std::string(arg) + ": a negative label");
    d->classes = std::max(d->classes, label + 1);
  }
  return d;
}

py::dict summary_dict(const run_summary& s) {
  py::dict d;
  d["mode"] = s.mode;
  d["workers"] = s.workers;
  d["shards"] = s.shards;
  d["clocks"] = s.clocks;
  d["samples"] = s.samples;
  d["planned_clocks"] = s.planned_clocks;
  d["workers_lost"] = s.workers_lost;
  d["final_checkpoint_failed"] = s.final_checkpoint_failed;
  d["final_eval_clock"] = s.final_eval_clock;
  d["wall_s"] = s.wall_s;
  d["samples_per_s"] = s.samples_per_s;
  d["evaluations"] = s.evaluations;
  d["final_test_accuracy"] = s.final_test_accuracy;
  d["final_test_loss"] = s.final_test_loss;
  d["max_staleness"] = s.max_staleness;
  d["failures"] = s.failures;
  d["recoveries"] = s.recoveries;
  d["failovers"] = s.failovers;
  d["rereplications"] = s.rereplications;
  d["checkpoints"] = s.checkpoints;
  d["checkpoint_failures"] = s.checkpoint_failures;
  d["resumed_from"] = s.resumed_from;
  return d;
}

/// Unregisters the run's model however train() ends: the registry keeps nothing of Python's.
struct registration {
  std::string name;
  ~registration() {
    register_model(name, [name = name](const std::string&) -> std::unique_ptr<model_plugin> {
      throw model_error("the Python model '" + name + "' is registered only while it trains");
    });
  }
};

/// train(opts) with the GIL released; `check` runs once the run is over, before the run's own
/// errors are raised. Returns the summary with the final parameters.
py::dict run_train(const train_options& opts, const std::function<void()>& check = {}) {
  std::optional<caf::expected<run_summary>> summary;
  std::optional<caf::expected<std::vector<float>>> params;
  {
    py::gil_scoped_release release;
    summary.emplace(train(opts));
    if (*summary) params.emplace(final_parameters(**summary, opts));
  }
  if (check) check();
  if (!*summary) raise_error(summary->error());
  auto out = summary_dict(**summary);
  if (!*params) raise_error(params->error());
  out["parameters"] = py::array_t<float>((*params)->size(), (*params)->data());
  return out;
}

/// The files of a model named by a string: train "criteo:PATH", "libsvm:PATH" or "csv:PATH"
/// (as --dataset), test the test file of the same format (as --test).
data_source files_of(py::handle train_split, py::handle test_split) {
  const char* usage = "a model named by a string trains on files: train 'criteo:PATH', "
                      "'libsvm:PATH' or 'csv:PATH', test the test file";
  if (!py::isinstance<py::str>(train_split))
    throw py::value_error(std::string("train: ") + usage);
  if (!py::isinstance<py::str>(test_split)) throw py::value_error(std::string("test: ") + usage);
  const auto text = train_split.cast<std::string>();
  const std::pair<std::string, data_source::kind> kinds[] = {
    {"criteo:", data_source::kind::criteo},
    {"libsvm:", data_source::kind::libsvm},
    {"csv:", data_source::kind::csv}};
  for (const auto& [prefix, kind] : kinds) {
    if (text.rfind(prefix, 0) != 0 || text.size() == prefix.size()) continue;
    data_source d;
    d.what = kind;
    d.train_path = text.substr(prefix.size());
    d.test_path = test_split.cast<std::string>();
    return d;
  }
  throw py::value_error("train: " + text + ": " + usage);
}

/// The optimizer keywords of actorps.train, each None unless given.
struct optimizer_keywords {
  std::optional<std::string> kind;
  std::optional<float> lr;
  std::optional<float> momentum;
};

/// The optimizer the keywords choose for the registered `model`, or none when they choose
/// nothing: the model's own then (model_plugin::defaults), as `actorps simulate` without
/// --optimizer, --lr and --momentum. A rate or momentum given alone goes with the model's
/// optimizer; a momentum not given is the model's.
std::optional<optimizer_config> optimizer_for(const optimizer_keywords& k,
                                              const std::string& model) {
  if (!k.kind && !k.lr && !k.momentum) return std::nullopt;
  training_defaults model_defaults;
  try {
    model_defaults = make_model(model)->defaults();
  } catch (const std::exception&) {
    // not a model: train() refuses it, naming why
  }
  optimizer_config o;
  o.kind = k.kind ? parse_choice("optimizer", *k.kind, parse_optimizer_kind, optimizer_names())
                  : model_defaults.optimizer;
  o.learning_rate = learning_rate_of(k.lr);  // 0: the model's rate for its optimizer
  o.momentum = k.momentum.value_or(model_defaults.momentum);
  return o;
}

py::dict train_python(py::object model, py::handle train_split, py::handle test_split,
                      const train_options& base, const optimizer_keywords& optimizer) {
  if (py::isinstance<py::str>(model)) {
    train_options opts = base;
    opts.model = model.cast<std::string>();
    opts.source = files_of(train_split, test_split);
    opts.optimizer = optimizer_for(optimizer, opts.model);
    return run_train(opts);
  }
  auto spec_obj = model.attr("spec");
  if (PyCallable_Check(spec_obj.ptr())) spec_obj = spec_obj();
  auto spec = spec_obj.cast<model_spec>();
  if (!spec.sparse_tables.empty())
    throw py::value_error("model: a Python plug-in has dense tensors only (sparse tables: "
                          "actorps.torch.EmbeddingBag in a loop of your own)");
  for (const char* method : {"step", "evaluate"})
    if (!py::hasattr(model, method))
      throw py::value_error(std::string("model: has no ") + method + "()");
  train_options opts = base;
  opts.model = spec.name;
  opts.train = dataset_of(train_split, "train");
  opts.test = dataset_of(test_split, "test");
  if (opts.test->cols != opts.train->cols)
    throw py::value_error("test: its x has another width than train's");
  auto shared = share(model, spec);
  registration registered{spec.name};
  register_model(spec.name, [shared](const std::string&) {
    return std::make_unique<python_plugin>(shared);
  });
  opts.optimizer = optimizer_for(optimizer, opts.model);
  return run_train(opts, [&] {
    if (shared->first_error)
      throw std::runtime_error("the Python model raised in " + *shared->first_error);
  });
}

} // namespace

void bind_train(py::module_& m) {
  m.def(
    "train",
    [](py::object model, py::handle train_split, py::handle test_split, int ps, int workers,
       std::optional<std::string> mode, std::optional<int> staleness,
       std::optional<std::string> optimizer, std::optional<float> lr,
       std::optional<float> momentum, std::optional<std::string> schedule,
       std::optional<int> batch, std::optional<double> epochs, int64_t steps,
       int64_t eval_every, uint64_t seed, const std::string& metrics, bool progress,
       int threads, const std::string& checkpoint_dir, int64_t checkpoint_every,
       const std::string& resume, const std::string& checkpoint_key,
       const std::vector<std::tuple<std::string, int32_t, int64_t>>& kill, int replicas,
       const std::string& tensorboard_dir, int full_checkpoint_every,
       const std::string& export_dir, int64_t export_every, int full_export_every) {
      train_options o;
      o.ps = ps;
      o.workers = workers;
      choose_consistency(mode, staleness, o.mode, o.staleness);
      o.schedule = schedule_of(schedule);
      o.batch = batch;
      o.epochs = epochs;
      o.steps = steps;
      o.eval_every = eval_every;
      o.seed = seed;
      o.metrics = metrics;
      o.tensorboard_dir = tensorboard_dir;
      o.progress = progress;
      o.threads = threads;
      o.checkpoint_dir = checkpoint_dir;
      o.checkpoint_every = checkpoint_every;
      o.full_checkpoint_every = full_checkpoint_every;
      o.resume = resume;
      o.checkpoint_key = checkpoint_key;
      for (const auto& [role, index, clock] : kill) o.kills.push_back({role, index, clock});
      o.replicas = replicas;
      o.export_dir = export_dir;
      o.export_every = export_every;
      o.full_export_every = full_export_every;
      return train_python(std::move(model), train_split, test_split, o,
                          optimizer_keywords{optimizer, lr, momentum});
    },
    py::arg("model"), py::arg("train"), py::arg("test"), py::kw_only(), py::arg("ps") = 2,
    py::arg("workers") = 2, py::arg("mode") = py::none(), py::arg("staleness") = py::none(),
    py::arg("optimizer") = py::none(), py::arg("lr") = py::none(),
    py::arg("momentum") = py::none(), py::arg("schedule") = py::none(),
    py::arg("batch") = py::none(), py::arg("epochs") = py::none(),
    py::arg("steps") = 0, py::arg("eval_every") = 0, py::arg("seed") = 1,
    py::arg("metrics") = "", py::arg("progress") = false, py::arg("threads") = 0,
    py::arg("checkpoint_dir") = "", py::arg("checkpoint_every") = 0, py::arg("resume") = "",
    py::arg("checkpoint_key") = "",
    py::arg("kill") = std::vector<std::tuple<std::string, int32_t, int64_t>>{},
    py::arg("replicas") = 0, py::arg("tensorboard_dir") = "", py::arg("full_checkpoint_every") = 10,
    py::arg("export_dir") = "", py::arg("export_every") = 0, py::arg("full_export_every") = 10,
    "Trains `model` with the runtime owning the loop (actorps.train_options, the defaults of "
    "`actorps simulate`: each of mode, staleness, schedule, optimizer, lr, momentum, batch and "
    "epochs left None is the run's (ssp, staleness 2, cosine) or the model's own; a Python "
    "plug-in's are momentum at 0.05, batch 64, 5 epochs). model: .spec (an actorps.ModelSpec, dense tensors; its name "
    "registers the plug-in for the run), .step(worker, clock, params, grad, x, y) -> the mean "
    "loss of the minibatch, writing its gradient into grad (zeroed before the call), and "
    ".evaluate(params, x_test, y_test) -> accuracy or (accuracy, loss), the evaluator hook. "
    "The arrays are NumPy views valid during the call only (params read-only), each called "
    "with the GIL from the worker's or evaluator's own thread. train and test: (x float32 "
    "rows x cols, y integer labels). checkpoint_dir, checkpoint_every (global clocks; 0: the "
    "last only), resume (a checkpoint directory of this run) and checkpoint_key (a key file: "
    "manifests signed and checked with HMAC-SHA256) as --checkpoint-dir, --checkpoint-every, "
    "--resume and --checkpoint-key. kill: fault injection as --kill, a list of (role, "
    "index, clock): that actor is killed when the global clock reaches clock and the runtime "
    "recovers (a lost shard from the newest checkpoint, or with replicas=1 from its hot "
    "standby, losing nothing). tensorboard_dir: TensorBoard event files, as --tensorboard. "
    "full_checkpoint_every: as --full-checkpoint-every (every N-th checkpoint full, deltas "
    "between). model may instead name a built-in plug-in ('dlrm:8:16:16', 'lr', "
    "'mlp:784-256-10'); train is then its data file as --dataset has it ('criteo:PATH', "
    "'libsvm:PATH', 'csv:PATH') and test the test file. export_dir, export_every (global "
    "clocks; 0: none) and full_export_every as --export-dir, --export-every and "
    "--full-export-every: the export after the run and the versions while training (an MLP, "
    "lr or dlrm). "
    "Returns the run's summary as a dict, with the final "
    "parameters (flat, model order) under 'parameters'; raises actorps.Error for the "
    "runtime's errors and RuntimeError naming the first exception a callback raised.");
}

} // namespace actorps::python
