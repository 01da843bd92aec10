// actorps.LocalCluster and actorps.TaskCluster: the shards of a loop of your own, in this
// process or one task per process from TF_CONFIG (actors/ps.hpp). Blocking calls release the
// GIL; the runtime's errors become actorps.Error, bad options ValueError.
#include "actors/ps.hpp"
#include "apps/python/binding.hpp"
#include "apps/python/choices.hpp"
#include "apps/python/errors.hpp"
#include "apps/python/worker_binding.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdlib>
#include <memory>

namespace actorps::python {

namespace {

/// The options both clusters take, as keyword arguments. mode, staleness and schedule None:
/// the run's defaults (actors/ps.hpp: ssp with staleness 2; cosine when total_clocks is given,
/// else constant).
struct python_options {
  std::optional<std::string> mode;
  std::optional<int> staleness;
  std::string optimizer = "momentum";
  std::optional<float> lr;  // None: the optimizer's default
  float momentum = 0.9f;
  std::optional<std::string> schedule;
  int64_t total_clocks = 0;
  uint64_t seed = 1;
  uint32_t block_floats = 4096;
  double timeout = 60;

  cluster_options resolve(int ps, int workers) const {
    cluster_options o;
    o.ps = ps;
    o.workers = workers;
    choose_consistency(mode, staleness, o.mode, o.staleness);
    o.optimizer = optimizer_of(optimizer, lr, momentum);
    o.schedule = schedule_of(schedule);
    o.total_clocks = total_clocks;
    o.seed = seed;
    o.block_floats = block_floats;
    if (!(timeout > 0)) throw py::value_error("timeout: must be > 0 seconds");
    o.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
    return o;
  }
};

std::vector<uint32_t> table_dims(const model_spec& model) {
  std::vector<uint32_t> dims;
  for (const auto& t : model.sparse_tables) dims.push_back(t.config.dim);
  return dims;
}

/// A flat vector as a NumPy array that owns it (moved, not copied).
py::array_t<float> to_array(std::vector<float>&& values) {
  auto* owned = new std::vector<float>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  return py::array_t<float>(owned->size(), owned->data(), free_when_done);
}

/// `call()`, a caf::expected, run without the GIL: its value, or its error raised as
/// actorps.Error.
template <class Call>
auto without_gil(Call&& call) {
  std::optional<decltype(call())> result;
  {
    py::gil_scoped_release release;
    result.emplace(call());
  }
  if (!*result) raise_error(result->error());
  return std::move(**result);
}

template <class Cluster>
py::array_t<float> snapshot_of(Cluster& cluster) {
  return to_array(without_gil([&] { return cluster.snapshot(); }));
}

/// cluster.checkpoint(root): {"dir", "clock", "bytes"}.
template <class Cluster>
py::dict checkpoint_of(Cluster& cluster, const std::string& root) {
  const auto taken = without_gil([&] { return cluster.checkpoint(root); });
  py::dict out;
  out["dir"] = taken.dir;
  out["clock"] = taken.clock;
  out["bytes"] = taken.bytes;
  return out;
}

/// cluster.restore(path): the clock the workers go on from.
template <class Cluster>
int64_t restore_of(Cluster& cluster, const std::string& path) {
  return without_gil([&] { return cluster.restore(path); });
}

constexpr const char* checkpoint_doc =
  "Writes every shard's state (dense parameters, optimizer state, every sparse table's rows "
  "with their optimizer state) into root/ckpt-<clock>/, as --checkpoint-dir does; returns "
  "{'dir', 'clock', 'bytes'}. The clock is the shards' min clock: take it between clocks (in "
  "sync mode the state is then exactly the one after that clock).";
constexpr const char* restore_doc =
  "Puts every shard back to the newest valid checkpoint under path (a ckpt-<clock> directory "
  "or a root), every worker at its clock, which it returns: the workers go on from there "
  "(ShardedParameters(..., clock=that)). Raises actorps.Error naming the difference for a "
  "checkpoint of another model or table layout.";

struct python_local_cluster {
  model_spec model;
  std::unique_ptr<local_cluster> cluster;

  python_local_cluster(const model_spec& spec, const cluster_options& opts) : model(spec) {
    py::gil_scoped_release release;  // the shards are spawned and initialised
    cluster = std::make_unique<local_cluster>(model, opts);
  }
};

struct python_task_cluster {
  model_spec model;
  std::unique_ptr<task_cluster> cluster;

  python_task_cluster(const model_spec& spec, const std::string& tf_config,
                      const cluster_options& opts, int shards, int workers)
    : model(spec) {
    cluster = std::make_unique<task_cluster>(tf_config, model, opts, shards, workers);
  }
};

std::string tf_config_of(const std::optional<std::string>& given) {
  if (given) return *given;
  const char* env = std::getenv("TF_CONFIG");
  if (!env) throw py::value_error("tf_config: not given and $TF_CONFIG is not set");
  return env;
}

} // namespace

void bind_clusters(py::module_& m) {
  py::class_<python_local_cluster> local(
    m, "LocalCluster",
    "ps parameter shards in this process for `workers` workers that own their loop; mode "
    "'sync'|'ssp'|'async' (staleness: the ssp bound; None: ssp with staleness 2, as "
    "actorps.train), the optimizer ('sgd', 'momentum', 'adam', 'adagrad'; lr None: its "
    "default) applied by the shards, schedule 'constant'|'cosine'|'linear' over total_clocks "
    "(None: cosine when total_clocks is given, else constant), timeout: seconds per request.");
  local.def(py::init([](const model_spec& spec, int ps, int workers,
                        std::optional<std::string> mode, std::optional<int> staleness,
                        const std::string& optimizer, std::optional<float> lr, float momentum,
                        std::optional<std::string> schedule, int64_t total_clocks,
                        uint64_t seed, uint32_t block_floats, double timeout) {
              python_options o{mode, staleness, optimizer, lr, momentum, schedule,
                               total_clocks, seed, block_floats, timeout};
              return std::make_unique<python_local_cluster>(spec, o.resolve(ps, workers));
            }),
            py::arg("spec"), py::kw_only(), py::arg("ps") = 2, py::arg("workers") = 2,
            py::arg("mode") = py::none(), py::arg("staleness") = py::none(),
            py::arg("optimizer") = "momentum", py::arg("lr") = py::none(),
            py::arg("momentum") = 0.9f, py::arg("schedule") = py::none(),
            py::arg("total_clocks") = 0, py::arg("seed") = 1, py::arg("block_floats") = 4096,
            py::arg("timeout") = 60.0)
    .def("worker",
         [](python_local_cluster& c, int w) {
           return std::make_unique<python_worker>(c.cluster->worker(w), c.cluster->total_floats(),
                                                  table_dims(c.model));
         },
         py::arg("w"), "The client of worker w (0 ≤ w < workers); one per thread.")
    .def_property_readonly("total_floats",
                           [](const python_local_cluster& c) { return c.cluster->total_floats(); })
    .def("snapshot", [](python_local_cluster& c) { return snapshot_of(*c.cluster); },
         "The current parameters, flat in model order (never held by the consistency rule).")
    .def("checkpoint",
         [](python_local_cluster& c, const std::string& root) {
           return checkpoint_of(*c.cluster, root);
         },
         py::arg("root"), checkpoint_doc)
    .def("restore",
         [](python_local_cluster& c, const std::string& path) {
           return restore_of(*c.cluster, path);
         },
         py::arg("path"), restore_doc)
    .def("scale",
         [](python_local_cluster& c, std::optional<int> ps, std::optional<int> workers) {
           if (!ps && !workers) throw py::value_error("scale: give ps=, workers= or both");
           if ((ps && *ps < 1) || (workers && *workers < 1))
             throw py::value_error("scale: the numbers of shards and workers are 1 or more");
           return without_gil(
             [&] { return c.cluster->scale(ps.value_or(0), workers.value_or(0)); });
         },
         py::kw_only(), py::arg("ps") = py::none(), py::arg("workers") = py::none(),
         "Goes on with ps shards and workers workers (None: as many as now): every shard's "
         "state at one clock is cut for the new size and handed to the shards of that size; "
         "returns that clock, from which every worker goes on (its clients find the new shards "
         "on their next call). Call it with every worker's calls waited. Raises actorps.Error "
         "naming the reason for a size out of range.");

  py::class_<python_task_cluster> task(
    m, "TaskCluster",
    "This process's task in a cluster of processes (TF_CONFIG, or $TF_CONFIG when None): a ps "
    "task serve()s its shard until every worker has finished; a worker task gets its client "
    "from worker() and calls finish() at the end. The same options as LocalCluster; ps and "
    "workers come from TF_CONFIG (ps=N: the first N ps tasks hold shards from the start, the "
    "others serve() as spares for scale(); workers=M: the first M worker tasks train from the "
    "start, the others wait in worker() until a scale() takes them in). CAF 0.17 may wait "
    "forever for gone peers when the process ends: end a task with actorps.exit_task(status).");
  task.def(py::init([](const model_spec& spec, std::optional<std::string> tf_config,
                       std::optional<int> ps, std::optional<int> workers,
                       std::optional<std::string> mode,
                       std::optional<int> staleness, const std::string& optimizer,
                       std::optional<float> lr, float momentum,
                       std::optional<std::string> schedule, int64_t total_clocks, uint64_t seed,
                       uint32_t block_floats, double timeout) {
             if (ps && *ps < 1)
               throw py::value_error("ps: must be 1 or more (None: every ps task)");
             if (workers && *workers < 1)
               throw py::value_error("workers: must be 1 or more (None: every worker task)");
             python_options o{mode, staleness, optimizer, lr, momentum, schedule,
                              total_clocks, seed, block_floats, timeout};
             return std::make_unique<python_task_cluster>(spec, tf_config_of(tf_config),
                                                          o.resolve(1, 1), ps.value_or(0),
                                                          workers.value_or(0));
           }),
           py::arg("spec"), py::arg("tf_config") = py::none(), py::kw_only(),
           py::arg("ps") = py::none(), py::arg("workers") = py::none(),
           py::arg("mode") = py::none(),
           py::arg("staleness") = py::none(), py::arg("optimizer") = "momentum",
           py::arg("lr") = py::none(), py::arg("momentum") = 0.9f,
           py::arg("schedule") = py::none(), py::arg("total_clocks") = 0, py::arg("seed") = 1,
           py::arg("block_floats") = 4096, py::arg("timeout") = 60.0)
    .def_property_readonly("is_ps", [](const python_task_cluster& c) { return c.cluster->is_ps(); })
    .def_property_readonly("index", [](const python_task_cluster& c) { return c.cluster->index(); })
    .def_property_readonly("workers",
                           [](const python_task_cluster& c) { return c.cluster->workers(); },
                           "The worker tasks in the job now.")
    .def_property_readonly("in_job",
                           [](const python_task_cluster& c) { return c.cluster->in_job(); },
                           "A worker task: whether it trains (False for a spare not taken in "
                           "yet, and after a scale() that left it out: it then calls finish()).")
    .def_property_readonly("joined_at",
                           [](const python_task_cluster& c) { return c.cluster->joined_at(); },
                           "A worker task in the job: the clock it goes on from (0, or the "
                           "clock of the scale() that took it in).")
    .def_property_readonly("total_floats",
                           [](const python_task_cluster& c) { return c.cluster->total_floats(); })
    .def("serve",
         [](python_task_cluster& c) {
           py::gil_scoped_release release;
           return c.cluster->serve();
         },
         "A ps task: hosts the shard until every worker has finished; returns 0, or 2 when it "
         "cannot listen on its address.")
    .def("worker",
         [](python_task_cluster& c) {
           // connects to every shard, retrying
           auto client = without_gil([&] { return c.cluster->worker(); });
           return std::make_unique<python_worker>(std::move(client), c.cluster->total_floats(),
                                                  table_dims(c.model));
         },
         "A worker task: its client, connecting to and initialising the shards on the first "
         "call; raises actorps.Error naming a shard that could not be reached. A spare worker "
         "task first waits until a scale() takes it in (it goes on from joined_at), or raises "
         "actorps.Error once the job finished without it (no finish() to call then).")
    .def("await_others",
         [](python_task_cluster& c) {
           caf::error err;
           {
             py::gil_scoped_release release;
             err = c.cluster->await_others();
           }
           if (err) raise_error(err);
         },
         "A worker task, before finish(): returns once every other worker in the job has "
         "finished, so that snapshot() gives the run's final parameters.")
    .def("finish",
         [](python_task_cluster& c) {
           caf::error err;
           {
             py::gil_scoped_release release;
             err = c.cluster->finish();
           }
           if (err) raise_error(err);
         },
         "A worker task, after worker(): tells every ps task this worker is done.")
    .def("snapshot", [](python_task_cluster& c) { return snapshot_of(*c.cluster); })
    .def("checkpoint",
         [](python_task_cluster& c, const std::string& root) {
           return checkpoint_of(*c.cluster, root);
         },
         py::arg("root"), "A worker task, after worker(): LocalCluster.checkpoint, by one worker.")
    .def("restore",
         [](python_task_cluster& c, const std::string& path) {
           return restore_of(*c.cluster, path);
         },
         py::arg("path"),
         "A worker task, after every worker task has connected and before any trains on: "
         "LocalCluster.restore.")
    .def("scale",
         [](python_task_cluster& c, std::optional<int> ps, std::optional<int> workers) {
           if (!ps && !workers) throw py::value_error("scale: give ps=, workers= or both");
           if ((ps && *ps < 1) || (workers && *workers < 1))
             throw py::value_error("scale: the numbers of shards and workers are 1 or more");
           // every worker in the job meets
           return without_gil(
             [&] { return c.cluster->scale(ps.value_or(0), workers.value_or(0)); });
         },
         py::kw_only(), py::arg("ps") = py::none(), py::arg("workers") = py::none(),
         "A worker task in the job: goes on with the first `ps` ps tasks of TF_CONFIG as the "
         "shards and the first `workers` worker tasks (None: as many as now; LocalCluster.scale "
         "across processes). Every worker task in the job calls it at the same point of its "
         "loop with every ticket waited; it returns, in each, the clock every worker goes on "
         "from, once worker 0 has handed the shards of the new size their parts. A growth takes "
         "in spare ps tasks (serving) and spare worker tasks (waiting in worker()); a worker "
         "beyond the new number is out (in_job False: it calls finish()), and the ps tasks a "
         "shrink leaves out return from serve() with 0 once every worker has gone on. Raises "
         "actorps.Error naming the reason (a number TF_CONFIG does not list, workers asking for "
         "different numbers, a spare that cannot be reached), ValueError for a bad argument.");
}

} // namespace actorps::python
