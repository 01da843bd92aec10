// A parameter shard's state (ps_shard.hpp) and what its files share. From the bottom up:
// shard_refusals.cpp (how it counts and logs what it refuses), shard_pulls.cpp (answered now or
// held by the consistency rule), shard_snapshots.cpp (its state kept at checkpoint clocks),
// dense_update.cpp (one optimizer update of its dense blocks), shard_replicate.hpp (operations
// waiting for the standby), shard_pushes.cpp (pushes and the rising min clock),
// streamed_push.cpp (a push applied as it arrives) and ps_shard.cpp (its behaviour: one handler
// per message). Everything here is the shard's own, in a namespace of its own: no other role
// reaches into it.
#pragma once

#include "actors/roles/clock_table.hpp"
#include "actors/roles/norm_bound.hpp"
#include "actors/roles/ps_shard.hpp"
#include "actors/roles/replication.hpp"
#include "actors/roles/shard_tables.hpp"
#include "actors/protocol/rate_limited_log.hpp"
#include "actors/storage/checkpoint_io.hpp"
#include "actors/protocol/buffer_lease.hpp"
#include "actors/protocol/link_memory.hpp"
#include "actors/protocol/log.hpp"
#include "actors/protocol/reply_stream.hpp"
#include "actors/protocol/wire.hpp"

#include <caf/result.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace actorps::shard_internals {

// --- state ----------------------------------------------------------------------------------

/// The sparse tables' sweep (eviction): one evict message at a time, the shard's to itself.
struct sweep_state {
  bool queued = false;       // an evict message is on its way
  int64_t pass_clock = -1;   // the clock the current or last pass began at; -1: none yet
};

struct held_pull {
  int32_t worker;
  int64_t clock;
  caf::typed_response_promise<wire_buffer> promise;
  wire_buffer request;                  // holds the memory `keys` points to
  std::vector<sparse_rows_view> keys;   // sparse rows to read when it is answered
};

/// A checkpoint asked for before the min clock reached it: written to `dir` (answering
/// `written`), or, without a dir, its bytes handed back (`bytes`: the chief writes them).
/// Snapshots a shard keeps for checkpoints the chief has not asked for yet, at most.
constexpr std::size_t max_snapshots = 4;

/// Where a live resize moves things (hand_over): each bucket's new shard, and each dense block's
/// (empty: every block stays where it is).
struct new_placement {
  std::vector<uint16_t> buckets;
  std::vector<uint16_t> blocks;
};

struct held_checkpoint {
  std::string dir;
  int64_t clock;
  caf::typed_response_promise<file_record> written;
  caf::typed_response_promise<wire_buffer> bytes;
  int64_t since = -1;  ///< a delta's predecessor clock (-1: the whole state)
  /// A live resize's hand-over (hand_over): the new placement, and where its parts go; null
  /// for an export.
  std::shared_ptr<const new_placement> moving_to;
  caf::typed_response_promise<std::vector<wire_buffer>> parts;

  void fail(const caf::error& err) {
    if (moving_to) parts.deliver(err);
    else if (dir.empty()) bytes.deliver(err);
    else written.deliver(err);
  }
};

/// Sync mode: each live worker's gradient for the clock being accumulated.
struct sync_round {
  std::vector<std::vector<float>> grads;  // per worker, the shard's floats
  std::vector<bool> pushed;               // per worker
  std::vector<float> sum;                 // scratch for the mean
};

/// The optimizer's state for the shard's blocks.
struct optimizer_state {
  std::vector<float> values;  // per block: slots × block size floats, at slots × shard_offset
  std::vector<float> next;    // spare buffer of values' size: an update is written here first
  std::size_t slots = 0;
  // Updates applied so far (Adam's bias correction). One count serves every block: each update
  // of a shard touches all its blocks together (sync: a clock's mean; ssp, async: a whole push,
  // which validation makes carry every block), so every block has had exactly `step` updates.
  int64_t step = 0;
};

/// The parameters message for the current values, encoded once and shared by every reader until
/// an update (which alone moves newest_clock) or a new min clock makes it stale.
struct reply_cache {
  wire_buffer reply;
  uint64_t updates = std::numeric_limits<uint64_t>::max();
  int64_t min_clock = -1;
};

// Replies built by reference hold the lease of the buffer they point into (buffer_lease.hpp):
// a reply normally leaves before the second update after it, so fresh buffers are rare.

struct streamed_push;  // a push applied as it arrives (streamed_push.cpp)

struct ps_shard_state {
  static inline const char* name = "ps_shard";

  int32_t shard = -1;
  shard_config config;              // from the shard's own process, never from a message
  train_spec spec;
  std::unique_ptr<block_layout> layout;
  float_buffer params;              // the shard's blocks, contiguous in block-id order
  float_buffer params_next;         // spare buffer of params' size: an update is written here first
  std::shared_ptr<buffer_lease> params_lease;  // held by the replies pointing into params
  std::shared_ptr<buffer_lease> next_lease;    // held by the replies pointing into params_next
  // Where params' and params_next's buffers come back once replies that held them let go: the
  // next update's spare, without allocating, zeroing and faulting in a fresh one.
  std::shared_ptr<buffer_pool> spares = std::make_shared<buffer_pool>();
  optimizer_state opt;
  shard_tables tables;              // the sparse rows whose buckets the spec places here
  sweep_state sweep;
  // The rows a live resize copies ahead to this shard (stage_copy), taken in at the move of
  // that resize's clock; null: none.
  std::unique_ptr<shard_tables> arriving;
  int64_t arriving_clock = -1;

  clock_table clocks;
  int64_t newest_clock = -1;       // of the newest gradient applied to params; -1: none
  sync_round sync;
  std::vector<held_pull> held;      // pulls the rule does not allow yet, in arrival order
  std::vector<uint8_t> seen;        // scratch for push validation

  // checkpoints: the state when min clock reached each checkpoint clock (from the newest one
  // the chief has asked for on, at most max_snapshots), and the chief's requests for one not
  // reached yet
  std::map<int64_t, wire_buffer> snapshots;
  int64_t checkpoint_asked = -1;    // the newest clock the chief asked a checkpoint of
  // Clocks outside the every-N schedule the chief asked for before min reached them (a
  // checkpoint on a stop signal, interrupt.cpp): kept like scheduled ones when reached.
  std::set<int64_t> asked_off_schedule;
  std::vector<held_checkpoint> held_checkpoints;
  // The chief's requests for the state at an export version's clock not reached yet (bytes
  // only): answered when min reaches it, never kept as snapshots.
  std::vector<held_checkpoint> held_exports;
  // Each snapshot's tables' clock (sparse_table::delta_of's `then`).
  std::map<int64_t, int64_t> snapshot_now;
  // What each snapshot holds: -1 the whole state; k >= 0 only the sparse rows changed since
  // clock k (and tombstones), kept so when the chief said its next checkpoint is a delta since k.
  std::map<int64_t, int64_t> snapshot_since;
  // What the chief will ask of the next checkpoint (from its last commit): the changes since
  // this clock, or -1 the whole state (also: not known, e.g. since the state was installed).
  int64_t checkpoint_plan = -1;
  // The tables remember every removal (a delta's tombstones) at this clock or later: from the
  // state installed on; a standby remembers none until promoted (nobody tells it of commits).
  int64_t removals_known_from = 0;
  // An export delta may count from this clock or later: the newest export state's this shard
  // answered since its state was installed, or the one that state counted from (the version
  // before, which the chief may ask from again when that state's version is skipped). Removals
  // from it on are kept though a checkpoint was committed since. -1: none answered.
  int64_t export_delta_from = -1;
  int64_t checkpoint_committed = -1;  // the newest checkpoint committed since then; -1: none
  checkpoint_io_actor io;           // spawned on the first checkpoint

  // --gradient-norm-bound: the norms of the recent pushes taken, of their dense gradient and of
  // their sparse rows' (pushes with rows only)
  norm_bound dense_norms;
  norm_bound sparse_norms;

  shard_stats stats;
  // Refusals, by kind ("dropped push", "refused an update", ...): a flood of bad messages from
  // a stranger writes a few lines every 10 s, each saying how many were held back.
  rate_limited_log refusals{[this](const std::string& text) { log_line(who(), text); }};
  reply_cache cache;
  std::size_t init_digest = 0;      // of the init message installed (0: none, or restored)

  // hot standby (replication.hpp)
  ps_shard_actor standby;           // this primary's standby, if it has one
  replication_queue queue;          // operations waiting for the standby's acknowledgement
  std::shared_ptr<replication_window> window;  // the standby's messages unanswered (one each)
  bool promoted = false;            // a standby that took over: re-sent pushes deduplicated
  std::shared_ptr<streamed_push> streaming;  // the push being applied as it arrives, if any
  std::vector<wire_buffer> round_pushes;  // sync: each worker's push of the clock accumulated

  bool initialized() const { return layout != nullptr; }
  std::string who() const { return "ps:" + std::to_string(shard); }

  /// Replies built by reference may outlive the shard (a snapshot the caller keeps): they take
  /// the buffers they point into.
  ~ps_shard_state() {
    release_for_writing(params, params_lease);
    release_for_writing(params_next, next_lease);
  }
};

using self_ptr = ps_shard_actor::stateful_pointer<ps_shard_state>;

// --- how the shard counts and logs what it refuses (shard_refusals.cpp) ---------------------

/// Logs a refusal of `kind`, rate-limited; first writes the counts of kinds fallen silent.
void log_refusal(ps_shard_state& st, const std::string& kind, const std::string& text);
/// `err`, a refusal by role (authorisation.hpp), counted and logged; none passes.
caf::error refused(ps_shard_state& st, caf::error err);
/// Counts a message dropped (malformed, unknown worker, ...), logs it and returns `err`.
caf::error drop(ps_shard_state& st, const std::string& what, caf::error err);
/// The error refusing a push for dense block `id`, whose values (values, n) are not all within
/// `bound`.
caf::error gradient_error(const float* values, std::size_t n, float bound, uint32_t id);
/// Counts and logs a push refused for its gradient values, and returns `err`.
caf::error refuse_gradient(ps_shard_state& st, int32_t worker, caf::error err);
/// The error refusing a push whose gradient `what` ("dense", "sparse rows'") has L2 norm
/// `norm`, beyond the limit of `bound`.
caf::error norm_error(const norm_bound& bound, float norm, const char* what = "dense");
/// Counts and logs a push refused for its gradient norm, and returns `err`.
caf::error refuse_norm(ps_shard_state& st, int32_t worker, caf::error err);
/// Keeps the norm of a push taken in `bound` (st.dense_norms or st.sparse_norms), and the ratio
/// statistic.
void norm_taken(ps_shard_state& st, norm_bound& bound, float norm);

// --- pulls (shard_pulls.cpp) --------------------------------------------------------------

/// The parameters message for the current values (shared until an update or a new min clock).
const wire_buffer& current_reply(ps_shard_state& st);
/// The reply with every row of every table (an all-rows snapshot), encoded for its request.
wire_buffer reply_with_all_rows(ps_shard_state& st);
/// The reply with the current rows of `keys` too (current_reply without keys).
wire_buffer reply_with_rows(ps_shard_state& st, const std::vector<sparse_rows_view>& keys);
/// The reply to a pull for `clock` now, or a promise kept until the rule allows it; with the
/// rows of `keys` (pointing into `request`) as they are when it is answered.
caf::result<wire_buffer> serve_pull(self_ptr self, int32_t worker, int64_t clock,
                                    wire_buffer request = {},
                                    std::vector<sparse_rows_view> keys = {});
/// serve_pull for a reply already promised (a push applied once its standby acknowledged it).
void deliver_pull(self_ptr self, caf::typed_response_promise<wire_buffer> promise,
                  int32_t worker, int64_t clock, wire_buffer request,
                  std::vector<sparse_rows_view> keys);
/// Delivers every held pull the rule now allows, in arrival order.
void release_held(ps_shard_state& st);
/// Answers every held pull and checkpoint with `err` (the state they waited for is gone).
void fail_held(ps_shard_state& st, const caf::error& err);

// --- snapshots at checkpoint clocks (shard_snapshots.cpp) -----------------------------------

/// Whether the snapshot kept at `clock` can be written for a request since `since`: a whole one
/// always; one of the changes since k for a delta since k or later (a superset of its changes).
bool snapshot_serves(const ps_shard_state& st, int64_t clock, int64_t since);
/// Makes the snapshot kept at `clock` serve a request since `since` (snapshot_serves), taking the
/// whole state now when it is that clock's exactly; else the error to answer with (the chief
/// asked what it said it would not: the snapshots are whole until its next commit).
caf::error make_snapshot_serve(self_ptr self, int64_t clock, int64_t since);
/// The file of the snapshot taken at `clock` (which the shard holds and which serves `since`):
/// whole, or with `since` >= 0 a delta's (the sparse rows changed since that clock, or since an
/// earlier one when that is what the shard kept; whole when the shard cannot tell them, e.g.
/// restored after it).
wire_buffer checkpoint_bytes(const ps_shard_state& st, int64_t clock, int64_t since);
/// Writes the snapshot taken at `clock` (checkpoint_bytes) through the shard's disk actor and
/// answers `promise`.
void write_checkpoint(self_ptr self, const std::string& dir, int64_t clock, int64_t since,
                      caf::typed_response_promise<file_record> promise);
/// Whether `clock` is on the run's every-N checkpoint schedule.
bool on_schedule(const train_spec& spec, int64_t clock);
/// The chief committed the checkpoint at `clock`: no delta will count from before it; it will
/// ask the next one since `next_since` (-1: whole).
void checkpoint_committed(self_ptr self, int64_t clock, int64_t next_since);
/// Keeps the state at each checkpoint clock the min clock passed since `before`.
void take_snapshots(self_ptr self, int64_t before);
/// Keeps the state now as `clock`'s when it is that clock's exactly: every worker has finished
/// `clock` clocks at most, and the progress clock is `clock` (the workers stopped there: the
/// end of a run that went past its scheduled last clock). Whether it did.
/// `wanted`: what the snapshot is for (a delta since that clock, -1 whole; none: the chief's
/// plan, keep_snapshot).
bool snapshot_at_rest(self_ptr self, int64_t clock, std::optional<int64_t> wanted = {});
/// (checkpoint, snapshot, clock, since): the state at `clock` for an export version, now or
/// once min reaches it: whole, or with `since` >= 0 the sparse rows changed since (whole when
/// the shard cannot tell them); refused with checkpoint_clock_passed when min has passed it.
caf::result<wire_buffer> export_snapshot(self_ptr self, int64_t clock, int64_t since);
/// (resize, copy, clock, buckets, budget): one bounded step of copying ahead the rows the
/// resize at `clock` to `buckets` moves (shard_tables::copy_step): whether the copy is done, and
/// per new shard the rows copied now (empty where none). Refused once the shard is at `clock`.
/// Empty `buckets`: that copy is forgotten (its marks, and the copies kept aside here).
caf::result<bool, std::vector<wire_buffer>> copy_ahead(self_ptr self, int64_t clock,
                                                       const std::vector<uint16_t>& buckets,
                                                       uint64_t budget);
/// (resize, copy, rows): rows another shard copied ahead to this one, kept aside until the move.
caf::result<caf::ok_atom> stage_copy(self_ptr self, const wire_buffer& rows);

/// (resize, clock, buckets, blocks): a live resize's hand-over at `clock`, now or once min
/// reaches it (refused with checkpoint_clock_passed when min has passed it), as
/// ShardCheckpoints under the spec now: [0] the dense blocks `placement.blocks` gives another
/// shard, with their optimizer state, and each table's admission sketch; [1 + s] the rows and
/// pending counts of the keys whose bucket `placement.buckets` gives to shard s (empty for this
/// shard and where nothing goes). The shard keeps all of it, serving as before, until it moves
/// (move_in).
caf::result<std::vector<wire_buffer>> hand_over(self_ptr self, int64_t clock,
                                                new_placement placement);
/// (restore, resize, ShardCheckpoint, parts, incarnations): goes on under the file's spec at
/// its clock: every dense block of the new layout and each table's admission sketch from the
/// file, the rows of the buckets it keeps where they are, those it gives away dropped, the rows
/// of the file and of every part (the buckets it gains: hand-overs' [1 + s]) taken in; every
/// worker live at that clock with the given incarnation. An uninitialised shard (one the
/// resize spawned) takes them into empty tables. Held requests are answered with rolled_back.
caf::result<caf::ok_atom> move_in(self_ptr self, const wire_buffer& buf,
                                  const std::vector<wire_buffer>& parts,
                                  std::vector<uint32_t> incarnations);

// --- pushes and the rising min clock (shard_pushes.cpp) -------------------------------------

/// Checks a decoded push against the spec and the clock table (its dense values too only with
/// `dense_values`, and then their norm against the norm bound; or on every 16th push with
/// `values_here`).
caf::error validate(ps_shard_state& st, const push_view& push, bool dense_values,
                    bool values_here = true);
/// validate, the refusal counted and logged.
caf::error check_push(ps_shard_state& st, const push_view& push, bool dense_values = false);
/// Applies a push check_push passed: the keys of the pull it carries, or its refusal. Its
/// gradient's norm is bounded (--gradient-norm-bound) when `bound_norm`, else only measured: a
/// push checked whole before (replication) or one a primary took (a standby's).
caf::expected<std::vector<sparse_rows_view>> apply_push(self_ptr self, const wire_buffer& buf,
                                                        push_view& push,
                                                        reply_stream* stream = nullptr,
                                                        bool bound_norm = true);
/// Whether `push` is one this promoted standby applied already.
bool applied_before(const ps_shard_state& st, const push_view& push);
/// The learning rate of an ssp or async push now.
float push_rate(const ps_shard_state& st);
/// Counts a push taken and finishes its clock (the min-rose path).
void finish_push(self_ptr self, const wire_buffer& buf, const push_view& push);
/// A push for clock c, then the pusher's pull for c + 1 (the whole push, decoded here).
caf::result<wire_buffer> on_push_pull(self_ptr self, const wire_buffer& buf,
                                      reply_stream* stream = nullptr);
/// After every clock-table operation that can raise min (a push, a leave, an admit).
void on_min_rose(self_ptr self, int64_t progress_before);
/// Sends the shard an evict message when its tables evict and a sweep pass is due.
void start_sweep(self_ptr self);
/// (evict): one bounded step of the sweep; the next step queued behind what came meanwhile.
void on_sweep(self_ptr self);

} // namespace actorps::shard_internals
