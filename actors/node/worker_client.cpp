// worker_client (actors/ps.hpp): a user's loop talking to the shards. Each client owns a small
// actor that asks every shard, and once all have answered scatters their replies into the
// caller's buffer and fulfils the ticket's promise; the caller's thread blocks only in wait.
// Over a data link each shard's reply of dense parameters is received straight into the
// caller's buffer instead (parameter_destination.hpp), so the scatter finds nothing to copy: the
// buffer is lent to the shard's proxy for the call and taken back when wait returns (or the
// client ends); a call that fails may then have written part of it.
#include "actors/node/cluster_core.hpp"

#include "actors/protocol/fan_out.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <cstring>
#include <future>
#include <type_traits>
#include <map>

namespace actorps::detail {

/// What a ticket ends with.
struct call_result {
  caf::error err;
  int64_t staleness = 0;
  int64_t newest_clock = -1;
};

/// A pull or push_pull handed from the caller's thread to its client actor (local only: it
/// carries the caller's pointers).
struct client_call {
  bool push = false;
  int64_t clock = 0;
  const float* grad = nullptr;
  float* out = nullptr;
  std::vector<sparse_push> grads;  // sparse gradient rows
  std::vector<sparse_pull> rows;   // sparse rows to pull
  std::shared_ptr<std::promise<call_result>> done;
  // Per shard over a data link: `out` lent for its reply to land in; none in one process.
  std::vector<std::shared_ptr<borrowed_output>> lent;
};

/// A call's sparse keys split by owner shard: [shard][part] the positions, within the caller's
/// array of that part, of the keys the shard owns.
using key_split = std::vector<std::vector<std::vector<uint32_t>>>;

template <class Part>
key_split split_by_shard(const train_spec& spec, const std::vector<Part>& parts) {
  key_split split(static_cast<std::size_t>(spec.shards), std::vector<std::vector<uint32_t>>(parts.size()));
  for (std::size_t p = 0; p < parts.size(); ++p)
    for (std::size_t i = 0; i < parts[p].count; ++i)
      split[spec.shard_of_key(parts[p].keys[i])][p].push_back(static_cast<uint32_t>(i));
  return split;
}

/// What shard s is sent of `parts`: each part's keys it owns (and their rows, for a push).
template <class Part>
std::vector<sparse_rows_ref> refs_for(const train_spec& spec, const std::vector<Part>& parts,
                                      const key_split& split, std::size_t s) {
  std::vector<sparse_rows_ref> refs;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const auto& pos = split[s][p];
    if (pos.empty()) continue;
    const float* rows = nullptr;
    if constexpr (std::is_same_v<Part, sparse_push>) rows = parts[p].grads;
    refs.push_back({parts[p].table, spec.model.sparse_tables.at(parts[p].table).config.dim,
                    parts[p].keys, pos.data(), pos.size(), rows});
  }
  return refs;
}

} // namespace actorps::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorps::detail::client_call)

namespace actorps {

using detail::call_result;
using detail::client_call;
using detail::cluster_core;
using detail::key_split;
using detail::refs_for;
using detail::split_by_shard;

struct worker_client::impl {
  struct pending_call {
    std::future<call_result> done;
    std::vector<std::shared_ptr<borrowed_output>> lent;  // taken back when the call ends
  };

  std::shared_ptr<cluster_core> cluster;  // keeps the shards (or the proxies) alive
  caf::actor client;
  worker_client::ticket next = 0;
  std::map<worker_client::ticket, pending_call> pending;

  /// Takes `call`'s buffers back: a reply still coming (the call failed) lands elsewhere.
  static void take_back(pending_call& call) {
    for (auto& out : call.lent) out->close();
  }

  ~impl() {
    for (auto& [t, call] : pending) take_back(call);  // the caller may free them now
    for (const auto& d : cluster->destinations)
      if (d) d->forget(client.id());
    caf::anon_send_exit(client, caf::exit_reason::user_shutdown);
  }
};

namespace {

/// What the shards' replies to one call say together: the staleness (the largest over shards)
/// and the newest clock included (the smallest); each reply is scattered into `out`.
call_result combine(const std::vector<wire_buffer>& replies, const cluster_core& core,
                    int64_t target, float* out, const std::vector<sparse_pull>& rows,
                    const key_split& split) {
  call_result r;
  for (std::size_t s = 0; s < replies.size(); ++s) {
    auto view = scatter_shard_parameters(replies[s], *core.layout, out);
    if (!view) {
      r.err = view.error();
      return r;
    }
    // the shard answers the parts it was asked, in order, each row in the order of its keys
    std::size_t next = 0;
    for (std::size_t p = 0; p < rows.size(); ++p) {
      const auto& pos = split[s][p];
      if (pos.empty()) continue;
      auto dim = core.spec.model.sparse_tables[rows[p].table].config.dim;
      if (next >= view->sparse.size() || view->sparse[next].value_count != pos.size() * dim) {
        r.err = make_error(errc::wrong_element_count,
                           "shard " + std::to_string(s) + " sent other rows than asked");
        return r;
      }
      const float* from = view->sparse[next++].values;
      for (std::size_t i = 0; i < pos.size(); ++i)
        std::memcpy(rows[p].rows_out + std::size_t(pos[i]) * dim, from + i * dim,
                    dim * sizeof(float));
    }
    r.staleness = std::max(r.staleness, target - view->min_clock);
    r.newest_clock = s == 0 ? view->newest_clock : std::min(r.newest_clock, view->newest_clock);
  }
  return r;
}

caf::behavior client_actor(caf::event_based_actor* self, std::shared_ptr<cluster_core> cluster,
                           int32_t worker) {
  return {
    [=](const client_call& call) {
      auto tables = cluster->spec.model.sparse_tables.size();
      auto unknown = [&](const auto& parts) {
        return std::any_of(parts.begin(), parts.end(), [&](const auto& p) { return p.table >= tables; });
      };
      if (unknown(call.grads) || unknown(call.rows))
        return call.done->set_value(call_result{make_error(
          errc::unknown_table, "the model has " + std::to_string(tables) + " sparse tables")});
      const auto& shards = cluster->shards;
      const auto& layout = *cluster->layout;
      const auto& spec = cluster->spec;
      const auto target = call.push ? call.clock + 1 : call.clock;
      auto pushed = split_by_shard(spec, call.grads);
      auto pulled = std::make_shared<key_split>(split_by_shard(spec, call.rows));
      const bool sparse = !spec.model.sparse_tables.empty();
      // A shard's reply of dense parameters only (no rows asked of it) lands in call.out; one
      // carrying rows is scattered, rows and all. Each pull or push_pull sent to a proxy takes
      // one queued place, so one is queued for each, empty where nothing lands in place.
      auto lend = [&](std::size_t s, bool dense_only) {
        const auto& destination = s < cluster->destinations.size() ? cluster->destinations[s]
                                                                    : nullptr;
        if (!destination) return;
        parameter_destination::target place;
        if (dense_only && s < call.lent.size())
          place = {std::shared_ptr<const block_layout>(cluster, cluster->layout.get()), nullptr,
                   call.lent[s]};
        destination->expect(self->id(), std::move(place));
      };
      auto asks_rows = [&](std::size_t s) {
        const auto& parts = (*pulled)[s];
        return std::any_of(parts.begin(), parts.end(), [](const auto& p) { return !p.empty(); });
      };
      ask_each<wire_buffer>(
        shards.size(),
        [&](std::size_t s) {
          auto shard = static_cast<int32_t>(s);
          if (call.push) {
            auto grads = refs_for(spec, call.grads, pushed, s);
            auto keys = refs_for(spec, call.rows, *pulled, s);
            // A shard in this process may keep the push past wait (and the caller then writes
            // its gradient again): copied. One elsewhere got its bytes before it replied.
            // bf16 blocks are narrowed into the message, so never by reference.
            auto push = cluster->shards_elsewhere && spec.wire == wire_precision::fp32
                          ? encode_push_by_reference(worker, call.clock, shard, layout, call.grad,
                                                     {}, 0, grads, keys)
                          : encode_push(worker, call.clock, shard, layout, call.grad, 0, grads,
                                        keys, spec.wire);
            lend(s, !asks_rows(s));
            return self->request(shards[s], cluster->opts.timeout, push_pull_atom::value,
                                 std::move(push));
          }
          if (sparse)
            return self->request(shards[s], cluster->opts.timeout, pull_atom::value,
                                 encode_pull(worker, call.clock, shard,
                                             refs_for(spec, call.rows, *pulled, s)));
          lend(s, true);
          return self->request(shards[s], cluster->opts.timeout, pull_atom::value, worker,
                               call.clock);
        },
        [=, out = call.out, rows = call.rows, done = call.done](std::vector<wire_buffer> replies) {
          done->set_value(combine(replies, *cluster, target, out, rows, *pulled));
        },
        [done = call.done](caf::error& err) { done->set_value(call_result{err}); });
    },
  };
}

} // namespace

namespace detail {

worker_client make_worker_client(std::shared_ptr<cluster_core> core, int32_t w) {
  auto client = std::make_shared<worker_client::impl>();
  client->client = core->sys->spawn(client_actor, core, w);
  client->cluster = std::move(core);
  return worker_client{std::move(client)};
}

} // namespace detail

worker_client::ticket worker_client::pull(int64_t clock, float* params_out,
                                          const std::vector<sparse_pull>& rows) {
  return submit(false, clock, nullptr, params_out, {}, rows);
}

worker_client::ticket worker_client::push_pull(int64_t clock, const float* grad,
                                               float* params_out,
                                               const std::vector<sparse_push>& push,
                                               const std::vector<sparse_pull>& rows) {
  return submit(true, clock, grad, params_out, push, rows);
}

worker_client::ticket worker_client::submit(bool push, int64_t clock, const float* grad,
                                            float* params_out,
                                            const std::vector<sparse_push>& grads,
                                            const std::vector<sparse_pull>& rows) {
  client_call call{push, clock, grad, params_out, grads, rows,
                   std::make_shared<std::promise<call_result>>(), {}};
  const auto& destinations = impl_->cluster->destinations;
  // One per shard, not one shared: each guards one shard's reply, and the shards' replies land
  // side by side, none waiting for another's.
  if (params_out && !destinations.empty())
    for (std::size_t s = 0; s < destinations.size(); ++s)
      call.lent.push_back(std::make_shared<borrowed_output>(params_out));
  auto t = impl_->next++;
  impl_->pending.emplace(t, impl::pending_call{call.done->get_future(), call.lent});
  caf::anon_send(impl_->client, std::move(call));
  return t;
}

caf::expected<int64_t> worker_client::wait(ticket t) {
  auto i = impl_->pending.find(t);
  if (i == impl_->pending.end())
    return caf::make_error(caf::sec::invalid_argument,
                           "ticket " + std::to_string(t) + " is unknown or already waited");
  auto result = i->second.done.get();
  impl::take_back(i->second);
  impl_->pending.erase(i);
  if (result.err) return std::move(result.err);
  newest_clock_ = result.newest_clock;
  return result.staleness;
}

} // namespace actorps
