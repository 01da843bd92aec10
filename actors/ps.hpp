// actorps — the front door. The one header a program that embeds the parameter server includes.
//
// Two ways to train:
//  * The runtime owns the loop (recovery, checkpoints, stragglers and the SSP bound keep
//    working): write a model plug-in (a trainer per worker + an evaluation hook,
//    actors/ps/model_plugin.hpp), register it, and call train().
//
//      class my_model : public actorps::model_plugin { ... };
//      actorps::register_model("mine", [](const std::string& args) {
//        return std::make_unique<my_model>(args);
//      });
//      actorps::train_options opts;
//      opts.model = "mine:16";
//      opts.train = my_train_rows; opts.test = my_test_rows;
//      auto summary = actorps::train(opts);   // caf::expected<run_summary>
//
//  * You own the loop (ps-lite's KVWorker): start the shards of a model and drive each worker
//    with pull / push_pull / wait. The shards hold pushes and pulls in their mailboxes exactly
//    as in a runtime-owned run (sync, ssp with its bound, async).
//
//      actorps::local_cluster ps(spec, opts);          // P shards, initialised
//      auto w = ps.worker(0);
//      auto t = w.pull(0, params.data());              // ticket
//      w.wait(t);                                      // staleness, or the error
//      t = w.push_pull(0, grad.data(), params.data()); // push clock 0, pull clock 1
//
//    The same loop runs as one process per task: task_cluster reads TF_CONFIG; its ps tasks
//    serve() a shard, its worker tasks get their client from worker().
//
// A runtime-owned run spreads over processes the same way: the chief task calls
// train_cluster(), every other task serve_task() (on the same deployment code as the
// `actorps chief|ps|worker|evaluator` commands).
//
// Errors are values (caf::expected / caf::error with actorps' codes, actors/ps/errors.hpp);
// nothing here ends the process.
#pragma once

#include "actors/ps/data_source.hpp"
#include "actors/ps/errors.hpp"
#include "actors/ps/lr_schedule.hpp"
#include "actors/ps/model_plugin.hpp"
#include "actors/ps/model_registry.hpp"
#include "actors/ps/model_spec.hpp"
#include "actors/ps/optimizer.hpp"
#include "actors/ps/run_summary.hpp"
#include "actors/ps/task_id.hpp"

#include <caf/expected.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorps {

// --- the runtime owns the loop ------------------------------------------------------------

// --- the defaults, one rule for train(), local_cluster and task_cluster ------------------
//
// How the shards keep workers together and decay the rate is the run's, the same for every
// entry point (train_options, cluster_options and the Python keywords that map them, left
// unset or None): mode ssp with a staleness bound of 2, and the schedule cosine when the run
// knows its number of clocks (train() always; a cluster given total_clocks), constant when it
// does not (schedule_or_default). How the model learns (optimizer, rate, momentum, batch,
// epochs) is the model's (model_plugin::defaults) in a runtime-owned run; a loop of your own
// names its optimizer (momentum unless set), at that optimizer's default rate unless set.

/// The schedule a run uses: `chosen` if set, else cosine over `total_clocks` when it is known
/// (> 0), constant when it is not.
inline lr_schedule schedule_or_default(std::optional<lr_schedule> chosen, int64_t total_clocks) {
  if (chosen) return *chosen;
  return total_clocks > 0 ? lr_schedule::cosine : lr_schedule::constant;
}

/// What every way to run shares: the shards and workers, how they keep together, the optimizer
/// the shards apply and how its rate decays, the seed and the cut of the tensors (the command's
/// --ps, --workers, --mode, --staleness, --optimizer, --lr, --momentum, --lr-schedule, --seed
/// and --block-floats).
struct common_run_options {
  int ps = 2;
  int workers = 2;
  consistency mode = consistency::ssp;  ///< the run's default (the rule above)
  int staleness = 2;              ///< the ssp bound (ignored by sync and async)
  /// Unset: schedule_or_default (cosine when the run's clocks are known, else constant).
  std::optional<lr_schedule> schedule;
  uint64_t seed = 1;              ///< the tensors' initial values (model_spec's initializers)
  uint32_t block_floats = 4096;   ///< tensors are cut into blocks of at most this many floats
  /// Applied by the shards. Unset: the model's in a runtime-owned run (train()), momentum in a
  /// loop of your own. learning_rate 0: the model's rate if this is the model's optimizer,
  /// else the optimizer's default.
  std::optional<optimizer_config> optimizer;
};

/// A run in this process: every role an actor of one actor_system (what `actorps simulate`
/// does). The same settings as the command line's training flags, with the same defaults: a
/// setting left unset takes the model's (model_plugin::defaults; the MLP's are momentum at
/// 0.05, batch 64, 5 epochs; DLRM's Adam at 0.003, batch 256, 1 epoch, tables at 0.1 admitting
/// a key on its 20th push), each one set overrides its field alone; mode, staleness and
/// schedule as the rule above has them.
struct train_options : common_run_options {
  std::string model = "mlp:784-256-128-10";  ///< NAME[:ARGS] of a registered model plug-in
  std::shared_ptr<const dataset> train, test;  ///< the data (dataset.hpp: rows, cols, x, y);
                                               ///< either left empty: loaded from `source`
  /// Where the data is. A model that streams its training file (sparse-lr on libsvm) reads it
  /// from here in every worker; a split not given above is loaded from here (load_split).
  data_source source;
  std::optional<int> batch;       ///< rows per minibatch and worker
  std::optional<double> epochs;   ///< passes over the training rows ...
  int64_t steps = 0;              ///< ... or, when > 0, clocks per worker
  std::optional<float> table_lr;  ///< every sparse table's learning rate (0: each table's own)
  std::optional<int64_t> admit_after;  ///< every sparse table's admission (-1: each table's own)
  /// Every sparse table's eviction, as --evict-after: a row not pushed for this many global
  /// clocks goes (0: none; -1 or unset: each table's own, sparse_table_config::evict_after).
  std::optional<int64_t> evict_after;
  /// Every sparse table's bound on rows per shard, as --max-rows-per-shard (0: none; -1 or
  /// unset: each table's own, sparse_table_config::max_rows).
  std::optional<int64_t> max_rows_per_shard;
  /// Every sparse table's pending admission counts, as --admission-memory: 0 exact counters,
  /// B > 0 a count-min sketch of B bytes per shard (-1 or unset: each table's own,
  /// sparse_table_config::admission_memory).
  std::optional<int64_t> admission_memory;
  int64_t eval_every = 0;         ///< global clocks between evaluations (0: only the final one)
  /// As --slice-auc: a key field of `source` (C1..C26 of criteo data, a schema's key field)
  /// whose value cuts the test rows into slices; the evaluations add the AUC of the 10 slices
  /// holding most rows ("" none).
  std::string slice_auc;
  std::string metrics;            ///< a JSONL file of events ("" none)
  std::string tensorboard_dir;    ///< TensorBoard event files, as --tensorboard ("" none)
  bool progress = false;          ///< draw the progress line on stdout
  int threads = 0;                ///< CAF scheduler threads (0: one per core)
  // Checkpoints, as --checkpoint-dir, --checkpoint-every and --resume DIR (train() only).
  std::string checkpoint_dir;     ///< write checkpoints (ckpt-<clock>) here ("" none)
  int64_t checkpoint_every = 0;   ///< global clocks between checkpoints (0: only the last)
  /// Every N-th checkpoint is full, the ones between hold only the sparse rows changed since
  /// the previous one (deltas), as --full-checkpoint-every (1: every one full).
  int full_checkpoint_every = 10;
  /// A file holding the key that signs the checkpoints written and checks those resumed from
  /// (HMAC-SHA256 of each manifest), as --checkpoint-key ("" unsigned).
  std::string checkpoint_key;
  /// Continue the run from the newest valid checkpoint in this directory (a ckpt-<clock> or a
  /// root of them), which must be this run's: the same model, data rows, batch, seed, shards
  /// and workers ("" start fresh). The metrics file is then appended to.
  std::string resume;
  /// Fault injection (train() only), as `--kill ROLE:I@clock=C`: the actor `role`:`index`
  /// ("worker", "ps" or "evaluator") is killed once the global clock reaches `at_clock`, and the
  /// runtime recovers as from a real loss (a shard: from the newest checkpoint).
  struct kill_at {
    std::string role;
    int32_t index = 0;
    int64_t at_clock = 0;
  };
  std::vector<kill_at> kills;
  /// Changes of the number of shards or workers while training (train() only), as `--resize
  /// ps=N,workers=M@clock=C`: once every shard has reached clock `at_clock`, the run goes on
  /// there on `ps` shards (the fewest buckets and dense blocks changing shard) and `workers`
  /// workers (every minibatch not trained yet shared out among them, so the epochs still train
  /// each planned minibatch once); 0 leaves that number as it is. A stop at that clock: in sync
  /// mode the parameters are those of the run never resized. In clock order.
  struct resize_at {
    int32_t ps = 0;
    int64_t at_clock = 0;
    int32_t workers = 0;
  };
  std::vector<resize_at> resizes;
  /// How a change of shards moves the sparse rows, as --copy-ahead: "always" copies them to
  /// their new shard while the run trains (the stop at the clock then takes what changed
  /// since), "never" moves them all at the clock, "auto" copies ahead when this process has a
  /// core beyond its workers and shards (the copy costs as much work as the move: on cores
  /// that are all busy it slows the training around it more than it shortens the stop).
  std::string copy_ahead = "auto";
  /// Hot standbys per shard, as --replicas (train() only): 0 none (a lost shard rolls the run
  /// back to its newest checkpoint), 1 a standby that takes over with no update lost.
  int replicas = 0;
  // Exports, as --export-dir, --export-every and --full-export-every (train() only).
  /// After a successful run, export the model (an MLP or a CTR model) to export_dir/<version>/,
  /// its test split read from `source` unless given in memory ("" none): model.capnp,
  /// model.onnx, metadata.json (actors/serving/EXPORT_FORMAT.md).
  std::string export_dir;
  /// Also write a version every this many global clocks while training (0: none): a full one,
  /// then deltas of it (a CTR model's changed rows, removed keys and dense tensors; an MLP's are
  /// all full). A full one is scored on `source`'s test split (refused with `test` in memory).
  int64_t export_every = 0;
  /// Every N-th version while training is full, the ones between deltas (1: every one full).
  int full_export_every = 10;
};

/// Trains to the end and returns the summary (final test metrics, samples/s, staleness, the
/// final parameters per shard), or the error that ended the run (a bad option: invalid_spec,
/// naming it). Blocks the calling thread; every actor has stopped when it returns.
caf::expected<run_summary> train(const train_options& opts);

/// The final parameters of a summary, flat in model order (every tensor of `model`).
caf::expected<std::vector<float>> final_parameters(const run_summary& summary,
                                                   const train_options& opts);

// --- the runtime owns the loop, one process per task (TF_CONFIG) --------------------------

/// How a task process talks to its peers.
struct task_options {
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};  ///< retrying peers
  std::chrono::milliseconds heartbeat{500};      ///< between processes
  std::chrono::milliseconds peer_timeout{4000};  ///< silence after which a peer is lost
  int threads = 0;                               ///< CAF scheduler threads (0: one per core)
};

/// The task TF_CONFIG names for this process ({"type": "chief", "index": 0}), or the error
/// naming what is wrong with TF_CONFIG.
caf::expected<task_id> task_of(const std::string& tf_config);

/// This process is the ps, worker or evaluator task that TF_CONFIG names
///   {"cluster": {"chief": [...], "ps": [...], "worker": [...], "evaluator": [...]},
///    "task": {"type": "worker", "index": 0}}
/// and serves until the chief ends the run. Returns the task's exit status: 0 the run
/// completed, 138 (retryable) the chief was lost or unreachable or stopped the run early, or
/// the run failed in a way a restart may cure, 1 its role failed or the run failed in a way a
/// restart would repeat (as the chief exits), 2 it could not start (a bad TF_CONFIG, its port
/// in use: logged); README's "Exit codes". The model plug-in the chief names must be
/// registered in this process too.
///
/// CAF 0.17: destroying the actor system of a task whose peers have gone may wait for them
/// forever, so this one is left to the end of the process: end it with std::_Exit(status).
int serve_task(const std::string& tf_config, const task_options& task = {});

/// This process is the chief of the TF_CONFIG cluster: trains with `opts` (ps and workers
/// must agree with the cluster, or be left at their defaults) on the data `data` describes,
/// which every worker and the evaluator load themselves (opts.train and opts.test are not
/// used). Returns the summary once every task has stopped, or the error that ended the run.
caf::expected<run_summary> train_cluster(const std::string& tf_config, train_options opts,
                                         const data_source& data, const task_options& task = {});

// --- you own the loop ---------------------------------------------------------------------

/// What the shards of a user-driven run need: the model's tensors and how they learn.
/// The schedule, unset, is cosine over total_clocks when given, else constant.
struct cluster_options : common_run_options {
  cluster_options() { workers = 1; }  // unless set: one worker, calling push_pull each clock
  int64_t total_clocks = 0;       ///< clocks per worker, for decaying schedules (0: unknown)
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};  ///< per request
};

class worker_client;
namespace detail {
struct cluster_core;
}

/// What a cluster's checkpoint() wrote.
struct cluster_checkpoint {
  std::string dir;     ///< ROOT/ckpt-<clock>
  int64_t clock = 0;   ///< the clock its state is of (the shards' min clock)
  uint64_t bytes = 0;  ///< the shard files' bytes
};

/// P parameter shards in this process, initialised from the model's initializers, for W
/// workers that own their loop. Thread-safe: each worker_client may live on its own thread.
class local_cluster {
public:
  /// Spawns and initialises the shards; throws std::invalid_argument naming a bad option.
  local_cluster(const model_spec& model, const cluster_options& opts);
  ~local_cluster();  ///< stops the shards (pending requests fail)
  local_cluster(const local_cluster&) = delete;
  local_cluster& operator=(const local_cluster&) = delete;

  /// The client of worker `w` (0 ≤ w < workers). One client per worker and thread.
  worker_client worker(int w);

  /// Floats in the model (the size of params and grad buffers, model order).
  std::size_t total_floats() const;

  /// The current values, at once (never held by the consistency rule), flat in model order.
  caf::expected<std::vector<float>> snapshot();

  /// Writes every shard's whole state (dense parameters, optimizer state, every sparse table's
  /// rows with their optimizer state and metadata) into root/ckpt-<clock>/, in the format and
  /// with the manifest --checkpoint-dir writes (actors/storage/CHECKPOINT_FORMAT.md). The clock
  /// is the largest of the shards' min clocks when asked; a shard behind answers once its min
  /// clock gets there. Taken between clocks (every worker has waited its last push) the state is
  /// exactly the one after that clock's update in sync mode; in ssp and async it may hold pushes
  /// of workers ahead of it. An error when writing fails, when no worker is live any more
  /// (after every finish()) or when a shard does not answer within the timeout.
  caf::expected<cluster_checkpoint> checkpoint(const std::string& root);

  /// Puts every shard back to the newest valid checkpoint under `path` (a ckpt-<clock>
  /// directory, or a root holding them; written by checkpoint() or by a run's --checkpoint-dir
  /// of the same model), every worker live at its clock; returns that clock, from which the
  /// workers go on (pull, push_pull of that clock). Refused, naming the difference, for a
  /// checkpoint of another model, table layout, optimizer, worker or shard count. Requests in
  /// flight fail with rolled_back.
  caf::expected<int64_t> restore(const std::string& path);

  /// Goes on with `ps` shards and `workers` workers (each 0: as many as now): every shard's whole
  /// state is taken at one clock (as checkpoint() takes it), cut for the new number of shards
  /// as a live resize cuts it (the fewest buckets and dense blocks change shard) and handed to
  /// the shards of the new size; returns that clock, from which every worker of the new number
  /// goes on (pull, push_pull of that clock), as after restore(). Call it with no call of any
  /// worker in flight (every ticket waited): in sync mode the run then goes on exactly as one
  /// started at the new size from that state. After a change of workers a minibatch teaches as
  /// much as before and a decaying schedule runs on the minibatches trained, as with --resize;
  /// a client of a worker beyond the new number is refused by the shards. Refused, naming the
  /// reason, for a count out of range; nothing changes then.
  caf::expected<int64_t> scale(int ps, int workers = 0);

private:
  std::shared_ptr<detail::cluster_core> core_;
};

/// This process's task in a cluster of processes that runs a loop of your own, from TF_CONFIG:
///   {"cluster": {"ps": ["h1:2222", ...], "worker": ["h2:2222", ...]},
///    "task": {"type": "worker", "index": 0}}
/// A ps task hosts one shard until every worker has called finish(). A worker task connects to
/// every shard (retrying until opts.timeout) and initialises it: every worker sends the same
/// init and a shard keeps the first, so no task waits for another. opts.ps and opts.workers are
/// the cluster's: the first `workers` worker tasks TF_CONFIG lists (0: all) train, and the first
/// `shards` ps tasks (0: all) hold shards; those beyond are spares that scale() may take in (a
/// spare ps task serves, a spare worker task waits in worker()).
///
/// CAF 0.17: the actor system of a task whose peers have gone may wait for them forever when
/// destroyed; end such a process with std::_Exit once its work is done, as `actorps` does
/// (apps/examples/kv_loop.cpp shows it).
class task_cluster {
public:
  /// Throws std::invalid_argument naming what is wrong with TF_CONFIG, the model, `shards` or
  /// `workers` (which every task of the cluster is given alike).
  task_cluster(const std::string& tf_config, const model_spec& model, cluster_options opts,
               int shards = 0, int workers = 0);
  ~task_cluster();
  task_cluster(const task_cluster&) = delete;
  task_cluster& operator=(const task_cluster&) = delete;

  bool is_ps() const;  ///< else a worker
  int index() const;
  int workers() const;  ///< the workers in the job now
  /// A worker task: whether it is in the job (false for a spare not taken in yet, and for a
  /// worker a scale() left out, which then calls finish() and ends).
  bool in_job() const;
  /// A worker task in the job: the clock it goes on from (pull, push_pull of that clock): 0 from
  /// the start, else the clock of the change that took it in.
  int64_t joined_at() const;
  std::size_t total_floats() const;

  /// A ps task: hosts the shard until every worker has finished (0); 2 when it cannot listen on
  /// its address.
  int serve();

  /// A worker task: its client (connecting and initialising the shards on the first call), or
  /// the error naming the shard that could not be reached or refused the init. A spare worker
  /// task first waits at ps:0, with no timeout, until a scale() takes it in: it then goes on
  /// from joined_at(), at the job's size then (workers()). When every worker in the job has
  /// finished without taking it in, the error says so, and every ps task has heard that this
  /// worker is done (no finish() to call).
  caf::expected<worker_client> worker();

  /// A worker task, after worker() and before finish(): returns once every other worker in the
  /// job has called finish(), so that snapshot() then gives the run's final parameters (the
  /// worker that evaluates the model asks; the ps tasks serve until it says done too). Waits as
  /// long as the others train: a worker that never finishes keeps it waiting, as it keeps
  /// serve() serving.
  caf::error await_others();

  /// A worker task, after worker(): tells every ps task that this worker is done.
  caf::error finish();

  /// The current values of every shard (after worker()), flat in model order.
  caf::expected<std::vector<float>> snapshot();

  /// A worker task (after worker()): local_cluster::checkpoint; the directory is this
  /// process's. One worker takes it.
  caf::expected<cluster_checkpoint> checkpoint(const std::string& root);
  /// A worker task (after worker()): local_cluster::restore, once every worker task has
  /// connected (a shard takes no init after a restore) and before any trains on.
  caf::expected<int64_t> restore(const std::string& path);

  /// A worker task in the job (after worker()): goes on with the first `ps` ps tasks TF_CONFIG
  /// lists as the shards and the first `workers` worker tasks (each 0: as many as now), as
  /// local_cluster::scale does: the shards' state at one clock is cut for the new size (the
  /// fewest buckets and dense blocks change shard) and handed to the shards of that size;
  /// returns that clock, from which this worker goes on (its client talks to the new shards from
  /// its next call). Every worker task in the job and not finished calls it, at the same point
  /// of its loop with no call in flight (every ticket waited): each waits at ps:0 until all
  /// have; worker 0 then moves the state. A growth takes in spare ps tasks (serving) and spare
  /// worker tasks (waiting in worker(); one not started yet is waited for from the change's
  /// clock on, in sync mode by every other); a worker beyond the new number is out of the job
  /// (in_job() false: it calls finish() and ends), and the ps tasks a shrink leaves out hear
  /// from every worker that it is done, and their serve() returns 0. After a change of workers
  /// a minibatch teaches as much as before and a decaying schedule runs on the minibatches
  /// trained, as with --resize. Refused, naming the reason, for a number out of range or more
  /// than TF_CONFIG lists, and for every worker when two ask for different numbers (nothing
  /// changes then); an error after worker 0 began handing out the parts leaves the shards'
  /// state unreliable (restore() a checkpoint).
  caf::expected<int64_t> scale(int ps, int workers = 0);

  struct impl;

private:
  std::shared_ptr<impl> impl_;
};

/// A worker's connection to the shards, ps-lite's KVWorker in size. Calls return a ticket at
/// once; wait(ticket) blocks until every shard has answered. Buffers passed in must stay valid
/// (and `grad` unchanged) until that ticket's wait returns.
/// Rows of one sparse table to pull in a call: `count` keys (any order, repeats allowed); their
/// rows (the table's dim floats each, in the keys' order) go to rows_out.
struct sparse_pull {
  uint32_t table = 0;          ///< index in the model's sparse_tables
  const uint64_t* keys = nullptr;
  std::size_t count = 0;
  float* rows_out = nullptr;   ///< count × dim floats
};

/// Gradient rows of one sparse table to push in a call: `count` keys and their rows (a key named
/// twice pushes the sum of its rows, as the runtime's worker sums a key's uses in a minibatch).
struct sparse_push {
  uint32_t table = 0;
  const uint64_t* keys = nullptr;
  std::size_t count = 0;
  const float* grads = nullptr;  ///< count × dim floats, the gradient of the mean loss
};

class worker_client {
public:
  using ticket = int64_t;

  /// Pulls the parameters for computing `clock` into params_out (total_floats() floats), and
  /// the rows of the sparse keys in `rows`. The shards answer once the consistency rule allows
  /// (ssp: min clock ≥ clock − s). Every pointer must stay valid until wait(ticket) returns.
  ticket pull(int64_t clock, float* params_out, const std::vector<sparse_pull>& rows = {});

  /// Pushes the gradient of `clock` (total_floats() floats, model order) with the gradient rows
  /// in `push`, and pulls the parameters for clock + 1 into params_out with the rows in `rows`:
  /// one round trip per shard, each shard sent only the keys it owns, each key once. This is
  /// the conversation the runtime's own workers hold with the shards (shard_conversation.hpp).
  ticket push_pull(int64_t clock, const float* grad, float* params_out,
                   const std::vector<sparse_push>& push = {},
                   const std::vector<sparse_pull>& rows = {});

  /// The staleness of what arrived (clock − the shards' min clock when they answered, the
  /// largest over shards), or the error: a push refused (its code says why: stale_clock,
  /// non_finite_value, ...), a shard lost, or a shard that did not answer within
  /// cluster_options::timeout (request_timeout, naming the shard, the worker and the clock; in
  /// sync a shard waits for every worker's push of a clock until a worker that is done says so
  /// with finish()). An unknown or already waited ticket is
  /// an error too.
  caf::expected<int64_t> wait(ticket t);

  /// The newest clock whose update is included in what arrived with the last waited ticket
  /// (the smallest over shards; -1: none yet).
  int64_t newest_clock() const { return newest_clock_; }

  /// The consistency rule's staleness bound: S in ssp, 0 in sync, -1 (none) in async.
  int staleness_bound() const;

  /// Overlap: push_pull returns at once, so a loop may compute clock c + 1 on the parameters
  /// pulled for c while its push of c is in flight, and wait on that ticket (into another
  /// buffer) before pushing c + 1. Whether that stays within the bound, given `staleness`, what
  /// wait returned for those parameters: staleness + 1 <= the bound; always in async, never in
  /// sync or ssp 0. When it is false, wait for the push first.
  bool may_compute_ahead(int64_t staleness) const;

  /// This worker is done for good: every shard stops waiting for its pushes (in sync and ssp
  /// the others go on without it, so workers may run different numbers of clocks). Returns once
  /// every shard has taken it; an error when a ticket has not been waited yet, or naming the
  /// shard that refused it. Later calls of pull and push_pull fail. Calling it again does nothing.
  caf::error finish();

  struct impl;
  explicit worker_client(std::shared_ptr<impl> impl) : impl_(std::move(impl)) {}

private:
  ticket submit(bool push, int64_t clock, const float* grad, float* params_out,
                const std::vector<sparse_push>& grads, const std::vector<sparse_pull>& rows);

  std::shared_ptr<impl> impl_;
  int64_t newest_clock_ = -1;
};

} // namespace actorps
