#include "actors/roles/dense_update.hpp"

#include "kernels/optimizer.hpp"
#include "kernels/value_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace actorps::shard_internals {

void reply_ahead::start(const ps_shard_state& st, const float* values,
                        std::shared_ptr<buffer_lease> lease) {
  reply = encode_shard_parameters_by_reference(st.shard, min_clock, newest_clock, *st.layout,
                                               values, std::move(lease));
  const auto* parts = reply.parts();
  if (!parts || parts->external.size() != st.layout->shard_blocks(st.shard).size()) {
    reply = wire_buffer{};
    return;
  }
  std::size_t at = parts->head_words * sizeof(capnp::word);
  for (const auto& segment : parts->external) block_end.push_back(at += segment.size() * sizeof(capnp::word));
}

void reply_ahead::written(std::size_t i) {
  if (reply.size_words() == 0) return;
  const auto upto = block_end[i];
  if (upto - sent < stream->part_bytes() && i + 1 < block_end.size()) return;
  stream->send_part(reply, sent, upto);
  sent = upto;
}

std::optional<reply_ahead> plan_reply_ahead(const ps_shard_state& st, const push_view& push,
                                            reply_stream* stream) {
  if (!stream || st.spec.mode == consistency::sync || !push.pull_keys.empty()) return {};
  if (st.params.size() * sizeof(float) < 2 * stream->part_bytes()) return {};
  const auto& ids = st.layout->shard_blocks(st.shard);
  if (push.blocks.size() != ids.size()) return {};
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (push.blocks[i].id != ids[i]) return {};
  auto after = st.clocks;
  after.finish(push.worker, push.clock);
  if (!after.allowed(push.clock + 1)) return {};
  reply_ahead plan;
  plan.stream = stream;
  plan.min_clock = after.min();
  plan.newest_clock = std::max(st.newest_clock, push.clock);
  return plan;
}

namespace {

float limit_squared(const ps_shard_state& st, norm_check norms) {
  auto limit = st.dense_norms.limit();
  if (norms != norm_check::bound || !std::isfinite(limit))
    return std::numeric_limits<float>::infinity();
  return limit * limit;
}

} // namespace

dense_update::dense_update(ps_shard_state& st, float lr, float max_gradient, reply_ahead* ahead,
                           norm_check norms)
  : st_(st), lr_(lr), max_gradient_(max_gradient), ahead_(ahead), step_(st.opt.step + 1),
    norms_(norms), limit_squared_(limit_squared(st, norms)) {
  st.cache.reply = wire_buffer{};  // stale after this update anyway; it would hold a lease
  // Every block is written before the swap, so whatever a kept spare holds is overwritten.
  release_for_writing(st.params_next, st.next_lease);
  if (st.params_next.size() != st.params.size()) st.params_next = st.spares->take(st.params.size());
  st.opt.next.resize(st.opt.values.size());
  if (ahead) {
    st.next_lease = std::make_shared<buffer_lease>(st.spares);
    ahead->start(st, st.params_next.data(), st.next_lease);
  }
}

bool dense_update::block(std::size_t i, const block_gradient& g) {
  const auto n = g.block->size;
  if (norms_ != norm_check::none) {
    sum_squared_ += sum_of_squares(g.grad, n);
    // A value beyond --max-gradient (inf, NaN) is the value check's to refuse, as before.
    if (sum_squared_ > limit_squared_ && std::isfinite(sum_squared_)) {
      norm_refused_ = true;
      refusal_ = norm_error(st_.dense_norms, norm());
      return false;
    }
  }
  if (beyond_) return all_within(g.grad, n, max_gradient_) || refuse(g);
  const auto at = g.block->shard_offset;
  const auto slots = st_.opt.slots;
  auto found = apply_pushed_update(st_.spec.optimizer, lr_, step_, st_.params.data() + at,
                                   st_.opt.values.data() + slots * at, g.grad,
                                   st_.params_next.data() + at, st_.opt.next.data() + slots * at,
                                   n, st_.config.bounds.max_parameter, max_gradient_);
  if (found == update_check::applied) {
    if (ahead_) ahead_->written(i);
    return true;
  }
  if (found == update_check::update_beyond) {
    beyond_ = g.block;
    return true;
  }
  return refuse(g);
}

dense_outcome dense_update::finish(const update_name& what) {
  if (beyond_) {
    ++st_.stats.updates_refused;
    log_refusal(st_, "refused an update",
                "refused " + what() + ": block " + std::to_string(beyond_->id)
                  + " would leave a parameter beyond ±"
                  + value_text(st_.config.bounds.max_parameter)
                  + " or a non-finite optimizer state; nothing changed");
    return dense_outcome::update_refused;
  }
  std::swap(st_.params, st_.params_next);
  std::swap(st_.params_lease, st_.next_lease);
  std::swap(st_.opt.values, st_.opt.next);
  st_.opt.step = step_;
  ++st_.stats.updates;
  return dense_outcome::applied;
}

float dense_update::norm() const { return std::sqrt(sum_squared_); }

bool dense_update::refuse(const block_gradient& g) {
  refusal_ = gradient_error(g.grad, g.block->size, max_gradient_, g.block->id);
  return false;
}

dense_outcome apply_dense(ps_shard_state& st, const std::vector<block_gradient>& grads, float lr,
                          const update_name& what, float max_gradient, caf::error* refusal,
                          reply_ahead* ahead, norm_check norms, float* norm) {
  dense_update update(st, lr, max_gradient, ahead, norms);
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (!update.block(i, grads[i])) {
      if (refusal) *refusal = update.refusal();
      return update.norm_refused() ? dense_outcome::norm_refused : dense_outcome::gradient_refused;
    }
  if (norm) *norm = update.norm();
  return update.finish(what);
}

void record_dense_applied(ps_shard_state& st, int64_t clock, const reply_ahead* ahead) {
  st.newest_clock = std::max(st.newest_clock, clock);
  if (ahead && ahead->reply.size_words() > 0) {
    st.cache = {ahead->reply, st.stats.updates, ahead->min_clock};
    ++st.stats.replies_streamed;
  }
}

} // namespace actorps::shard_internals
