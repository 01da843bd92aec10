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
  bool row_indexed = false;  ///< it has keys(): it reads its own data by row index

  void note_error(const std::string& where, const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!first_error) first_error = where + ": " + what;
  }
};

std::shared_ptr<python_model> share(py::object model, model_spec spec) {
  const bool row_indexed = py::hasattr(model, "keys");
  return std::shared_ptr<python_model>(new python_model{std::move(model), std::move(spec), {}, {},
                                                        row_indexed},
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

/// Each sparse table's keys as a plug-in names them: a 1-D array per table, int64 or uint64
/// (the same 64 bits), in the order its step() will use them.
void keys_from(py::handle answer, const char* where, std::vector<std::vector<uint64_t>>& per_table) {
  auto list = py::reinterpret_borrow<py::sequence>(answer);
  if (list.size() != per_table.size())
    throw std::runtime_error(std::string(where) + ": " + std::to_string(list.size()) +
                             " key arrays, the model has " + std::to_string(per_table.size()) +
                             " sparse tables");
  for (std::size_t t = 0; t < per_table.size(); ++t) {
    auto a = py::array::ensure(list[t], py::array::c_style);
    if (!a || a.ndim() != 1 || a.itemsize() != 8 || a.dtype().kind() == 'f')
      throw std::runtime_error(std::string(where) + ": the keys of table " + std::to_string(t) +
                               " must be a 1-D int64 or uint64 array");
    const auto* k = static_cast<const uint64_t*>(a.data());
    per_table[t].assign(k, k + a.shape(0));
  }
}

/// The rows of a step or an evaluation as the plug-in sees them: per table (keys, values,
/// grads, inverse) — the distinct keys ascending (uint64), their rows (distinct × dim,
/// read-only), the gradient rows to add into (writable; None for an evaluation), and for
/// each key named, in order, its row's index.
py::list tables_view(std::vector<table_rows>& tables, bool grads) {
  py::list out;
  for (auto& t : tables) {
    const std::size_t u = t.keys.size(), dim = t.dim;
    py::array_t<uint64_t> keys({u}, {sizeof(uint64_t)}, t.keys.data(), py::none());
    keys.attr("setflags")(py::arg("write") = false);
    py::array_t<float> values({u, dim}, {dim * sizeof(float), sizeof(float)}, t.values.data(),
                              py::none());
    values.attr("setflags")(py::arg("write") = false);
    py::array_t<uint32_t> inverse({t.inverse.size()}, {sizeof(uint32_t)}, t.inverse.data(),
                                  py::none());
    inverse.attr("setflags")(py::arg("write") = false);
    py::object g = py::none();
    if (grads)
      g = py::array_t<float>({u, dim}, {dim * sizeof(float), sizeof(float)}, t.grads.data(),
                             py::none());
    out.append(py::make_tuple(keys, values, g, inverse));
  }
  return out;
}

/// A plug-in that reads its own data by row (it has keys()): each step is told the rows of
/// its minibatch (dataset row indices, the runtime's split, shuffle and epochs) and, for a
/// model with sparse tables, the rows of the keys keys() named for it.
class row_indexed_trainer : public trainer {
public:
  row_indexed_trainer(std::shared_ptr<python_model> model, const trainer_context& ctx)
    : model_(std::move(model)), data_(dynamic_cast<const data_shard*>(ctx.data)),
      worker_(ctx.worker) {
    if (!data_) throw std::invalid_argument("a Python model reading rows trains on in-memory data");
  }

  void keys(int64_t clock, std::vector<std::vector<uint64_t>>& per_table) override {
    if (per_table.empty()) return;
    with_gil(*model_, "keys", [&] {
      keys_from(model_->model.attr("keys")(worker_, clock, rows_of(clock)), "keys", per_table);
    });
  }

  step_loss step(int64_t clock, const float* params, float* grad) override {
    std::vector<table_rows> none;
    return step(clock, params, grad, none);
  }

  step_loss step(int64_t clock, const float* params, float* grad,
                 std::vector<table_rows>& tables) override {
    const auto n = model_->spec.total_floats();
    std::fill(grad, grad + n, 0.0f);
    int64_t rows = 0;
    double loss = with_gil(*model_, "step", [&] {
      auto batch = rows_of(clock);
      rows = batch.shape(0);
      return model_->model.attr("step")(worker_, clock, floats_view(params, n, false),
                                        floats_view(grad, n, true), batch,
                                        tables_view(tables, true))
        .cast<double>();
    });
    return {loss * double(rows), rows};
  }

private:
  py::array_t<int64_t> rows_of(int64_t clock) const {
    auto rows = data_->batch_rows(clock);
    return py::array_t<int64_t>(rows.size(), rows.data());
  }

  std::shared_ptr<python_model> model_;
  const data_shard* data_;
  int worker_;
};

/// What evaluate() returned: the accuracy, (accuracy, loss), or a dict with "logits" (one per
/// test row, of a binary model: the runtime computes AUC, log loss, accuracy and calibration
/// against the test labels, as for its own CTR models) or any of "accuracy", "loss", "auc".
eval_metrics metrics_of(py::handle r, const dataset& test) {
  eval_metrics out;
  out.rows = test.rows;
  if (py::isinstance<py::dict>(r)) {
    auto d = py::reinterpret_borrow<py::dict>(r);
    if (d.contains("logits")) {
      auto z = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(d["logits"]);
      if (!z || z.ndim() != 1 || z.shape(0) != test.rows)
        throw std::runtime_error("evaluate: 'logits' must hold one float per test row (" +
                                 std::to_string(test.rows) + ")");
      std::vector<float> labels(test.y.begin(), test.y.end());
      out = binary_metrics_from_logits(z.data(), labels.data(), labels.size(), test.groups);
      out.rows = test.rows;
    }
    if (d.contains("accuracy")) out.accuracy = d["accuracy"].cast<double>();
    if (d.contains("loss")) out.loss = d["loss"].cast<double>();
    if (d.contains("auc")) out.auc = d["auc"].cast<double>();
  } else if (py::isinstance<py::tuple>(r)) {
    auto t = py::reinterpret_borrow<py::tuple>(r);
    out.accuracy = t[0].cast<double>();
    if (t.size() > 1) out.loss = t[1].cast<double>();
  } else {
    out.accuracy = r.cast<double>();
  }
  return out;
}

class python_evaluation : public evaluation {
public:
  python_evaluation(std::shared_ptr<python_model> model, std::shared_ptr<const dataset> test)
    : model_(std::move(model)), test_(std::move(test)) {}

  /// evaluate(params, x, y); a plug-in reading rows: evaluate(params, tables).
  eval_metrics evaluate(const float* params) override {
    std::vector<table_rows> none;
    return evaluate(params, none);
  }

  void keys(std::vector<std::vector<uint64_t>>& per_table) override {
    if (per_table.empty()) return;
    with_gil(*model_, "eval_keys", [&] {
      keys_from(model_->model.attr("eval_keys")(), "eval_keys", per_table);
    });
  }

  eval_metrics evaluate(const float* params, const std::vector<table_rows>& tables) override {
    const auto n = model_->spec.total_floats();
    return with_gil(*model_, "evaluate", [&] {
      py::object r;
      if (model_->row_indexed) {
        // The rows are read-only to the plug-in (no gradients): the view is not written.
        auto& rows = const_cast<std::vector<table_rows>&>(tables);
        r = model_->model.attr("evaluate")(floats_view(params, n, false), tables_view(rows, false));
      } else {
        r = model_->model.attr("evaluate")(
          floats_view(params, n, false),
          matrix_view(test_->x.data(), std::size_t(test_->rows), std::size_t(test_->cols)),
          labels_view(test_->y.data(), std::size_t(test_->rows)));
      }
      return metrics_of(r, *test_);
    });
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
    if (model_->row_indexed) return std::make_unique<row_indexed_trainer>(model_, ctx);
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
  d["final_test_auc"] = s.final_test_auc;  // -1: the model reports none (not a binary one)
  d["final_test_calibration"] = s.final_test_calibration;
  if (s.final_test_slice_rest_rows != -1) {  // slice_auc: [{key, rows, positives, auc}]
    py::list slices;
    for (const auto& slice : s.final_test_slices) {
      py::dict one;
      one["key"] = slice.key;
      one["rows"] = slice.rows;
      one["positives"] = slice.positives;
      one["auc"] = slice.auc;
      slices.append(one);
    }
    d["final_test_slice_auc"] = slices;
    d["final_test_slice_rest_rows"] = s.final_test_slice_rest_rows;
  }
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
    try {
      return run_train(opts);
    } catch (py::error_already_set& e) {
      // train() refuses a slice field the data lacks before the run starts: a bad keyword
      const std::string text = py::str(e.value());
      const auto at = text.find("--slice-auc ");
      if (!opts.slice_auc.empty() && at != std::string::npos) throw py::value_error(text.substr(at));
      throw;
    }
  }
  if (!base.slice_auc.empty())
    throw py::value_error("slice_auc: " + base.slice_auc + " needs a model named by a string "
                          "trained on 'criteo:PATH' (the key fields of its test file)");
  auto spec_obj = model.attr("spec");
  if (PyCallable_Check(spec_obj.ptr())) spec_obj = spec_obj();
  auto spec = spec_obj.cast<model_spec>();
  const bool row_indexed = py::hasattr(model, "keys");
  if (!spec.sparse_tables.empty() && !row_indexed)
    throw py::value_error("model: a Python plug-in with sparse tables reads its rows: it needs "
                          "keys(worker, clock, rows) and eval_keys() (actorps.torch.train "
                          "makes such a plug-in of an nn.Module)");
  for (const char* method : {"step", "evaluate"})
    if (!py::hasattr(model, method))
      throw py::value_error(std::string("model: has no ") + method + "()");
  if (row_indexed && !py::hasattr(model, "eval_keys"))
    throw py::value_error("model: has keys() but no eval_keys()");
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
       const std::string& export_dir, int64_t export_every, int full_export_every,
       std::optional<std::string> slice_auc,
       const std::vector<py::tuple>& resizes, const std::string& copy_ahead) {
      train_options o;
      o.slice_auc = slice_auc.value_or("");
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
      for (const auto& r : resizes) {  // (ps, clock) or (ps, clock, workers); 0: unchanged
        if (r.size() != 2 && r.size() != 3)
          throw py::value_error("resizes: each is (ps, clock) or (ps, clock, workers)");
        o.resizes.push_back({r[0].cast<int32_t>(), r[1].cast<int64_t>(),
                             r.size() == 3 ? r[2].cast<int32_t>() : 0});
      }
      o.copy_ahead = copy_ahead;
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
    py::arg("slice_auc") = py::none(),
    py::arg("resizes") = std::vector<py::tuple>{}, py::arg("copy_ahead") = "auto",
    "Trains `model` with the runtime owning the loop (actorps.train_options, the defaults of "
    "`actorps simulate`: each of mode, staleness, schedule, optimizer, lr, momentum, batch and "
    "epochs left None is the run's (ssp, staleness 2, cosine) or the model's own; a Python "
    "plug-in's are momentum at 0.05, batch 64, 5 epochs). model: .spec (an actorps.ModelSpec, dense tensors; its name "
    "registers the plug-in for the run), .step(worker, clock, params, grad, x, y) -> the mean "
    "loss of the minibatch, writing its gradient into grad (zeroed before the call), and "
    ".evaluate(params, x_test, y_test) -> accuracy or (accuracy, loss), the evaluator hook. "
    "The arrays are NumPy views valid during the call only (params read-only), each called "
    "with the GIL from the worker's or evaluator's own thread. A plug-in that reads its own "
    "data by row has .keys(worker, clock, rows) -> one key array per sparse table, "
    ".step(worker, clock, params, grad, rows, tables), .eval_keys() and .evaluate(params, "
    "tables) -> accuracy, (accuracy, loss) or a dict ('logits': the runtime's AUC): rows are "
    "the minibatch's dataset rows, tables (keys, values, grads, inverse) per table "
    "(actorps.torch.train makes one of an nn.Module). train and test: (x float32 "
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
    "lr, dlrm, wdl or deepfm). slice_auc: as --slice-auc, a key field of the test file ('C9') "
    "whose slices' AUC the evaluations add. resizes: as --resize, a list of (ps, clock) or (ps, "
    "clock, workers): from that global clock the run goes on on ps shards and workers workers "
    "(0: that number unchanged); copy_ahead: as --copy-ahead ('auto', 'always', 'never'). "
    "Returns the run's summary as a dict, with the final "
    "parameters (flat, model order) under 'parameters'; raises actorps.Error for the "
    "runtime's errors and RuntimeError naming the first exception a callback raised.");
}

} // namespace actorps::python
