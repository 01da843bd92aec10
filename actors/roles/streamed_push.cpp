#include "actors/roles/streamed_push.hpp"

#include "actors/roles/authorisation.hpp"
#include "actors/roles/dense_update.hpp"
#include "actors/roles/shard_replicate.hpp"
#include "actors/protocol/arriving_push.hpp"
#include "kernels/value_bounds.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorps::shard_internals {

/// A push_pull whose dense blocks are written, each once its bytes are in, while the data link
/// reads the rest. Everything accepted after it waits behind its hold in the replication queue
/// (replicating() is true meanwhile): no other update, clock change, restore or standby comes
/// in between. Pulls and snapshots read the values as they were before it; finished, it is
/// answered as on_push_pull answers.
struct streamed_push {
  wire_buffer buf;  // the payload, as far as progress says it has arrived
  push_view push;
  request_progress_ptr progress;
  reply_stream_ptr stream;
  caf::typed_response_promise<wire_buffer> promise;
  uint64_t hold = 0;               // its place in the replication queue
  std::vector<std::size_t> ends;   // where each block's values end in buf's bytes
  std::optional<reply_ahead> ahead;
  std::optional<dense_update> update;
  std::size_t next = 0;            // the next block to write
  bool sampled = false;            // its largest |value| is the statistic (every 16th push)
  float largest = 0;
};

namespace {

/// Ends the push being streamed with `err` (its update dropped: nothing changed); what waited
/// behind it goes on.
void end_streamed(self_ptr self, caf::error err) {
  auto& st = self->state;
  auto s = std::move(st.streaming);
  s->promise.deliver(std::move(err));
  st.queue.complete(s->hold);
}

/// Every block written: the update swapped in (or refused whole, counted), the push's clock
/// finished, and its pull answered as on_push_pull's would be.
void finish_streamed(self_ptr self) {
  auto& st = self->state;
  auto s = std::move(st.streaming);
  const auto& push = s->push;
  if (auto err = check_read_early(push, s->buf)) {  // its structure lay past segment 0
    st.streaming = std::move(s);
    return end_streamed(self, drop(st, "push_pull", std::move(err)));
  }
  const update_name what = [worker = push.worker, clock = push.clock] {
    return "the push of worker " + std::to_string(worker) + " for clock " + std::to_string(clock);
  };
  if (st.dense_norms.k() > 0) norm_taken(st, st.dense_norms, s->update->norm());
  if (s->update->finish(what) == dense_outcome::applied)
    record_dense_applied(st, push.clock, s->ahead ? &*s->ahead : nullptr);
  if (s->sampled) st.stats.max_gradient = std::max(st.stats.max_gradient, s->largest);
  finish_push(self, s->buf, push);
  deliver_pull(self, s->promise, push.worker, push.clock + 1, s->buf, {});
  st.queue.complete(s->hold);
}

/// Writes the blocks of the streamed push whose bytes have arrived; finishes it after its last,
/// or ends it when its gradient is refused or the rest will never come.
void advance_streamed(self_ptr self) {
  auto& st = self->state;
  auto s = st.streaming;
  if (s->progress->failed()) {
    ++st.stats.pushes_cut;
    return end_streamed(self, make_error(errc::malformed_message,
                                         "the push ended before its last byte (its connection "
                                         "was lost or its request timed out); nothing changed"));
  }
  const auto arrived = s->progress->arrived();
  const auto& all = st.layout->blocks();
  const auto bound = st.config.bounds.max_gradient;
  for (; s->next < s->push.blocks.size() && s->ends[s->next] <= arrived; ++s->next) {
    const auto& b = s->push.blocks[s->next];
    if (s->sampled) s->largest = std::max(s->largest, std::min(max_abs(b.values, b.count), bound));
    if (!s->update->block(s->next, {&all[b.id], b.values}))
      return end_streamed(self, s->update->norm_refused()
                                  ? refuse_norm(st, s->push.worker, s->update->refusal())
                                  : refuse_gradient(st, s->push.worker, s->update->refusal()));
  }
  if (s->next == s->push.blocks.size()) finish_streamed(self);
}

/// Starts applying a push of which only the first bytes are in, or nothing when it must be read
/// whole first: a mode, push or moment in which it could not be applied at once (sync, sparse
/// rows or keys, bf16, a standby or anything else waiting, another push streaming), a structure
/// not all in yet, or anything the whole push would be refused or answered otherwise for (the
/// whole push is, counted once).
std::optional<caf::result<wire_buffer>> start_streamed(self_ptr self, const wire_buffer& buf,
                                                        const reply_stream_ptr& stream,
                                                        const request_progress_ptr& progress) {
  auto& st = self->state;
  if (!st.initialized() || st.spec.mode == consistency::sync || replicating(st) || st.streaming)
    return {};
  // Read from the bytes that are in alone (arriving_push.hpp); checked again once whole.
  auto arriving = read_arriving_push(buf, progress->arrived());
  if (!arriving) return {};
  auto& push = arriving->push;
  if (!push.sparse.empty() || !push.pull_keys.empty() || applied_before(st, push)
      || authorise_worker(current_role(self), push.worker, "push_pull")
      || validate(st, push, false, false))
    return {};
  // Each block is written once its bytes are in, in the shard's order (a block not on a word
  // lies in the structure, in already; the others follow it in their own segments).
  const auto& ids = st.layout->shard_blocks(st.shard);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (push.blocks[i].id != ids[i]) return {};  // out of the shard's order: read whole
  if (!progress->start_applying()) return {};  // read whole meanwhile: an ordinary push_pull
  auto s = std::make_shared<streamed_push>();
  s->ends = std::move(arriving->ends);
  s->buf = buf;
  s->push = std::move(push);
  s->progress = progress;
  s->stream = stream;
  s->promise = self->make_response_promise<wire_buffer>();
  s->hold = st.queue.hold();
  s->sampled = st.stats.pushes % 16 == 0;
  s->ahead = plan_reply_ahead(st, s->push, stream.get());
  s->update.emplace(st, push_rate(st), st.config.bounds.max_gradient,
                    s->ahead ? &*s->ahead : nullptr,
                    st.dense_norms.k() > 0 ? norm_check::bound : norm_check::none);
  st.streaming = s;
  ++st.stats.pushes_streamed;
  advance_streamed(self);
  return caf::result<wire_buffer>{s->promise};
}

} // namespace

caf::result<wire_buffer> on_push_request(self_ptr self, const push_request& request) {
  using fate = request_progress::fate;
  const auto& progress = request.progress;
  if (request.notice) {
    auto& st = self->state;
    if (progress && st.streaming && st.streaming->progress == progress) advance_streamed(self);
    return caf::delegated<wire_buffer>{};  // sent, never asked: nothing answers it
  }
  if (progress && progress->decided() == fate::undecided) {
    if (!progress->failed())
      if (auto started = start_streamed(self, request.bytes, request.reply_stream, progress))
        return std::move(*started);
    if (progress->decline()) {  // the link drops the answer, and asks again once it is whole
      ++self->state.stats.pushes_declined;
      return wire_buffer{};
    }
  }
  return on_push_pull(self, request.bytes, request.reply_stream.get());  // whole
}

} // namespace actorps::shard_internals
