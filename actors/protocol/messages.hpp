// The message vocabulary of actorps: atoms, the report types, the typed interface of every role,
// and the one function that registers all of it on an actor_system_config (so every process
// registers the same types under the same names).
#pragma once

#include "actors/protocol/checkpoint_types.hpp"
#include "actors/protocol/parameter_destination.hpp"
#include "actors/protocol/push_request.hpp"
#include "actors/protocol/shard_verbs.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/ps/run_summary.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

// --- atoms (CAF 0.17: at most 10 characters; the verbs' own are in shard_verbs.hpp) ---------
using init_atom = caf::atom_constant<caf::atom("init")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using watchdog_atom = caf::atom_constant<caf::atom("watchdog")>;
using train_atom = caf::atom_constant<caf::atom("train")>;
using eval_atom = caf::atom_constant<caf::atom("eval")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using others_atom = caf::atom_constant<caf::atom("others")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using join_atom = caf::atom_constant<caf::atom("join")>;
using setup_atom = caf::atom_constant<caf::atom("setup")>;
using join_due_atom = caf::atom_constant<caf::atom("join_due")>;      // timers of the chief
using rejoin_due_atom = caf::atom_constant<caf::atom("rejoin_due")>;
using worker_due_atom = caf::atom_constant<caf::atom("worker_due")>;
using stop_due_atom = caf::atom_constant<caf::atom("stop_due")>;
using checkpoint_atom = caf::atom_constant<caf::atom("checkpoint")>;
using restore_atom = caf::atom_constant<caf::atom("restore")>;
using rejoin_atom = caf::atom_constant<caf::atom("rejoin")>;
using admit_atom = caf::atom_constant<caf::atom("admit")>;
using prepare_atom = caf::atom_constant<caf::atom("prepare")>;
using write_atom = caf::atom_constant<caf::atom("write")>;
using commit_atom = caf::atom_constant<caf::atom("commit")>;
using load_atom = caf::atom_constant<caf::atom("load")>;
using discard_atom = caf::atom_constant<caf::atom("discard")>;
using kill_atom = caf::atom_constant<caf::atom("kill")>;
using link_atom = caf::atom_constant<caf::atom("link")>;
using shard_atom = caf::atom_constant<caf::atom("shard")>;
using interrupt_atom = caf::atom_constant<caf::atom("interrupt")>;
using scale_atom = caf::atom_constant<caf::atom("scale")>;
// hot standbys (actors/roles/replication.hpp)
using replicate_atom = caf::atom_constant<caf::atom("replicate")>;
using backup_atom = caf::atom_constant<caf::atom("backup")>;
using promote_atom = caf::atom_constant<caf::atom("promote")>;
using reroute_atom = caf::atom_constant<caf::atom("reroute")>;
using standby_atom = caf::atom_constant<caf::atom("standby")>;
using evict_atom = caf::atom_constant<caf::atom("evict")>;  // a shard's sweep, to itself
using failover_atom = caf::atom_constant<caf::atom("failover")>;  // a fail-over's report
using stream_atom = caf::atom_constant<caf::atom("stream")>;  // a followed stream (--follow)
using resize_atom = caf::atom_constant<caf::atom("resize")>;  // a change of the shard count
using pause_atom = caf::atom_constant<caf::atom("pause")>;  // a worker's clock to stop before
using copy_atom = caf::atom_constant<caf::atom("copy")>;  // a resize's rows copied ahead

// --- reports --------------------------------------------------------------------------------

/// A worker's account of one finished clock.
struct train_report {
  int32_t worker = 0;
  int64_t clock = 0;     ///< the clock just finished (0-based)
  double loss = 0;       ///< mean training loss of its minibatch
  int64_t samples = 0;   ///< rows in the minibatch
  int64_t staleness = 0; ///< max over shards of (clock − min clock) of the parameters it used
  std::string backend;   ///< what it computes on: "cpu" or "cuda"
  /// The clock of the newest update included in every shard's parameters it computed on (the
  /// smallest newest_clock of the replies); -1: none
  int64_t newest_clock = -1;
  /// Messages this worker refused as not authorised so far (authorisation.hpp), all told
  int64_t refused = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, train_report& x) {
  return f(caf::meta::type_name("train_report"), x.worker, x.clock, x.loss, x.samples,
           x.staleness, x.backend, x.newest_clock, x.refused);
}

// slice_report, shard_stats and run_summary are public (actors/ps/run_summary.hpp); how CAF
// serialises them is here with the rest of the vocabulary.

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, slice_report& x) {
  return f(caf::meta::type_name("slice_report"), x.key, x.rows, x.positives, x.auc);
}

/// The evaluator's result for one parameter snapshot.
struct eval_report {
  int64_t clock = 0;           ///< global clock the snapshot was requested at
  double test_accuracy = 0;
  double test_loss = 0;        ///< mean cross-entropy over the test set
  int64_t test_rows = 0;
  double eval_seconds = 0;     ///< snapshot + forward pass
  double test_auc = -1;        ///< binary models: ROC AUC (test_loss is then the logloss); -1: none
  int64_t refused = 0;         ///< requests this evaluator refused as not authorised so far
  double test_gauc = -1;       ///< binary models with --gauc-group: the group AUC; -1: none
  double test_calibration = -1;  ///< binary models: mean prediction / mean label; -1: none
  /// Binary models with --slice-auc: the largest slices' AUC, largest first, and the rows of
  /// the others (-1: none).
  std::vector<slice_report> test_slices;
  int64_t test_slice_rest_rows = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, eval_report& x) {
  return f(caf::meta::type_name("eval_report"), x.clock, x.test_accuracy, x.test_loss,
           x.test_rows, x.eval_seconds, x.test_auc, x.refused, x.test_gauc,
           x.test_calibration, x.test_slices, x.test_slice_rest_rows);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_stats& x) {
  return f(caf::meta::type_name("shard_stats"), x.shard, x.updates, x.pushes, x.dropped,
           x.pulls_served, x.pulls_held, x.max_staleness, x.min_clock, x.table_rows,
           x.table_bytes, x.gradients_refused, x.updates_refused, x.checkpoints_refused,
           x.max_gradient, x.refused_unauthorised, x.pushes_deduplicated, x.replicated_bytes,
           x.pushed_bytes, x.replies_streamed, x.pushes_streamed, x.pushes_cut,
           x.pushes_declined, x.norms_refused, x.max_norm_ratio, x.table_rows_peak,
           x.rows_evicted, x.pending_keys, x.admission_bytes);
}

/// A shard's answer to (rejoin, worker): where a replacement for a worker that left enters, and
/// how far its predecessor got here. In sync mode a leaver's push of the clock still being
/// accumulated is applied with that clock's mean (it was sent whole), so `pushed` may be one
/// past `clock`'s min; the chief resumes the replacement's data after the fewest clocks any
/// shard has of the predecessor.
struct rejoin_point {
  int64_t clock = 0;   ///< live from here (>= the min clock), held there until admitted
  int64_t pushed = 0;  ///< clocks of the predecessor this shard has applied or will apply
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rejoin_point& x) {
  return f(caf::meta::type_name("rejoin_point"), x.clock, x.pushed);
}

/// A shard's whole state as its new standby takes it over (replication.hpp): the values,
/// optimizer state and rows as a ShardCheckpoint, the clock table, and in sync mode the pushes
/// of the clock being accumulated, which the standby replays (so that their gradients and kept
/// rows are the primary's, bit for bit).
struct replica_image {
  wire_buffer checkpoint;               ///< ShardCheckpoint of the applied state
  std::vector<int64_t> finished;        ///< per worker, before the replayed pushes
  std::vector<uint32_t> live;           ///< per worker, 1: live
  std::vector<uint32_t> incarnations;   ///< per worker
  /// per worker, the clocks it pushed there, before the replayed pushes (a rejoined worker not
  /// yet admitted counts as finished where its replacement enters: this is its predecessor's)
  std::vector<int64_t> pushed;
  std::vector<wire_buffer> pending;     ///< sync: the pushes of the clock being accumulated
  shard_stats stats;                    ///< the primary's counters, continued by the standby
  uint64_t init_digest = 0;             ///< of the init installed (an identical init is a no-op)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_image& x) {
  return f(caf::meta::type_name("replica_image"), x.checkpoint, x.finished, x.live,
           x.incarnations, x.pushed, x.pending, x.stats, x.init_digest);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_summary& x) {
  return f(caf::meta::type_name("run_summary"), x.mode, x.staleness_bound, x.workers, x.shards,
           x.clocks, x.samples, x.wall_s, x.planned_clocks, x.planned_samples, x.worker_clocks,
           x.end_s, x.workers_lost, x.final_checkpoint_failed, x.last_checkpoint,
           x.final_eval_clock, x.samples_per_s, x.evaluations, x.final_test_accuracy,
           x.final_test_loss, x.final_test_auc, x.max_staleness, x.dropped_messages,
           x.gradients_refused, x.updates_refused, x.checkpoints_refused,
           x.refused_unauthorised, x.norms_refused, x.max_norm_ratio, x.max_gradient,
           x.max_parameter, x.backend, x.failures,
           x.recoveries, x.failovers, x.rereplications, x.checkpoints, x.checkpoint_failures, x.checkpoint_error, x.resumed_from,
           x.stopped_by, x.stopped_at, x.shard_stats_list, x.final_parameters,
           x.final_test_gauc, x.final_test_calibration, x.final_test_slices,
           x.final_test_slice_rest_rows, x.final_block_shards);
}

/// `planned` as the run of `summary` ended: its shard count and dense placement (a --resize
/// changes them), what its final parameters are cut by.
train_spec spec_at_end(const train_spec& planned, const run_summary& summary);

// --- typed interfaces -----------------------------------------------------------------------

/// A parameter shard: owns some blocks and their optimizer state, applies pushed gradients,
/// serves pulls once the run's consistency rule allows (ps_shard.hpp). Its verbs, the requests
/// answered with bytes that the data link carries too, are the rows of shard_verbs.hpp (each
/// explained there); the rest below travel over CAF alone.
using ps_shard_actor = typed_actor_with_verbs<shard_verbs,
  // (init, ShardInit) -> ok: the run's spec and this shard's initial values; comes first.
  caf::replies_to<init_atom, wire_buffer>::with<caf::ok_atom>,
  // (stats) -> the shard's counters.
  caf::replies_to<stats_atom>::with<shard_stats>,
  // (leave, worker): the worker is gone; the clock table stops waiting for it.
  caf::reacts_to<leave_atom, int32_t>,
  // (done, worker) -> ok once applied: a worker of a loop of the user's own has finished for
  // good (worker_client::finish): as leave, answered, so that it knows the shard took it.
  caf::replies_to<done_atom, int32_t>::with<caf::ok_atom>,
  // (rejoin, worker) -> rejoin_point: a replacement for a worker that left; it counts as live
  // at the point's clock (the shard's min clock, or one past it while the leaver's push of the
  // clock still accumulated waits to be applied), which min therefore cannot pass until (admit)
  // says where it enters; and how many clocks of the leaver the shard holds.
  caf::replies_to<rejoin_atom, int32_t>::with<rejoin_point>,
  // (admit, worker, clock, incarnation) -> ok: the replacement enters at `clock` (>= the m it
  // was given); only pushes of that incarnation are accepted from it.
  caf::replies_to<admit_atom, int32_t, int64_t, uint32_t>::with<caf::ok_atom>,
  // (checkpoint, dir, clock) -> file record: writes dir/shard-<i>.capnp once min clock >= clock
  // (held until then); the state is exactly the one after clock's updates in sync mode.
  caf::replies_to<checkpoint_atom, std::string, int64_t>::with<file_record>,
  // (checkpoint, clock) -> ShardCheckpoint: the same state handed to the chief, which writes it
  // (--checkpoint-writer chief: no filesystem shared with the ps tasks needed).
  caf::replies_to<checkpoint_atom, int64_t>::with<wire_buffer>,
  // (checkpoint, dir, clock, since) -> file record, (checkpoint, clock, since) -> bytes: the
  // same, a delta checkpoint's file with `since` >= 0: the sparse rows changed since that
  // clock's checkpoint (the chain's newest), with tombstones (storage/CHECKPOINT_FORMAT.md).
  caf::replies_to<checkpoint_atom, std::string, int64_t, int64_t>::with<file_record>,
  caf::replies_to<checkpoint_atom, int64_t, int64_t>::with<wire_buffer>,
  // (checkpoint, snapshot, clock, since) -> ShardCheckpoint: the state at `clock`, as a
  // checkpoint's, for an export version (--export-every): held until min clock reaches it,
  // kept by nobody, and asked of no checkpoint's schedule (refused once min has passed it).
  // With `since` >= 0 (the previous version's clock) a delta of the sparse rows changed since,
  // with tombstones, when the shard remembers every removal since; else (and with -1) whole.
  caf::replies_to<checkpoint_atom, snapshot_atom, int64_t, int64_t>::with<wire_buffer>,
  // (checkpoint, commit, clock, next_since): the checkpoint at `clock` is on disk; no delta
  // will count from an earlier one (what the shard kept for that is forgotten). `next_since`:
  // what the chief will ask of the next checkpoint (the changes since that clock, or -1: the
  // whole state), so that the shard keeps at the next checkpoint clock only what it will write.
  caf::reacts_to<checkpoint_atom, commit_atom, int64_t, int64_t>,
  // (restore, ShardCheckpoint, incarnations) -> ok: replaces all state with the checkpoint's;
  // every worker is live at its clock, expected with the given incarnation. Held pulls and
  // checkpoints are answered with rolled_back.
  caf::replies_to<restore_atom, wire_buffer, std::vector<uint32_t>>::with<caf::ok_atom>,
  // --- a live resize: the buckets and blocks that change shard move, the rest stays ---
  // (resize, clock, buckets, blocks) -> ShardCheckpoints: at `clock` (held until min reaches
  // it, refused once past): [0] the dense blocks the new dense placement `blocks` (each block's
  // shard, by id; empty: the blocks stay) gives another shard, with their optimizer slots, and
  // each table's admission sketch, [1 + s] the rows and pending counts of the keys whose bucket
  // the new bucket placement gives shard s (empty where none); the shard keeps it all.
  caf::replies_to<resize_atom, int64_t, std::vector<uint16_t>,
                  std::vector<uint16_t>>::with<std::vector<wire_buffer>>,
  // (resize, copy, clock, buckets, budget) -> (done, rows per new shard): one bounded step of
  // copying ahead, while the run trains, the rows the resize at `clock` to the bucket placement
  // `buckets` moves (at most `budget` rows looked at); its hand-over at `clock` then holds only
  // what changed since the copy began. Refused once the shard is at `clock`. Empty `buckets`:
  // that copy is forgotten (the copies marked here, and those kept aside for this shard).
  caf::replies_to<resize_atom, copy_atom, int64_t, std::vector<uint16_t>,
                  uint64_t>::with<bool, std::vector<wire_buffer>>,
  // (resize, copy, rows) -> ok: rows copied ahead to this shard, kept aside until the move.
  caf::replies_to<resize_atom, copy_atom, wire_buffer>::with<caf::ok_atom>,
  // (restore, resize, ShardCheckpoint, parts, incarnations) -> ok: goes on under the file's
  // spec: its dense blocks and sketches, the rows of the buckets the shard keeps left where they
  // are, those it gives away dropped, the rows of the file and of the parts (hand-overs'
  // [1 + s]) taken in; every worker live at its clock with the given incarnation (held
  // requests: rolled_back). A shard not initialised takes them into empty tables.
  caf::replies_to<restore_atom, resize_atom, wire_buffer, std::vector<wire_buffer>,
                  std::vector<uint32_t>>::with<caf::ok_atom>,
  // --- hot standby (replication.hpp); sent by the primary to its standby, or by the chief ---
  // (replicate, Push) -> ok: the standby applies a push its primary accepted, as the primary will.
  caf::replies_to<replicate_atom, wire_buffer>::with<caf::ok_atom>,
  // (replicate, leave | rejoin, worker) -> ok, (replicate, admit, worker, clock, incarnation)
  // -> ok: the standby applies the clock-table change its primary is about to apply.
  caf::replies_to<replicate_atom, leave_atom, int32_t>::with<caf::ok_atom>,
  caf::replies_to<replicate_atom, rejoin_atom, int32_t>::with<caf::ok_atom>,
  caf::replies_to<replicate_atom, admit_atom, int32_t, int64_t, uint32_t>::with<caf::ok_atom>,
  // (replicate, image) -> ok: the standby takes over its primary's whole state.
  caf::replies_to<replicate_atom, replica_image>::with<caf::ok_atom>,
  // (backup, standby) -> bytes: from the chief: `standby` (a ps_shard_actor: the alias cannot
  // name itself) is this shard's standby from now on; answered with the image's bytes once the
  // standby holds the state.
  caf::replies_to<backup_atom, caf::strong_actor_ptr>::with<uint64_t>,
  // (promote) -> clocks in flight: from the chief: this standby is the primary now (its primary
  // is lost); a push it already applied, re-sent, is answered without applying it again.
  // Answers how many clocks the workers are apart on it (max finished - min).
  caf::replies_to<promote_atom>::with<int64_t>,
  // (evict): from the shard itself: one bounded step of its sparse tables' sweep (eviction).
  caf::reacts_to<evict_atom>>::type;

/// What a ps process publishes on its address (distributed runs): it knows where its shard is
/// and where the process's data link listens, so that the shard itself knows nothing of sockets.
using ps_task_actor = caf::typed_actor<
  // (shard) -> the shard this process hosts.
  caf::replies_to<shard_atom>::with<ps_shard_actor>,
  // (link) -> where the data link for pulls, push_pulls and snapshots listens
  // (remote_shard.hpp): a TCP port on the task's host (0: none, everything goes over CAF, as in
  // one process) and the name of a local socket for clients on the same host ("": none).
  caf::replies_to<link_atom>::with<uint16_t, std::string>,
  // (done, worker) -> ok: in a loop of the user's own (ps.hpp's task_cluster), worker `worker`
  // has finished; the task stops its shard once every worker has.
  caf::replies_to<done_atom, int32_t>::with<caf::ok_atom>,
  // (done, others, worker) -> ok, held until every worker in the job but `worker` is done (the
  // job's workers: those ps:0 counts, which alone is asked): the worker that evaluates the
  // final parameters of a loop of the user's own asks first, then says done.
  caf::replies_to<done_atom, others_atom, int32_t>::with<caf::ok_atom>,
  // (scale, worker, shards, workers) -> the clock of the change: a loop of the user's own
  // changes its numbers of shards and workers (task_cluster::scale), asked of ps:0 by every
  // worker in the job and not done, each at the same point of its loop with no call in flight.
  // Worker 0 is answered -1 once all have asked (the shards' state is then complete): it moves
  // the state and says how that went (below); the others are answered the clock it went on
  // from, or its error. Asking for other numbers than a worker waiting refuses both and every
  // one waiting, naming the two.
  caf::replies_to<scale_atom, int32_t, int32_t, int32_t>::with<int64_t>,
  // (scale, done, shards, workers, clock, why) -> ok: worker 0's outcome of the change under
  // way: `why` empty, the run went on at `shards` and `workers` from `clock`; else why not.
  caf::replies_to<scale_atom, done_atom, int32_t, int32_t, int64_t,
                  std::string>::with<caf::ok_atom>,
  // (join, worker) -> every change made so far, as (shards, workers, clock) triples in order:
  // a worker task beyond the job's workers waits at ps:0 until a change takes it in (answered
  // at once when one already has); an error once every worker in the job has finished
  // without it.
  caf::replies_to<join_atom, int32_t>::with<std::vector<int64_t>>,
  // (standby) -> ok: a ps task that dialled this one to host a standby of its shard hears the
  // answer on that connection, so this task knows it directly before any standby exists: a
  // handle of the standby reaching this process through the chief would else route monitoring
  // through the chief, which relays nothing (with TLS it closes that connection).
  caf::replies_to<standby_atom>::with<caf::ok_atom>,
  // (standby, shard, primary task, its address) -> a new, empty shard in this process, the
  // standby of shard `shard` (--replicas 1), which takes replication only from ps:<primary
  // task> and the chief. The address ("host:port") is where this task dials the primary's
  // first: the chief's, since a task that joined later is in no cluster spec given here.
  caf::replies_to<standby_atom, int32_t, int32_t, std::string>::with<ps_shard_actor>>;

/// Disk work for checkpoints (actors/checkpoint_io.hpp).
using checkpoint_io_actor = caf::typed_actor<
  // (prepare, root, clock) -> the new, empty checkpoint directory
  caf::replies_to<prepare_atom, std::string, int64_t>::with<std::string>,
  // (write, path, bytes) -> the file's manifest record, once it is durably on disk
  caf::replies_to<write_atom, std::string, wire_buffer>::with<file_record>,
  // (commit, dir, clock, shard files, RunCheckpoint, keep, link) -> the manifest's SHA-256:
  // run file, manifest (a delta's naming its base and predecessor), pruning
  caf::replies_to<commit_atom, std::string, int64_t, std::vector<file_record>, wire_buffer,
                  int32_t, checkpoint_link>::with<std::string>,
  // (load, path) -> the newest valid checkpoint under path
  caf::replies_to<load_atom, std::string>::with<loaded_checkpoint>,
  // (discard, dir): removes a checkpoint directory whose writing failed (never a complete one)
  caf::reacts_to<discard_atom, std::string>>;

/// The shards a worker talks to after a change of their number, as its process reaches them:
/// their handles (local proxies of a data link, or the shards themselves) and, by shard, where
/// each proxy receives replies in place (worker_config::destinations; empty, or null for a
/// shard without a data link). Local only: it holds the proxies' destinations.
struct worker_shards {
  std::vector<ps_shard_actor> actors;
  std::vector<std::shared_ptr<parameter_destination>> destinations;
};

/// A worker: pull → forward/backward → push, once per clock (worker.hpp).
using worker_actor = caf::typed_actor<
  // (start): begin training.
  caf::reacts_to<start_atom>,
  // (train) -> ok: sends the chief every train report it holds back (a process sends them in
  // batches), answered once sent: its process is about to leave (leave_notice.hpp).
  caf::replies_to<train_atom>::with<caf::ok_atom>,
  // (step): push the gradient computed last (sent to itself after a straggler delay).
  caf::reacts_to<step_atom>,
  // (watchdog): times out the requests in flight to the shards (sent to itself, periodically).
  caf::reacts_to<watchdog_atom>,
  // (reroute, shard, actor) -> requests re-sent: the shard's standby took over (--replicas 1):
  // the request the worker has in flight to it goes again to `actor`, and every later one.
  caf::replies_to<reroute_atom, int32_t, ps_shard_actor>::with<int32_t>,
  // (stream, until, end): following a stream, the worker computes clock c only once c + 1 <
  // until (the files hold the next clock's batch); `end`: its last clock is until - 1.
  caf::reacts_to<stream_atom, int64_t, bool>,
  // (pause, clock) -> the clock it pauses at: it computes no clock from there on
  // (worker_config::pause_at), `clock` or the first it has not begun, if later; -1: it pauses
  // nowhere, and goes on if it waited.
  caf::replies_to<pause_atom, int64_t>::with<int64_t>,
  // (resize, shards, worker_shards, incarnation, pause) -> the clock it goes on at: a change of
  // the number of shards at the clock it paused at, asked by the chief in its process or by its
  // task node (which reached the new shards). It takes the new placement (resized_spec of its
  // spec for `shards`), talks to those shards under `incarnation`, pauses next at `pause` (-1:
  // nowhere) and, on (start), pulls that clock's parameters again: its data reader and trainer
  // stay where they are. Asked before its round of the clock before has ended, it answers once
  // it has.
  caf::replies_to<resize_atom, int32_t, worker_shards, uint32_t, int64_t>::with<int64_t>>;

/// The evaluator: (eval, clock) -> the test metrics of a fresh parameter snapshot.
using evaluator_actor = caf::typed_actor<
  caf::replies_to<eval_atom, int64_t>::with<eval_report>>;

/// The host actor of a worker or evaluator process (distributed runs): when the chief sends
/// the setup it loads the data, connects to the shards and spawns the role in its process.
using task_node_actor = caf::typed_actor<
  // (setup, RoleSetup, standbys, served elsewhere) -> the worker it spawned (its reports go to
  // the chief this node joined); `standbys`: the shards have hot standbys (--replicas 1), so a
  // request to a lost shard waits for the chief's reroute instead of failing the worker.
  // `served elsewhere`, by shard: the shard's handle (a ps_shard_actor) when the ps task at its
  // address in the RoleSetup no longer serves it (its standby, promoted in another ps task, does:
  // reached over CAF), else none; empty: every shard is at its address.
  caf::replies_to<setup_atom, wire_buffer, bool, std::vector<caf::actor>>::with<worker_actor>,
  // (setup, eval, RoleSetup, served elsewhere) -> the evaluator it spawned.
  caf::replies_to<setup_atom, eval_atom, wire_buffer, std::vector<caf::actor>>::with<evaluator_actor>,
  // (resize, worker, RoleSetup, served elsewhere) -> the clock the worker goes on at: a change
  // of the number of shards keeps the worker this node started, paused at the change's clock
  // (its data reader where it is). The node reaches the shards at the setup's addresses (its
  // spec, incarnation and pause_at the worker takes), hands them to the worker (its resize)
  // and closes the worker's links to the old ones once it took them.
  caf::replies_to<resize_atom, worker_actor, wire_buffer, std::vector<caf::actor>>::with<int64_t>>;

/// A fail-over episode's report of success (chief/failover.hpp): shard `shard`'s standby
/// `promoted` serves it, and every worker re-sent its request in flight to it.
struct failover_done {
  int32_t shard = 0;
  ps_shard_actor promoted;
  double ms = 0;                    ///< from the primary's loss until every worker re-sent
  int64_t clocks_in_flight = 0;     ///< the promoted shard's clocks apart when it took over
  int32_t pushes_resent = 0;        ///< by the workers, to the promoted shard
  int64_t pushes_deduplicated = -1; ///< of those, applied already (-1: its counters unread)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, failover_done& x) {
  return f(caf::meta::type_name("failover_done"), x.shard, x.promoted, x.ms, x.clocks_in_flight,
           x.pushes_resent, x.pushes_deduplicated);
}

/// A fail-over episode's report of failure: `promoted` could not take shard `shard` over.
struct failover_failed {
  int32_t shard = 0;
  ps_shard_actor promoted;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, failover_failed& x) {
  return f(caf::meta::type_name("failover_failed"), x.shard, x.promoted, x.reason);
}

/// The chief: runs the training and answers (run) with its summary once it has ended.
using chief_actor = caf::typed_actor<
  // (run) -> summary, when training has ended and every other role has stopped.
  caf::replies_to<run_atom>::with<run_summary>,
  // (train, reports): a worker finished these clocks, in order (one each clock to a chief in
  // the worker's process; batches of at least 20 ms to one elsewhere: worker.cpp).
  caf::reacts_to<train_atom, std::vector<train_report>>,
  // (done, worker): a worker ran all its clocks.
  caf::reacts_to<done_atom, int32_t>,
  // (join, ps index, shard, task, cluster view) -> ok: a ps process offers its shard, and its
  // ps task (where the chief has standbys of other shards spawned, --replicas 1) (distributed
  // runs). The view is the task's cluster spec (chief/cluster_view.hpp): another than the
  // chief's is refused (cluster_mismatch).
  caf::replies_to<join_atom, int32_t, ps_shard_actor, ps_task_actor, std::string>::with<caf::ok_atom>,
  // (join, "worker"|"evaluator", index, node, cluster view) -> ok: a worker or evaluator
  // process joins.
  caf::replies_to<join_atom, std::string, int32_t, task_node_actor, std::string>::with<caf::ok_atom>,
  // (join_due): distributed runs: the time for every task to join has passed.
  caf::reacts_to<join_due_atom>,
  // (rejoin_due, rollback): the shard lost by that rollback (a count) had its time to come back.
  caf::reacts_to<rejoin_due_atom, uint64_t>,
  // (worker_due, w, since): distributed runs: lost worker w (since that steady-clock count) had
  // its time to come back.
  caf::reacts_to<worker_due_atom, int32_t, int64_t>,
  // (stop_due): the run has ended; the time for the tasks to stop has passed.
  caf::reacts_to<stop_due_atom>,
  // (kill, i): fault injection: the i-th planned kill is due (its time has come).
  caf::reacts_to<kill_atom, int32_t>,
  // (interrupt, "SIGTERM"): stop the run early and cleanly (interrupt.cpp).
  caf::reacts_to<interrupt_atom, std::string>,
  // (stream, names, numbers): files that appeared in the followed directory, in name order;
  // numbers holds, per file, its bytes then the rows each worker reads of it (chief/follow.cpp).
  caf::reacts_to<stream_atom, std::vector<std::string>, std::vector<int64_t>>,
  // (scale, shards, workers) -> (shards, workers): a distributed run goes on with that many
  // shards and workers (0: as many as now; actorps scale), the new ones spare ps and worker
  // tasks that joined; answered once the change is done, or refused with the reason
  // (chief/scale_request.cpp). chief:0 or admin:0 only.
  caf::replies_to<scale_atom, int32_t, int32_t>::with<int32_t, int32_t>,
  // (leave, type, index, why) -> ok: that task is about to exit on its own (why: "SIGTERM");
  // its loss, which follows, is a leave (distributed runs).
  caf::replies_to<leave_atom, std::string, int32_t, std::string>::with<caf::ok_atom>,
  // (failover, done|failed): a fail-over episode the chief spawned has ended (this process only).
  caf::reacts_to<failover_atom, failover_done>,
  caf::reacts_to<failover_atom, failover_failed>>;

/// Registers every message type and the error category; call on every actor_system_config.
void register_message_types(caf::actor_system_config& cfg);

} // namespace actorps

// Local only: the destinations are the proxies of this process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorps::worker_shards)
