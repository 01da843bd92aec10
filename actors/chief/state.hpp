// Internal to the chief. phases.cpp: the run's phases and what each does with every message;
// training.cpp, evaluations.cpp, summary.cpp: the training itself; placement.cpp: where the
// roles come from (spawned here, or joined over the network); checkpoints.cpp; recovery.cpp and
// rollback.cpp: failures.
#pragma once

#include "actors/chief/chief.hpp"
#include "actors/chief/failover.hpp"
#include "actors/chief/resize_episode.hpp"
#include "actors/chief/rollback_episode.hpp"
#include "actors/data/stream_watch.hpp"
#include "actors/protocol/data_plan.hpp"
#include "actors/protocol/fan_out.hpp"
#include "actors/chief/metrics.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace actorps::chief_detail {

/// The phases of a run, in order (phases.cpp draws them); the chief's behaviour is that of its
/// phase. A failed run goes to stopping from any phase.
enum class run_phase { waiting, placing, training, rolling_back, resizing, finishing, stopping };

/// Which evaluation is in flight (at most one: training never waits for the evaluator).
enum class evaluation { none, periodic, final_one };

/// An export version asked of the shards (exports.cpp), until it is handed to the writer.
struct export_version {
  int64_t clock = -1;
  int64_t since = -1;  // the clock its states count from (the version asked before); -1: whole
  int deltas = 0;      // deltas since the full version its chain starts from (0: it is full)
  uint64_t ask = 0;    // the ask its answer comes from
  bool answered = false;
  std::vector<wire_buffer> states;
};

struct chief_state {
  static inline const char* name = "chief";
  using time_point = std::chrono::steady_clock::time_point;

  chief_config cfg;
  run_phase phase = run_phase::waiting;  // set with the behaviour by enter() only
  std::shared_ptr<metrics_file> metrics;
  std::unique_ptr<progress_line> progress;
  caf::typed_response_promise<run_summary> run_promise;

  std::vector<ps_shard_actor> shards;        // index = shard id (null until spawned or joined)
  std::vector<worker_actor> workers;         // index = worker id
  evaluator_actor evaluator;
  std::vector<task_node_actor> worker_nodes; // distributed runs: the processes hosting them
  bool roles_placed = false;       // placing: every task joined, the roles are being started
  task_node_actor evaluator_node;

  std::vector<int64_t> clocks;     // finished clocks per worker, from its reports
  // Where each worker is in its data (worker_config::data_offset): worker w's clock c trains its
  // minibatch c - offset, and it is done at clock cfg.steps + offset. Each span is one stretch
  // of clocks trained at one offset, oldest first: a replacement resumes its predecessor's
  // position, a rollback the position its worker had at the checkpoint's clock.
  struct data_span {
    int64_t from = 0;                                      // the first clock
    int64_t until = std::numeric_limits<int64_t>::max();   // the clocks finished, once lost
    int64_t offset = 0;
  };
  std::vector<std::vector<data_span>> data_spans;  // per worker; never empty
  // Once the number of workers changed (--resize workers=N@clock=C): each worker's minibatches
  // (data_plan.hpp), which its positions count in; empty: every worker has cfg.steps of its own
  // part. And the minibatches the workers had trained when they were handed out.
  std::vector<data_plan> plans;
  int64_t batches_before_plans = 0;
  int64_t plans_from = 0;  // the clock they were handed out at
  std::vector<bool> live, done;
  std::vector<double> last_loss;
  int64_t samples = 0;             // rows this process's run computed (a resume's start at 0)
  int64_t max_staleness = 0;
  int failures = 0;
  std::set<std::string> backends;  // what the workers report computing on
  std::set<caf::actor_addr> stopping_tasks;  // distributed: told to stop, not yet down
  // what stop_run tells every role: the run ended (user_shutdown), or was interrupted
  caf::error stop_reason = caf::make_error(caf::exit_reason::user_shutdown);
  int interrupts = 0;              // stop requests (signals) received (interrupt.cpp)
  std::string stopped_by;          // the signal that stopped the run early, if one did
  int64_t stopped_at = -1;         // the global clock it stopped at

  // checkpoints (one in flight at most; training goes on meanwhile)
  checkpoint_io_actor io;          // the chief's disk actor (null without --checkpoint-dir)
  bool checkpoint_in_flight = false;
  // A rollback abandons the checkpoint in flight; its late replies may come once training has
  // resumed, with another checkpoint in flight, so the phase cannot tell them apart: this can.
  uint64_t checkpoint_generation = 0;
  int64_t next_checkpoint = 0;     // global clock of the next one
  int64_t last_checkpoint = -1;    // clock of the newest complete one
  // The chain the next delta checkpoint continues: its base (the newest full one) and
  // predecessor (the newest one), and the deltas written on that base so far.
  checkpoint_link chain;
  int chain_deltas = 0;
  int checkpoints = 0;
  int checkpoint_failures = 0;
  std::string checkpoint_error;    // why the last failed one did
  int64_t resumed_from = -1;
  int64_t start_clock = 0;         // where this run (or the last rollback) began
  std::function<void()> after_checkpoint;  // runs once the one in flight has ended

  // failures
  int recoveries = 0;
  std::vector<bool> kill_done;
  std::vector<int> replacements;   // per worker
  std::vector<bool> released;      // per worker: done, and let go by the shards (recovery.cpp)
  int evaluator_replacements = 0;
  std::vector<uint32_t> incarnation;  // per worker: the spawn in charge now (a replacement
                                      // under way stops when it is no longer its own)
  uint32_t next_incarnation = 1;
  std::set<int32_t> replacing;     // workers whose replacement is under way
  // Minibatches a lost worker pushed to every shard but never reported (the shards' word at its
  // rejoin against its reports), kept until the recovery event that says so.
  std::map<int32_t, int64_t> unreported;
  std::set<int32_t> parked;        // workers that stopped because a shard is gone (they
                                   // restart with the shard's recovery)
  // Rollbacks begun. It tags the rejoin_due timer and an evaluator restart, whose answers may
  // come after the rollback they belong to (or one after it) is over: the phase cannot tell.
  uint64_t rollbacks = 0;
  struct rollback_state {
    int32_t shard = -1;            // the first lost (the missing ones: their slots are empty)
    int64_t failed_at = 0;         // global clock when it was lost
    time_point detected;
    int64_t retrained = 0;         // minibatches the workers had trained past the checkpoint
  } rollback;
  // The rollback episode restoring the shards (rollback.cpp), null when none runs: an answer
  // from another (aborted) one is ignored.
  rollback_episode_actor restoring;
  // An episode stopped (a shard lost again while it restored), until it is down: the next one
  // starts then, so no restore of the stopped one (sent as it handled its request, on another
  // thread) reaches a shard after the next one's and puts another state back.
  caf::actor_addr restoring_replaced;
  // distributed: lost worker or evaluator processes we wait to see again, and since when
  std::map<role_id, time_point> awaiting_rejoin;
  // distributed: tasks that said they are exiting on their own, and why (a signal's name);
  // their loss is logged as that leave (recovery.cpp: loss_reason)
  std::map<role_id, std::string> leaving;
  uint64_t refused_here = 0;  // messages the chief itself refused as not authorised
  // Refusals the workers and the evaluator report (a count since each started): the last count
  // each reported, and the sum of what those counts added.
  std::map<role_id, int64_t> reported_refusals;
  uint64_t refused_by_roles = 0;
  void note_reported_refusals(role_id role, int64_t count) {
    if (count < 0) return;
    auto& last = reported_refusals[role];
    refused_by_roles += static_cast<uint64_t>(count >= last ? count - last : count);  // lower:
    last = count;                                                    // a new process counting
  }
  // Distributed: the worker starts whose node has not answered yet. A node lost meanwhile
  // answers them as failed at once (fail_pending_start): a frozen process would otherwise hold
  // the start, and a rollback waiting for it, for the whole request timeout.
  // Each is the start's one answer, emptied once given.
  std::map<int32_t, std::shared_ptr<std::function<void(bool)>>> pending_starts;

  // changes of the shard or worker count (--resize; resize.cpp), in the order planned
  std::size_t resizes_done = 0;   // of cfg.resizes: begun (and over, unless one runs now)
  bool resize_asked = false;      // the shards were asked for their state at the next one's clock
  // Bumped when the state asked for no longer counts (a rollback replaces it, the run ends):
  // the answers of an earlier ask are told apart.
  uint64_t resize_generation = 0;
  resize_episode_actor resizing;  // the episode under way (resize_episode.cpp), null when none
  struct resize_run {
    int from = 0, to = 0;         // shards
    int workers_from = 0, workers_to = 0;
    int64_t clock = 0;            // the clock boundary of the change
    std::size_t buckets = 0, blocks = 0;  // that change shard
    time_point frozen;            // every shard's hand-over at the clock was in hand
    // The old shards' hand-overs at the clock (shared bytes), by old shard: [0] its dense
    // blocks and sketches, [1 + s] the rows of the buckets that leave it for shard s.
    std::vector<std::vector<wire_buffer>> states;
    uint64_t handed_over = 0;     // their bytes
    bool keeps_workers = false;   // a change of shards only: the workers stay
    std::size_t kept = 0;         // workers that took the new shards where they were
    // shards the resize spawned, lost while the parts moved and given theirs again, and when
    std::vector<std::pair<int32_t, time_point>> lost;
    // the rows copied ahead for it (copy_ahead.cpp): bytes, copies, and the copy's time (-1: none)
    uint64_t copied = 0, copies = 0;
    double copy_ms = -1;
    int64_t copy_from = -1;       // the run's clock when the copy began
    // minibatches lost workers pushed but never reported, told by this event rather than by a
    // recovery of an index that a change of workers gives another share
    int64_t unreported = 0;
  } resize;
  // The rows a change of shards moves, copied ahead while the run trains (copy_ahead.cpp): the
  // old shards copy them in bounded steps, each new shard (spawned here, or a spare ps task's)
  // keeps its copies aside, and the hand-overs at the clock then hold only what changed since.
  struct copy_ahead_run {
    uint64_t generation = 0;              // the resize's (resize_generation); 0: none
    int64_t clock = 0;                    // the resize's clock
    int32_t to = 0;                       // its number of shards
    int64_t from_clock = 0;               // the run's clock when the copy began
    std::vector<uint16_t> placement;      // its bucket placement
    std::vector<ps_shard_actor> arriving; // the shards beyond the old ones: spawned for it, or
                                          // (distributed) the spare ps tasks' it will take
    std::vector<bool> arrived_lost;       // by those: lost before the change took them
    // By shard of the new size: the copies it took (given again to a replacement).
    std::vector<std::vector<wire_buffer>> staged;
    std::size_t in_flight = 0;            // copy steps and copies on their way
    caf::error failed;                    // a copy a shard refused: the change cannot use them
    uint64_t bytes = 0, chunks = 0;
    time_point began, ended;
    // the hand-overs in hand, kept while copies are still on their way
    std::shared_ptr<std::vector<std::vector<wire_buffer>>> held_states;
  } copy;

  // distributed runs: ps tasks beyond the run's shards that joined and wait to be taken into
  // it by a growth (spare_tasks.cpp), by ps index
  struct spare_task {
    ps_shard_actor shard;
    ps_task_actor task;
    host_port address;  // where workers dial it, from its cluster spec
  };
  std::map<int32_t, spare_task> spares;
  uint64_t spares_joined = 0;
  // worker tasks beyond the run's workers that joined and wait (spare_workers.cpp), by index
  struct spare_worker {
    task_node_actor node;
    host_port address;
  };
  std::map<int32_t, spare_worker> spare_workers;
  // actorps scale (scale_request.cpp): the request whose change is asked or under way, its
  // answer once the change is done, and how far ahead of the newest reported clock the change
  // is asked (doubled each time the shards are past it already)
  caf::typed_response_promise<int32_t, int32_t> scale_answer;
  int32_t scale_to = 0;
  int32_t scale_workers_to = 0;
  int64_t scale_margin = 0;

  // hot standbys (--replicas 1; standbys.cpp)
  std::vector<ps_shard_actor> standbys;  // index = shard id; null: none
  std::vector<ps_task_actor> ps_tasks;   // distributed runs: index = ps task, as joined
  std::vector<int32_t> primary_host;     // distributed runs: the ps task serving each shard
  // distributed runs, by ps task: the unused shard of a process that came back as a host of
  // standbys (rejoin_as_standby_host); its process ends with it, so the end of the run stops it
  std::vector<ps_shard_actor> idle_shards;
  std::vector<bool> standby_ready;       // it holds its primary's state (the image acknowledged)
  std::vector<bool> spawning_standby;    // a ps task is spawning one (distributed runs)
  std::vector<int32_t> standby_host;     // distributed runs: the ps task holding it; -1: here
  // Distributed runs: a ps task asked to host a standby dials its primary's task. Two tasks
  // dialling each other at once make CAF drop one of the two connections mid-handshake, so
  // the asks of one pair of tasks go one at a time: by pair (lower task, higher task), those
  // waiting for the ask in flight (present while one is).
  std::map<std::pair<int32_t, int32_t>, std::deque<std::function<void()>>> standby_dials;
  // Bumped by drop_standbys: a standby whose spawn was asked for before (a ps task answers
  // late) belongs to state that has been replaced, and is stopped when it comes.
  uint64_t standby_epoch = 0;
  // By shard: what waits for that shard's fail-over (a rejoin or admit asked of a primary
  // that may be lost before it answers; recovery.cpp), run once its fail-over reports done.
  std::vector<std::vector<std::function<void()>>> after_failover;
  // Fail-overs under way, by shard: from the primary's loss until its standby serves every
  // worker (the episode actor, failover.cpp) and the evaluator is set up on the new shards.
  // Training does not end meanwhile (check_all_done); a rollback or the run's end aborts them.
  struct failover_run {
    failover_episode_actor episode;
    bool finishing = false;  // it began while the run was finishing: the final steps start over
    bool reported = false;   // the episode is over; the evaluator is being set up again
    time_point detected;     // the primary was found lost
  };
  std::map<int32_t, failover_run> failing_over;
  int failovers = 0;                     // lost primaries whose standby took over
  int rereplications = 0;                // standbys built again from a live primary

  // evaluations
  evaluation eval_in_flight = evaluation::none;
  // An abandoned evaluation (its evaluator lost) may still answer while a newer one is in
  // flight, in the same phase: its replies are told apart by this.
  uint64_t eval_generation = 0;
  std::function<void()> after_eval;  // runs once the one in flight has ended

  // export versions while training (exports.cpp): two asked of the shards ahead of their clock,
  // three asked or waiting for the writer, and one being written
  caf::actor export_writer;        // spawned with the first version
  std::deque<export_version> exports;  // asked or waiting, in clock order
  uint64_t export_asks = 0;        // asks sent: an answer to an ask made again is told apart
  int64_t last_export = -1;        // the newest clock asked
  int64_t export_writing = -1;     // the clock being written; -1: none
  int64_t export_chain = -1;       // the newest version asked and not failed, which the next may
                                   // be a delta of; -1: the next is full
  int export_chain_deltas = 0;     // its deltas since the full version its chain starts from
  std::function<void()> after_export;  // runs once the version being written is
  // The final steps (final checkpoint, final evaluation, final state) start over after a
  // fail-over or a rollback while the run is finishing: an earlier attempt's answers are told
  // apart.
  uint64_t finishing_attempt = 0;
  int64_t next_eval = 0;
  double last_accuracy = -1, last_test_loss = -1, last_auc = -1, last_gauc = -1,
         last_calibration = -1;
  std::vector<slice_report> last_slices;  // --slice-auc: the last evaluation's
  int64_t last_slice_rest_rows = -1;
  int64_t last_sparse_rows = -1;   // over every shard and table, at the last evaluation; -1: none
  int evaluations = 0;             // reports that scored at least one test row

  std::optional<time_point> start, end;  // training began, ended

  // Following a stream (--follow; follow.cpp)
  std::unique_ptr<stream_watch> watch;  // the directory's watch, from the start of training
  int64_t follow_until = -1;       // the workers compute clock c once c + 1 < it; -1: no stream
  bool stream_ended = false;       // a stop (file or signal) set the last clock: cfg.steps

  // How the run ended, for the summary and the exit status (summary.cpp)
  bool workers_lost = false;            // every worker was lost before the last clock
  bool final_checkpoint_failed = false; // the end's checkpoint could not be written
  int64_t last_eval_clock = -1;         // the clock of the newest evaluation's parameters
  bool final_evaluator_spawned = false; // simulate: one spawned for the final evaluation

  double elapsed() const {
    if (!start) return 0;
    auto until = end ? *end : std::chrono::steady_clock::now();
    return std::chrono::duration<double>(until - *start).count();
  }
  /// The smallest number of clocks a live worker finished; with none live (every worker lost,
  /// or none started yet), the most any worker finished: never clocks nobody trained.
  int64_t global_clock() const {
    int64_t min = std::numeric_limits<int64_t>::max();
    for (std::size_t w = 0; w < clocks.size(); ++w)
      if (live[w]) min = std::min(min, clocks[w]);
    return min == std::numeric_limits<int64_t>::max() ? trained_clocks() : min;
  }
  /// The clocks trained: the most any worker finished (every worker's once the run is complete).
  int64_t trained_clocks() const {
    return clocks.empty() ? 0 : *std::max_element(clocks.begin(), clocks.end());
  }
  int64_t data_offset(int32_t w) const { return data_spans[w].back().offset; }
  /// Worker w trains no more (lost, or it could not start): its data stays where its reports
  /// left it until a replacement goes on from there.
  void data_stopped(int32_t w) {
    auto& span = data_spans[w].back();
    span.until = std::min(span.until, clocks[w]);
  }
  /// The minibatches of its data worker w has trained (its reports say so) up to now.
  int64_t batches_trained(int32_t w) const {
    const auto& span = data_spans[w].back();
    return std::min(span.until, clocks[w]) - span.offset;
  }
  /// The minibatches of its data worker w had trained when the shards' clock was `clock` (what
  /// a checkpoint at `clock` holds of it; in sync mode exactly). Not from its reports, which
  /// may lag the shards: a worker there is at `clock` at least, unless it was lost before.
  int64_t batches_at(int32_t w, int64_t clock) const {
    const auto& spans = data_spans[w];
    auto span = spans.rbegin();
    while (std::next(span) != spans.rend() && span->from > clock) ++span;
    return std::max<int64_t>(0, std::min(clock, span->until) - span->offset);
  }
  /// The clock training ends at: the furthest a finished worker's data took it (past
  /// cfg.steps when a replacement resumed its predecessor's data later than it left it).
  int64_t final_clock() const {
    auto out = cfg.steps;
    for (std::size_t w = 0; w < done.size(); ++w)
      if (done[w]) out = std::max(out, end_clock(static_cast<int32_t>(w)));
    return out;
  }
  /// The minibatches worker w is to train in all (its plan's, else cfg.steps of its part).
  int64_t batches_planned(int32_t w) const {
    return plans.empty() ? cfg.steps : plan_batches(plans[static_cast<std::size_t>(w)]);
  }
  /// The clock worker w is done at: after the last minibatch of its data.
  int64_t end_clock(int32_t w) const { return batches_planned(w) + data_offset(w); }
  /// Clocks per epoch of the run's first number of workers.
  int64_t steps_per_epoch() const {
    const auto workers = cfg.spec.lr_workers > 0 ? cfg.spec.lr_workers : cfg.spec.workers;
    return std::max<int64_t>(1, cfg.train_rows / (int64_t(workers) * cfg.batch));
  }
  /// The epochs trained by global clock `clock` (minibatches over those of an epoch, once the
  /// number of workers changed).
  double epoch_at(int64_t clock) const {
    return double(schedule_clock(cfg.spec, clock)) / double(steps_per_epoch());
  }
  /// Whether the workers have not been started yet (placing, or waiting for (run)).
  bool before_training() const {
    return phase == run_phase::waiting || phase == run_phase::placing;
  }
};

using self_ptr = chief_actor::stateful_pointer<chief_state>;

// phases.cpp: the transitions
/// Makes `next` the phase: the chief's behaviour is now that phase's.
void enter(self_ptr self, run_phase next);
/// The behaviour of phase `p`.
chief_actor::behavior_type phase_behavior(self_ptr self, run_phase p);
/// placing -> training: every role has started.
void begin_training(self_ptr self);
/// training -> finishing: every live worker is done.
void finish_training(self_ptr self);
/// -> stopping: answers (run) with `err` and stops every role.
void fail_run(self_ptr self, const std::string& what, const caf::error& err);
/// finishing -> stopping: every role is told to stop; the chief quits once all have.
void stop_run(self_ptr self);

// training.cpp
/// training: counts a report and starts whatever its clock makes due (evaluation, kill,
/// checkpoint).
void on_train_report(self_ptr self, const train_report& r);
/// Only counts a report (finishing: what was still on its way).
void record_train_report(self_ptr self, const train_report& r);
void on_worker_done(self_ptr self, int32_t worker);
/// training: once every live worker is done (and no replacement is under way), it is over.
void check_all_done(self_ptr self);
/// Worker w's node is gone: a start of w still waiting for it is answered as failed.
void fail_pending_start(self_ptr self, int32_t w);
/// Worker w's process is lost and expected back (distributed runs): its next process takes over
/// when it joins, or --connect-timeout after `since` the run goes on without it.
void await_worker_process(self_ptr self, int32_t w, chief_state::time_point since);
/// Lost worker w's process (awaited since `since`) had --connect-timeout to come back: the run
/// goes on without it.
void on_worker_due(self_ptr self, int32_t w, int64_t since);
std::string progress_text(const chief_state& st);
/// "cpu", "cuda", or "cpu+cuda" when workers on different hosts chose differently.
std::string backends_text(const chief_state& st);

// evaluations.cpp
/// training: starts a periodic evaluation when the global clock has reached the next one.
void maybe_evaluate(self_ptr self);
/// finishing: the final evaluation (after the one in flight), then the summary.
void evaluate_final(self_ptr self);
/// The evaluation in flight will not come back (its evaluator is gone, or the request failed).
/// A final one is then asked of a fresh evaluator (simulate, once) or the run finishes with the
/// last known figures, unless the run is going back to a checkpoint (`rolling_back`): it
/// finishes again, with a new final evaluation, from there.
void abandon_eval(self_ptr self);
/// The best final figures when no final evaluation can run: the last one that did, with its
/// clock (-1: none did).
eval_report last_known_eval(const chief_state& st);
/// --slice-auc's slices in the metrics events: [{"key": "<the key in decimal>", "rows",
/// "positives", "auc"}, ...], largest first (a key as text: JSON readers lose bits above 2^53).
nlohmann::ordered_json slice_aucs_json(const std::vector<slice_report>& slices);

// exports.cpp
/// training: asks the shards for the states at the next export versions' clocks, ahead of them
/// (they hold the requests until they reach them): two asked, three asked or waiting for the
/// writer, up to the run's end.
void maybe_export(self_ptr self);
/// Whether an export version is asked of the shards (who will reach its clock: some worker is
/// live), waiting for the writer or being written.
bool exports_busy(const chief_state& st);
/// Calls `then` once exports_busy is false (at once when it is).
void after_exports(self_ptr self, std::function<void()> then);

// summary.cpp
/// Collects every shard's statistics and parameters, answers (run) with the summary, stops.
void finish_run(self_ptr self, const eval_report& final_eval);

/// Sends the same request to every shard and calls `done` with the replies in shard order, or
/// `failed` with the first error.
template <class Reply, class Done, class Failed, class... Ts>
void ask_all_shards(self_ptr self, Done done, Failed failed, Ts... xs) {
  const auto& st = self->state;
  ask_each<Reply>(
    st.shards.size(),
    [&](std::size_t s) { return self->request(st.shards[s], st.cfg.request_timeout, xs...); },
    std::move(done), std::move(failed));
}

/// Milliseconds since `t`.
inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// checkpoints.cpp
/// training: starts a checkpoint when the global clock has reached the next one (none in
/// flight).
void maybe_checkpoint(self_ptr self);
/// Writes the checkpoint at `clock` (the shards' state when their min clock reached it) and
/// calls `then` once it is written, has failed (counted) or was refused as
/// checkpoint_superseded or checkpoint_clock_passed (not counted); one at a time.
void take_checkpoint(self_ptr self, int64_t clock, std::function<void()> then);
/// What the next checkpoint will ask of the shards: the changes since the chain's newest link,
/// or -1 (the whole state) when there is none or a full one is due (--full-checkpoint-every).
int64_t next_checkpoint_since(const chief_state& st);
/// The checkpoint in flight will not complete (a shard it asked is lost): its answers are
/// ignored from now on, and what waited for it (the next checkpoint, the final one) goes on.
void abandon_checkpoint(self_ptr self, const std::string& why);
/// Training is over: writes the final checkpoint (if any) and calls `then` once it is done.
void final_checkpoint(self_ptr self, std::function<void()> then);
/// Restores every shard from `ckpt` (or to the initial values when null), then calls `done`;
/// on an error `failed` (by default: the run fails).
/// Each worker's data offset at checkpoint `ckpt` (from its data positions; 0 for a worker whose
/// position is its clock, as in a checkpoint written before positions said otherwise).
std::vector<int64_t> data_offsets_in(const chief_state& st, const loaded_checkpoint& ckpt);
void restore_shards(self_ptr self, std::shared_ptr<const loaded_checkpoint> ckpt,
                    std::function<void()> done,
                    std::function<void(const caf::error&)> failed = {});

// recovery.cpp
void on_down(self_ptr self, const caf::down_msg& dm);
/// Whether a role replaced `so_far` times may be replaced once more (not once training is
/// over: nothing is left for it to do).
bool may_replace(const chief_state& st, int so_far);
/// Whether a request failed because the shard's primary is gone (killed, its process or data
/// link lost): with a standby, one asks the promoted shard again instead.
bool primary_gone(const caf::error& err);
/// Why `role` was lost, for the log and its failure event: "left on SIGTERM" when its task said
/// it is leaving (chief_state::leaving), else the down message's reason.
std::string loss_reason(const chief_state& st, role_id role, const caf::error& reason);
/// A task said it is about to exit on its own (`why`: a signal's name).
void note_leaving(self_ptr self, role_id role, const std::string& why);
void record_failure(self_ptr self, role_id role, const std::string& reason,
                    const std::string& consequence);
/// What a recovery cost the run, as its `recovery` event and log line say.
struct recovery_cost {
  int64_t lost_clocks = 0;        ///< clocks of training undone (a rollback)
  int64_t skipped_samples = 0;    ///< rows of the epoch that will not be trained because of it
  int64_t retrained_samples = 0;  ///< rows trained once more (a rollback undid them)
  int64_t resumed_batch = -1;     ///< a replaced worker: the minibatch of its data it goes on from
  int64_t behind_clocks = 0;      ///< a replaced worker: the clocks it enters after its
                                  ///< predecessor's last, which it trains past the others' end
  int64_t unreported_batches = 0; ///< a replaced worker: minibatches its predecessor pushed to
                                  ///< every shard but was lost before reporting (no train event)
};
void record_recovery(self_ptr self, role_id role, std::chrono::steady_clock::time_point detected,
                     int64_t clock, const recovery_cost& cost);
/// Worker w will not be replaced: the minibatches of its data it had not trained are skipped,
/// as the log and a `skipped` event say (`why`).
void record_skipped(self_ptr self, int32_t w, const std::string& why);
/// The shards stop counting a worker done at its data's end as live while another worker's data
/// goes further (a replacement that resumed its predecessor's position): it would hold the
/// others' pulls at its last clock.
void release_finished_workers(self_ptr self);
/// Kills whatever --kill planned for now (at_clock reached); schedules the timed ones.
void check_kills(self_ptr self);
void schedule_timed_kills(self_ptr self);
void run_kill(self_ptr self, int32_t i);
/// The end of a run: says (log and metrics) which planned kills never fired, as a --kill past
/// the run's last clock would otherwise pass for a run that survived it.
void report_unfired_kills(self_ptr self);
/// Distributed: a lost worker's or evaluator's process is back (join); it takes over.
void on_rejoined_node(self_ptr self, role_id role);

// interrupt.cpp
/// (interrupt, signal): stops the run early and cleanly, after the next checkpoint when
/// checkpoints are on (interrupt.cpp draws what each phase does).
void on_interrupt(self_ptr self, const std::string& signal);

// follow.cpp
/// Following a stream: the clock the workers may compute up to now (worker_config::follow_until)
/// as the files counted so far and the global clock allow; -1 when not following.
int64_t follow_grant(self_ptr self);
/// training: watches the followed directory and the stop file (once).
void start_following(self_ptr self);
/// The workers' reports moved the global clock: raises their grant when it runs low.
void grant_clocks(self_ptr self);
/// (stream, names, numbers): files appeared in the followed directory.
void on_stream_grew(self_ptr self, const std::vector<std::string>& names,
                    const std::vector<int64_t>& numbers);
/// training, following: the stop file exists or a stop signal came (`why`); the run ends at
/// the clock granted so far, as a run ends at its last clock. False when not following or
/// already ending.
bool end_stream(self_ptr self, const std::string& why);

// rollback.cpp
/// Shard s is lost: the run goes back to the newest checkpoint (or fails, when it cannot).
void begin_rollback(self_ptr self, int32_t s, const caf::down_msg& dm);
/// The rollback episode under way (restoring the shards), if any, stops: its answer is ignored.
/// The next one waits for its down (rollback_episode_down).
void abort_rollback_episode(self_ptr self);
/// Whether `dm` is the down of an episode abort_rollback_episode stopped; the rollback goes on
/// then if every shard is present.
bool rollback_episode_down(self_ptr self, const caf::down_msg& dm);
/// Distributed: a lost shard's process is back (join); once every one is, the rollback goes on.
void on_rejoined_shard(self_ptr self, int32_t index);
/// Distributed: the lost shard of rollback number `rollback` had join_timeout to come back.
void on_rejoin_due(self_ptr self, uint64_t rollback);

/// Stops every worker and the evaluator (their state is ahead of the clock the run goes back or
/// on from) under new incarnations; the checkpoint and evaluation in flight are abandoned.
/// `keep_workers` (a change of shards only): the workers, paused at its clock, are not stopped;
/// they take the new shards where they are (restart_roles_at).
void stop_roles(self_ptr self, bool keep_workers = false);
/// Starts every worker again at `clock`, its data where it was then (what it trained since is
/// trained again), and the evaluator; then `then` with the minibatches trained again.
/// `keep_workers`: a worker stop_roles kept, paused at `clock`, is told the new shards instead
/// (worker_actor's resize: its data reader stays); one that refuses, or was lost, is started
/// afresh. st.resize.kept counts those that took it.
void restart_roles_at(self_ptr self, int64_t clock, std::function<void(int64_t)> then,
                      bool keep_workers = false);

// resize.cpp
/// training: asks every shard, ahead of it, for its state at the next --resize's clock (each
/// holds the request until it reaches that clock); the change begins once all have answered.
/// Nothing when none is left or one is asked already.
void arm_next_resize(self_ptr self);
/// The change asked or under way stops (a rollback, the run's end): its episode is killed and
/// an answer already on its way ignored; after a rollback it is asked again.
void abort_resize(self_ptr self);
/// The end of a run: says (log and metrics) which planned resizes never happened.
void report_unfired_resizes(self_ptr self);
/// The change waiting for its copies ahead (copy.held_states) begins.
void begin_held_resize(self_ptr self);

// copy_ahead.cpp
/// training: once the next change of shards is near (a couple of seconds of training before
/// its clock, at the rate so far), the old shards start copying ahead the rows it moves.
void maybe_copy_ahead(self_ptr self);
/// How many clocks ahead a change to `shards` shards asked now is best set so that its rows can
/// be copied ahead first; 0 when they will not be (--copy-ahead, a dense model, no change of
/// shards).
int64_t copy_ahead_lead(self_ptr self, int32_t shards);
/// Whether copies ahead are still on their way (the change waits for them).
bool copy_ahead_in_flight(const chief_state& st);
/// Shard s of the new size, spawned for the copy ahead (monitored): the change takes it; null
/// when there is none (spawned by the change then).
ps_shard_actor take_arriving_shard(self_ptr self, int32_t s);
/// The copy ahead will not be used: its shards not taken stop (a spare ps task's forgets its
/// copies instead), the old shards forget it (their hand-overs are whole again), its record is
/// cleared.
void end_copy_ahead(self_ptr self);
/// The change took the copy ahead (its shards and copies): its record is cleared.
void clear_copy_ahead(self_ptr self);
/// Whether `dm` is a shard of the copy ahead going down (its copies are given again to the one
/// the change spawns or takes instead).
bool arriving_shard_down(self_ptr self, const caf::down_msg& dm);
/// Shard s, one the resize spawned, was lost while the parts move: it is spawned again and the
/// episode gives it its part again (nothing of clock C is lost).
void resize_shard_lost(self_ptr self, int32_t s, const caf::down_msg& dm);
/// Whether losing shard `s` now is resize_shard_lost's: one process, a move under way, a shard
/// the resize spawned (it held nothing before). Any other lost shard sends the run back.
bool resize_can_replace(const chief_state& st, int32_t s);
/// The clock of the next resize not done yet at or after `start_clock`, where a worker starting
/// there pauses (worker_config::pause_at); -1 when none.
int64_t next_resize_clock(const chief_state& st, int64_t start_clock);

// worker_pause.cpp
/// Distributed: every worker still training is told to pause at `clock` (or, where one has
/// begun it, at the latest clock one has not: asked again), then `then` with the clock they
/// all pause at.
void pause_workers_at(self_ptr self, int64_t clock, std::function<void(int64_t)> then);
/// Distributed: the workers pause nowhere again (a change asked of them did not begin).
void release_paused_workers(self_ptr self);

// spare_tasks.cpp
/// Whether ps:index lies beyond the run's shards (distributed runs): its join is a spare's.
bool is_spare_join(self_ptr self, int32_t index);
/// Keeps ps:index (beyond the run's shards) as a spare, or refuses it with the reason: a
/// cluster view that is not the chief's with more ps tasks, or one that does not list it.
caf::error seat_spare(self_ptr self, int32_t index, ps_shard_actor shard, ps_task_actor task,
                      const std::string& view);
/// A spare's process went down: it is dropped. False when `dm` is not a spare's.
bool on_spare_down(self_ptr self, const caf::down_msg& dm);
/// "" when ps:from .. ps:to-1 each have a spare waiting; else the first missing, worded.
std::string missing_spares(const chief_state& st, int32_t from, int32_t to);
/// Distributed: the shards go from `from` to `to` at a resize: those beyond `to` stop (drained:
/// their state is in hand; their tasks exit 0), the spares ps:from .. ps:to-1 (missing_spares
/// found each) become shards, and workers are told their addresses from now on.
void take_spares(self_ptr self, int32_t from, int32_t to);

// spare_workers.cpp
/// Whether worker:index lies beyond the run's workers (distributed runs): its join is a spare's.
bool is_spare_worker_join(self_ptr self, const std::string& type, int32_t index);
/// Keeps worker:index (beyond the run's workers) as a spare, or refuses it with the reason.
caf::error seat_spare_worker(self_ptr self, int32_t index, task_node_actor node,
                             const std::string& view);
/// A spare worker's process went down: it is dropped. False when `dm` is not a spare's.
bool on_spare_worker_down(self_ptr self, const caf::down_msg& dm);
/// "" when worker:from .. worker:to-1 each have a spare waiting; else the first missing, worded.
std::string missing_spare_workers(const chief_state& st, int32_t from, int32_t to);
/// Distributed: the workers go from `from` to `to` at a resize: the tasks beyond `to` are
/// stopped (their clocks before the change are trained; they exit 0), the spare worker tasks
/// worker:from .. worker:to-1 are taken in, their roles started with the others'.
void take_spare_workers(self_ptr self, int32_t from, int32_t to);

// scale_request.cpp
/// (scale, shards, workers): checked, then asked as the next resize; answered by
/// answer_scale_request once it is done, or refused now with the reason.
caf::result<int32_t, int32_t> on_scale_request(self_ptr self, int32_t shards, int32_t workers);
/// Distributed: "" when the run may go on with `shards` and `workers` now (or has as many);
/// else why not (the phase, a change under way, a spare task missing, ...).
std::string scale_refusal(const chief_state& st, int32_t shards, int32_t workers);
/// The change scale_refusal allowed becomes the next resize, a few clocks ahead of the
/// slowest live worker; "" when asked, else why not (the run ends too soon).
std::string schedule_scale(self_ptr self, int32_t shards, int32_t workers);

// row_growth.cpp
/// Distributed, --max-rows-per-shard: the table figures of an evaluation (`stats`, by shard)
/// show a shard at 90 % or more of a table's bound while the spare ps task the next shard
/// would be waits: the run grows onto it (its rows spread, not evicted). Nothing otherwise.
void grow_for_rows(self_ptr self, const std::vector<shard_stats>& stats);
/// A resize to `to` shards and `workers` workers is about to begin with every state in hand:
/// false when it cannot (distributed: a spare it needs is gone), logged, and its scale request
/// refused.
bool resize_can_begin(self_ptr self, int32_t to, int32_t workers);
/// A resize is over: the scale request it served, if any, is answered.
void answer_scale_request(self_ptr self);
/// The shards were past the clock of a requested resize: it is asked again further ahead
/// (true), unless the run ends first (false: the request is refused).
bool ask_scale_later(self_ptr self);
/// A scale request still waiting is refused with `why` (the run ends).
void refuse_scale_request(self_ptr self, const std::string& why);

// standbys.cpp
/// Spawns shard s's standby and has its primary hand it the state (training goes on); `rebuilt`:
/// not the first one, a "rereplicated" event once it holds the state. Nothing without
/// --replicas, in a distributed run, or while s has a standby already.
void build_standby(self_ptr self, int32_t s, bool rebuilt);
void build_missing_standbys(self_ptr self, bool rebuilt);
/// Stops every standby (a rollback replaces the state they hold).
void drop_standbys(self_ptr self);
/// Runs `then` once shard s's standby has taken over from its primary (fail_over), unless a
/// rollback (drop_standbys) comes first: then never.
void on_next_failover(self_ptr self, int32_t s, std::function<void()> then);
/// Whether the down message is a standby's (then handled: dropped and built again).
bool on_standby_down(self_ptr self, const caf::down_msg& dm);
/// Primary s is lost: its standby takes over when it has a ready one (true), else false (the
/// caller rolls back).
bool fail_over(self_ptr self, int32_t s, const caf::down_msg& dm);
/// Worker w is lost: every fail-over episode waiting for its reroute answer stops waiting for it.
void answer_reroutes_of(self_ptr self, int32_t w);
/// (failover, done|failed): a fail-over episode has ended (ignored unless it is one under way).
void on_failover_done(self_ptr self, const failover_done& report);
void on_failover_failed(self_ptr self, const failover_failed& report);
/// Whether the down message is a fail-over episode's (then handled: one that ended without
/// reporting failed).
bool on_failover_down(self_ptr self, const caf::down_msg& dm);
/// Every fail-over under way stops (a rollback, the run's end): its episode is killed and a
/// report already on its way ignored.
void abort_failovers(self_ptr self);

// placement.cpp
/// Spawns the shards (simulate) or checks every ps task has joined (distributed), then
/// initialises them (or restores them from the checkpoint to resume) and starts the other
/// roles; ends in begin_training.
void place_roles(self_ptr self);
/// Starts worker w at `start_clock` (spawned here, or by its process); calls `done` with
/// whether it worked.
void start_worker(self_ptr self, int32_t w, int64_t start_clock, std::function<void(bool)> done);
/// A worker kept through a change of shards, paused at `clock`: told the new shards and its
/// incarnation (worker_actor's resize; in another process through its task node, which reaches
/// the shards); one that refuses is started afresh.
/// Calls `done` with whether it goes on.
void resize_worker(self_ptr self, int32_t w, int64_t clock, std::function<void(bool)> done);
/// Starts the evaluator (spawned here, or by its process); calls `done` once it is up.
void start_evaluator(self_ptr self, std::function<void(bool)> done);
/// Spawns shard s in this process (simulate) and monitors it.
void spawn_local_shard(self_ptr self, int32_t s);
/// Distributed: a ps task's shard takes its empty slot and is monitored; an error says why
/// not (no such shard in this cluster, a simulation, or the slot is taken).
caf::error seat_shard(self_ptr self, int32_t index, ps_shard_actor shard, ps_task_actor task);
/// Likewise for a worker or evaluator task's node (`type` as the task says it); the role it is.
caf::expected<role_id> seat_node(self_ptr self, const std::string& type, int32_t index,
                                 task_node_actor node);
/// Distributed: a ps task joins while its slot holds another shard, that of its previous
/// process, whose loss the chief has not seen yet (a restart faster than the down message): the
/// previous one is treated as lost now (recovery.cpp, rollback.cpp) and true returned; the join
/// is then handled afresh by the phase that loss leads to.
bool supersede_shard(self_ptr self, int32_t index, const ps_shard_actor& shard);
/// Distributed, with standbys: a new process of ps task `index`, whose shard a standby in
/// another task serves since a fail-over, joins as a host of standbys only (its own shard,
/// empty, stays unused): it takes the task's slot, is monitored, and in training every shard
/// without a standby gets one (placed by next_live_task). False when the shard is its own.
bool rejoin_as_standby_host(self_ptr self, int32_t index, const ps_shard_actor& shard,
                            const ps_task_actor& task);
/// Likewise for a worker or evaluator task's node.
bool supersede_node(self_ptr self, const std::string& type, int32_t index,
                    const task_node_actor& node);
/// placing: a task has joined; once every one has, the shards are initialised. An evaluator
/// outside the cluster (TFJob leaves it out) is not waited for.
void on_joined_while_placing(self_ptr self, role_id role);
/// training: an evaluator that joined from outside the cluster after the roles were started
/// starts now (nothing when one runs already).
void start_late_evaluator(self_ptr self);
/// placing: the time to join is up; the run fails naming every task still missing.
void on_join_due(self_ptr self);

} // namespace actorps::chief_detail
