// A shard's pulls: answered now with the values as they are, or held in the mailbox's promise
// until the consistency rule allows them (release_held, at each rise of the min clock).
#include "actors/roles/shard_state.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace actorps::shard_internals {

const wire_buffer& current_reply(ps_shard_state& st) {
  auto& c = st.cache;
  if (c.updates != st.stats.updates || c.min_clock != st.clocks.min()
      || c.reply.size_words() == 0) {
    // By reference: the blocks go from params to the data link's socket (or the worker's
    // scatter) without a copy here; the lease keeps params unchanged while the reply lives.
    if (!st.params_lease) st.params_lease = std::make_shared<buffer_lease>(st.spares);
    c.reply = encode_shard_parameters_by_reference(st.shard, st.clocks.min(), st.newest_clock,
                                                   *st.layout, st.params.data(), st.params_lease);
    c.updates = st.stats.updates;
    c.min_clock = st.clocks.min();
  }
  return c.reply;
}

/// The reply with every row of every table, keys and values (an all-rows snapshot): the end
/// of a run that exports its model, so encoded for this request alone.
wire_buffer reply_with_all_rows(ps_shard_state& st) {
  const auto tables = st.tables.export_rows();
  std::vector<sparse_rows_ref> rows;
  for (uint32_t t = 0; t < tables.size(); ++t)
    rows.push_back({t, st.tables.dims()[t], tables[t].keys.data(), nullptr,
                    tables[t].keys.size(), tables[t].values.data()});
  return encode_shard_parameters(st.shard, st.clocks.min(), st.newest_clock, *st.layout,
                                 st.params.data(), rows);
}

/// The reply with the current rows of `keys` too: encoded for this request alone.
wire_buffer reply_with_rows(ps_shard_state& st, const std::vector<sparse_rows_view>& keys) {
  if (keys.empty()) return current_reply(st);
  return encode_shard_parameters(st.shard, st.clocks.min(), st.newest_clock, *st.layout,
                                 st.params.data(), keys, st.tables.dims(),
                                 [&](uint32_t t, const uint64_t* k, std::size_t n, float* out) {
                                   st.tables.read(t, k, n, out);
                                 });
}

void record_reply(ps_shard_state& st, int64_t clock) {
  ++st.stats.pulls_served;
  if (st.clocks.min() != clock_table::no_live_workers)
    st.stats.max_staleness = std::max(st.stats.max_staleness, clock - st.clocks.min());
}

caf::result<wire_buffer> serve_pull(self_ptr self, int32_t worker, int64_t clock,
                                    wire_buffer request, std::vector<sparse_rows_view> keys) {
  auto& st = self->state;
  if (st.clocks.allowed(clock)) {
    record_reply(st, clock);
    return reply_with_rows(st, keys);
  }
  ++st.stats.pulls_held;
  auto promise = self->make_response_promise<wire_buffer>();
  st.held.push_back({worker, clock, promise, std::move(request), std::move(keys)});
  return promise;
}

void deliver_pull(self_ptr self, caf::typed_response_promise<wire_buffer> promise,
                  int32_t worker, int64_t clock, wire_buffer request,
                  std::vector<sparse_rows_view> keys) {
  auto& st = self->state;
  if (st.clocks.allowed(clock)) {
    record_reply(st, clock);
    promise.deliver(reply_with_rows(st, keys));
    return;
  }
  ++st.stats.pulls_held;
  st.held.push_back({worker, clock, std::move(promise), std::move(request), std::move(keys)});
}

void release_held(ps_shard_state& st) {
  auto keep = st.held.begin();
  for (auto& h : st.held) {
    if (st.clocks.allowed(h.clock)) {
      record_reply(st, h.clock);
      h.promise.deliver(reply_with_rows(st, h.keys));
    } else {
      if (&*keep != &h) *keep = std::move(h);  // a self-move would empty h.keys
      ++keep;
    }
  }
  st.held.erase(keep, st.held.end());
}

void fail_held(ps_shard_state& st, const caf::error& err) {
  for (auto& h : st.held) h.promise.deliver(err);
  st.held.clear();
  for (auto& h : st.held_checkpoints) h.fail(err);
  st.held_checkpoints.clear();
  for (auto& h : st.held_exports) h.fail(err);
  st.held_exports.clear();
}

} // namespace actorps::shard_internals
