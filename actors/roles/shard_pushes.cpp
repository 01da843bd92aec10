// A shard's pushes: checked, applied (ssp, async) or kept for their clock's mean (sync), and the
// one reaction to a rising min clock that every finished push leads to.
#include "actors/roles/authorisation.hpp"
#include "actors/roles/dense_update.hpp"
#include "actors/roles/shard_replicate.hpp"
#include "actors/roles/shard_state.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/value_bounds.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace actorps::shard_internals {

// A pushed dense gradient is read once, by the update: its values are checked (within
// --max-gradient, so finite) in the optimizer's own loop as it reads them (apply_pushed_update),
// or, in sync mode, as they are copied into the worker's slot (copy_within). The update is
// written into the spare buffers and swapped in only when every block passed, so a push with a
// bad value anywhere, in the last block too, is refused whole and changes nothing, as when a
// pass of its own checked it first. Validation (validate) checks everything but the dense values:
// the structure, the clock, the sparse rows (small: checked there, read twice). Checked apart, a
// pass before the update, are only the pushes a standby must be sent (refused before it sees
// them), those of a sync worker whose slot still holds its previous clock's gradient, and every
// 16th push, whose largest |value| is sampled anyway (max_abs: the statistic doubles as the check).

/// A pass over every dense block's values of `push`: the error refusing the first one beyond
/// --max-gradient, or none. `largest`, when given, is raised to the largest |value|.
caf::error check_dense_values(const ps_shard_state& st, const push_view& push,
                              float* largest = nullptr) {
  const auto bound = st.config.bounds.max_gradient;
  for (const auto& b : push.blocks) {
    if (largest) {
      auto m = max_abs(b.values, b.count);  // NaN when one is: never <= bound
      if (!(m <= bound)) return gradient_error(b.values, b.count, bound, b.id);
      *largest = std::max(*largest, m);
    } else if (!all_within(b.values, b.count, bound)) {
      return gradient_error(b.values, b.count, bound, b.id);
    }
  }
  return {};
}

/// The sum of the squares of every dense value of `push` (its gradient's L2 norm, squared).
float dense_sum_of_squares(const push_view& push) {
  float sum = 0;
  for (const auto& b : push.blocks) sum += sum_of_squares(b.values, b.count);
  return sum;
}

/// The sum of the squares of every sparse row value of `push`.
float sparse_sum_of_squares(const push_view& push) {
  float sum = 0;
  for (const auto& rows : push.sparse) sum += sum_of_squares(rows.values, rows.value_count);
  return sum;
}

/// Whether a gradient whose norm squared is `sum_squared` is beyond `bound` now (never when a
/// value is not finite: that is --max-gradient's to refuse).
bool norm_beyond(const norm_bound& bound, float sum_squared) {
  auto limit = bound.limit();
  return std::isfinite(sum_squared) && std::isfinite(limit) && sum_squared > limit * limit;
}

/// What a push's update does with its norm: bounds it when `bound` (and the bound is on),
/// measures it for the window when the norm was bounded before, nothing when the bound is off.
norm_check norm_mode(const ps_shard_state& st, bool bound) {
  if (st.dense_norms.k() <= 0) return norm_check::none;
  return bound ? norm_check::bound : norm_check::measure;
}

/// Checks a decoded push against the spec and the clock table; returns the error to drop it
/// with. The dense values are left to the update, which checks them as it reads them (above),
/// unless `dense_values` asks for a pass of their own here.
caf::error validate(ps_shard_state& st, const push_view& push, bool dense_values,
                    bool values_here) {
  if (push.shard != st.shard)
    return make_error(errc::wrong_shard, "addressed to shard " + std::to_string(push.shard));
  if (!st.clocks.live(push.worker))
    return make_error(errc::unknown_worker, "worker " + std::to_string(push.worker));
  if (push.incarnation != st.clocks.incarnation(push.worker))
    return make_error(errc::stale_clock, "from incarnation " + std::to_string(push.incarnation)
                                           + " of worker " + std::to_string(push.worker)
                                           + ", which was replaced");
  auto expected = st.clocks.finished(push.worker);
  if (push.clock > expected)
    return make_error(errc::future_clock, "clock " + std::to_string(push.clock)
                                            + ", worker is at " + std::to_string(expected));
  if (push.clock < expected)
    return make_error(errc::stale_clock, "clock " + std::to_string(push.clock)
                                           + " already pushed");
  const auto& ids = st.layout->shard_blocks(st.shard);
  if (push.blocks.size() != ids.size())
    return make_error(errc::missing_block, std::to_string(push.blocks.size()) + " blocks, expected "
                                             + std::to_string(ids.size()));
  std::fill(st.seen.begin(), st.seen.end(), 0);
  const auto& all = st.layout->blocks();
  for (const auto& b : push.blocks) {
    if (b.id >= all.size() || all[b.id].shard != st.shard)
      return make_error(errc::unknown_block, "block " + std::to_string(b.id));
    if (b.count != all[b.id].size)
      return make_error(errc::wrong_element_count,
                        "block " + std::to_string(b.id) + " has " + std::to_string(b.count)
                          + " floats, expected " + std::to_string(all[b.id].size));
    auto index = std::lower_bound(ids.begin(), ids.end(), b.id) - ids.begin();
    if (st.seen[index]++)
      return make_error(errc::missing_block, "block " + std::to_string(b.id) + " twice");
  }
  // The largest |gradient value| (a statistic for choosing --max-gradient) from every 16th push
  // only: a max-reduce costs twice the bound check.
  const bool sampled = values_here && st.stats.pushes % 16 == 0;
  float push_largest = 0;
  if (sampled || dense_values)
    if (auto err = check_dense_values(st, push, sampled ? &push_largest : nullptr)) return err;
  if (dense_values && st.dense_norms.k() > 0) {
    if (auto sum = dense_sum_of_squares(push); norm_beyond(st.dense_norms, sum))
      return norm_error(st.dense_norms, std::sqrt(sum));
    if (auto sum = sparse_sum_of_squares(push); !push.sparse.empty() && norm_beyond(st.sparse_norms, sum))
      return norm_error(st.sparse_norms, std::sqrt(sum), "sparse rows'");
  }
  if (auto err = st.tables.validate(push.sparse, true, st.config.bounds.max_gradient,
                                    sampled ? &push_largest : nullptr))
    return err;
  st.stats.max_gradient = std::max(st.stats.max_gradient, push_largest);
  return st.tables.validate(push.pull_keys, false);
}

/// Counts and logs the sparse rows an update refused (each kept its values).
void count_refused_rows(ps_shard_state& st, std::size_t rows, const update_name& what) {
  if (rows == 0) return;
  st.stats.updates_refused += rows;
  log_refusal(st, "refused an update",
              "refused " + std::to_string(rows) + " sparse row update(s) of " + what()
                + ": a value would leave ±" + value_text(st.config.bounds.max_parameter)
                + " or its state would not be finite; those rows kept theirs");
}

/// The configured rate at global clock `clock`, after the run's schedule.
float rate_at(const ps_shard_state& st, int64_t clock) {
  return scheduled_learning_rate(st.spec.schedule, st.spec.optimizer.learning_rate,
                                 schedule_clock(st.spec, clock),
                                 st.spec.total_clocks);
}

/// The learning rate of an ssp or async push now: the scheduled one at the min clock, shared by
/// the live workers.
float push_rate(const ps_shard_state& st) {
  return rate_at(st, st.clocks.min()) / rate_divisor(st.spec, st.clocks.live_count());
}

/// Takes a valid push's gradient (`buf` holds it), checking its dense values as it reads them:
/// ssp and async apply it at once with lr / live workers at the min clock; sync keeps it for the
/// mean of its clock. Returns the push's refusal (counted and logged) when a dense value is
/// beyond --max-gradient: then nothing changed.
caf::error take_gradient(ps_shard_state& st, const wire_buffer& buf, push_view& push,
                         reply_stream* stream, bool bound_norm) {
  const auto& all = st.layout->blocks();
  const auto max_gradient = st.config.bounds.max_gradient;
  const auto norms = norm_mode(st, bound_norm);
  // The sparse rows' norm first: refused, nothing changed yet. (Their values were checked
  // against --max-gradient in validate.)
  const bool rows = norms != norm_check::none && !push.sparse.empty();
  const float rows_norm = rows ? std::sqrt(sparse_sum_of_squares(push)) : 0.0f;
  if (rows && norms == norm_check::bound && norm_beyond(st.sparse_norms, rows_norm * rows_norm))
    return refuse_norm(st, push.worker, norm_error(st.sparse_norms, rows_norm, "sparse rows'"));
  if (st.spec.mode == consistency::sync) {
    auto& slot = st.sync.grads[push.worker];
    // A slot still holding this worker's gradient of the clock accumulated is not written before
    // the push is known good (a well-behaved worker never pushes again before that mean).
    if (st.sync.pushed[push.worker]) {
      if (auto err = check_dense_values(st, push)) return refuse_gradient(st, push.worker, err);
      if (auto sum = dense_sum_of_squares(push);
          norms == norm_check::bound && norm_beyond(st.dense_norms, sum))
        return refuse_norm(st, push.worker, norm_error(st.dense_norms, std::sqrt(sum)));
    }
    // The norm is taken of each block as it lies in the slot, just copied (in cache).
    float sum = 0;
    for (const auto& b : push.blocks) {
      auto* to = slot.data() + all[b.id].shard_offset;
      if (!copy_within(to, b.values, b.count, max_gradient))
        return refuse_gradient(st, push.worker,
                               gradient_error(b.values, b.count, max_gradient, b.id));
      if (norms != norm_check::none) sum += sum_of_squares(to, b.count);
    }
    // Refused, the slot's copy is not its worker's gradient of the clock: nothing reads it.
    if (norms == norm_check::bound && norm_beyond(st.dense_norms, sum))
      return refuse_norm(st, push.worker, norm_error(st.dense_norms, std::sqrt(sum)));
    if (norms != norm_check::none) norm_taken(st, st.dense_norms, std::sqrt(sum));
    if (rows) norm_taken(st, st.sparse_norms, rows_norm);
    st.tables.keep(push.worker, buf, std::move(push.sparse));
    st.sync.pushed[push.worker] = true;
    return {};
  }
  auto share = rate_divisor(st.spec, st.clocks.live_count());
  auto lr = push_rate(st);
  std::vector<block_gradient> grads;
  grads.reserve(push.blocks.size());
  for (const auto& b : push.blocks) grads.push_back({&all[b.id], b.values});
  const update_name what = [worker = push.worker, clock = push.clock] {
    return "the push of worker " + std::to_string(worker) + " for clock " + std::to_string(clock);
  };
  caf::error refusal;
  float norm = 0;
  auto ahead = plan_reply_ahead(st, push, stream);
  auto outcome = apply_dense(st, grads, lr, what, max_gradient, &refusal,
                             ahead ? &*ahead : nullptr, norms, &norm);
  if (norms != norm_check::none && (outcome == dense_outcome::applied
                                    || outcome == dense_outcome::update_refused)) {
    norm_taken(st, st.dense_norms, norm);
    if (rows) norm_taken(st, st.sparse_norms, rows_norm);
  }
  switch (outcome) {
    case dense_outcome::gradient_refused:
      return refuse_gradient(st, push.worker, std::move(refusal));
    case dense_outcome::norm_refused:
      return refuse_norm(st, push.worker, std::move(refusal));
    case dense_outcome::update_refused:
      break;  // refused whole: its rows neither; the push and its clock count
    case dense_outcome::applied:
      count_refused_rows(st, st.tables.apply(push.sparse, 1.0f / share, push.clock), what);
      record_dense_applied(st, push.clock, ahead ? &*ahead : nullptr);
      break;
  }
  return {};
}

/// Sync mode: once no live worker still owes a gradient for the clock being accumulated (the
/// one the pushers pushed), applies the mean of the pushers' gradients once: the live ones' and
/// those of workers that left after pushing it (apply_leave). A replacement admitted at a later
/// clock owes nothing for this one.
void maybe_apply_sync(ps_shard_state& st) {
  int64_t clock = -1;
  std::vector<int32_t> pushers;
  auto workers = static_cast<int32_t>(st.clocks.workers());
  for (int32_t w = 0; w < workers; ++w)
    if (st.sync.pushed[w]) clock = st.clocks.pushed(w) - 1, pushers.push_back(w);
  if (pushers.empty() || st.clocks.min() <= clock) return;
  auto& sum = st.sync.sum;
  bool first = true;
  for (int32_t w = 0; w < workers; ++w) {  // worker order: arrival order never matters
    if (!st.sync.pushed[w]) continue;
    const auto& g = st.sync.grads[w];
    if (first) {
      std::copy(g.begin(), g.end(), sum.begin());
      first = false;
    } else {
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
    }
  }
  auto inv = 1.0f / rate_divisor(st.spec, pushers.size());
  for (auto& v : sum) v *= inv;
  std::vector<block_gradient> grads;
  for (auto id : st.layout->shard_blocks(st.shard)) {
    const auto& b = st.layout->blocks()[id];
    grads.push_back({&b, sum.data() + b.shard_offset});
  }
  const update_name what = [clock] { return "the mean update of clock " + std::to_string(clock); };
  // Every kept gradient was checked on the way in; the mean's NaN check (the bound +inf) is moot.
  if (apply_dense(st, grads, rate_at(st, clock), what, std::numeric_limits<float>::infinity())
      == dense_outcome::applied) {
    count_refused_rows(st, st.tables.apply_mean(pushers, inv, clock), what);
    st.newest_clock = std::max(st.newest_clock, clock);
  } else {
    for (auto w : pushers) st.tables.forget(w);  // refused whole: the kept rows go with it
  }
  std::fill(st.sync.pushed.begin(), st.sync.pushed.end(), false);
}

// --- the one reaction to a rising min clock -------------------------------------------------

/// Runs after every clock-table operation that can raise min (a push, a leave, an admit), with
/// the progress clock from before it. In this order: sync applies the mean of a clock every
/// live worker has pushed, the state at each checkpoint clock reached is kept, and the held
/// pulls the rule now allows are answered in arrival order — so no pull for c + 1 is answered
/// before clock c's mean is in the values. Whatever min did not allow stays as it was.
void on_min_rose(self_ptr self, int64_t progress_before) {
  auto& st = self->state;
  st.tables.set_clock(st.clocks.progress());
  if (st.spec.mode == consistency::sync) maybe_apply_sync(st);
  take_snapshots(self, progress_before);
  release_held(st);
  start_sweep(self);
}

// --- eviction, between requests ---------------------------------------------------------------

/// Rows a sweep message looks at: about a millisecond of work, so that no request waits long
/// behind one.
constexpr std::size_t sweep_budget = 16384;

/// Starts a pass of the tables' sweep when none is under way and the clock has moved on enough
/// since the last one began: every clock for short evict_after, every evict_after / 8 clocks
/// for longer ones (a stale row reads as gone meanwhile; the sweep only frees its memory).
void start_sweep(self_ptr self) {
  auto& st = self->state;
  if (st.sweep.queued || !st.tables.evicting()) return;
  const int64_t now = st.tables.clock();
  const int64_t every = std::max<int64_t>(1, st.tables.shortest_eviction() / 8);
  if (st.sweep.pass_clock >= 0 && now - st.sweep.pass_clock < every) return;
  st.sweep.pass_clock = now;
  st.sweep.queued = true;
  self->send(ps_shard_actor{self}, evict_atom::value);
}

void on_sweep(self_ptr self) {
  auto& st = self->state;
  st.sweep.queued = false;
  if (!st.initialized()) return;
  if (!st.tables.sweep(sweep_budget)) {  // the pass goes on after whatever came meanwhile
    st.sweep.queued = true;
    self->send(ps_shard_actor{self}, evict_atom::value);
    return;
  }
  start_sweep(self);  // another pass, if the clock moved on enough during this one
}

/// The error to refuse a decoded push with (counted and logged), or none. Its dense values are
/// left to apply_push unless `dense_values` (validate).
caf::error check_push(ps_shard_state& st, const push_view& push, bool dense_values) {
  auto err = validate(st, push, dense_values);
  if (!err) return err;
  if (is_error(err, errc::gradient_norm_beyond))
    return refuse_norm(st, push.worker, std::move(err));
  if (err.category() != error_category
      || (err.code() != static_cast<uint8_t>(errc::value_out_of_bounds)
          && err.code() != static_cast<uint8_t>(errc::non_finite_value)))
    return drop(st, "push from worker " + std::to_string(push.worker), std::move(err));
  return refuse_gradient(st, push.worker, std::move(err));
}

void finish_push(self_ptr self, const wire_buffer& buf, const push_view& push) {
  auto& st = self->state;
  ++st.stats.pushes;
  st.stats.pushed_bytes += buf.size_bytes();
  on_min_rose(self, st.clocks.finish(push.worker, push.clock));
}

/// Applies a push check_push passed (`buf` holds it) through the min-rose path; returns the keys
/// of the pull it carries, or the push's refusal (counted) when a dense value is beyond
/// --max-gradient: then nothing changed and its clock does not count.
caf::expected<std::vector<sparse_rows_view>> apply_push(self_ptr self, const wire_buffer& buf,
                                                        push_view& push,
                                                        reply_stream* stream, bool bound_norm) {
  auto& st = self->state;
  // before finish: async's rate is the one at the old min clock
  if (auto err = take_gradient(st, buf, push, stream, bound_norm)) return err;
  auto keys = std::move(push.pull_keys);
  if (st.spec.mode == consistency::sync) st.round_pushes[push.worker] = buf;  // for an image
  finish_push(self, buf, push);
  return keys;
}

/// Whether `push` is one this promoted standby applied already (forwarded by its primary, which
/// was lost before answering it): the worker's clock table entry is past it.
bool applied_before(const ps_shard_state& st, const push_view& push) {
  return st.promoted && push.shard == st.shard && st.clocks.live(push.worker)
         && push.incarnation == st.clocks.incarnation(push.worker)
         && push.clock + 1 == st.clocks.finished(push.worker);
}

/// A push applied once its standby acknowledged it; the pusher's pull is answered through the
/// promise made when it arrived. `push` is its view as decoded then (into `buf`, which the
/// caller keeps): not decoded again, nor a bf16 push widened again.
void apply_replicated_push(self_ptr self, const wire_buffer& buf, push_view& push,
                           caf::typed_response_promise<wire_buffer> promise) {
  auto& st = self->state;
  if (auto err = check_push(st, push)) {  // the clock table may have changed meanwhile
    promise.deliver(std::move(err));
    return;
  }
  // Its norm was bounded before the standby was sent it (check_push): the standby, which does
  // not bound it again, and this shard take the same pushes.
  auto keys = apply_push(self, buf, push, nullptr, false);
  if (!keys) {
    promise.deliver(std::move(keys.error()));
    return;
  }
  deliver_pull(self, std::move(promise), push.worker, push.clock + 1, buf, std::move(*keys));
}

/// A push for clock c, then the pusher's pull for c + 1, answered like any other pull once the
/// push has been through the min-rose path (and, with a standby, once the standby has it).
caf::result<wire_buffer> on_push_pull(self_ptr self, const wire_buffer& buf,
                                      reply_stream* stream) {
  auto& st = self->state;
  if (!st.initialized()) return drop(st, "push", make_error(errc::not_initialized));
  auto push = decode_push(buf);
  if (!push) return drop(st, "push", push.error());
  if (auto err = refused(st, authorise_worker(current_role(self), push->worker,
                                              "push_pull as worker "
                                                + std::to_string(push->worker))))
    return err;
  if (applied_before(st, *push)) {
    ++st.stats.pushes_deduplicated;
    log_line(st.who(), "the push of worker " + std::to_string(push->worker) + " for clock "
                         + std::to_string(push->clock) + " came again: applied once already");
    auto keys = std::move(push->pull_keys);
    return serve_pull(self, push->worker, push->clock + 1, buf, std::move(keys));
  }
  // A push for the standby is checked whole before it is sent one (a pass over its values).
  if (auto err = check_push(st, *push, replicating(st))) return err;
  if (replicating(st)) {
    if (st.standby) st.stats.replicated_bytes += buf.size_bytes();
    auto promise = self->make_response_promise<wire_buffer>();
    replicate(self, [=, view = std::move(*push)]() mutable {
      apply_replicated_push(self, buf, view, promise);
    }, replicate_atom::value, buf);
    return promise;
  }
  auto keys = apply_push(self, buf, *push, stream);
  if (!keys) return std::move(keys.error());
  return serve_pull(self, push->worker, push->clock + 1, buf, std::move(*keys));
}

} // namespace actorps::shard_internals
