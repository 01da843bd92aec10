// worker_client (actors/ps.hpp): a user's loop talking to the shards. Each client owns a small
// actor that asks every shard, and once all have answered scatters their replies into the
// caller's buffer and fulfils the ticket's promise; the caller's thread blocks only in wait.
// Over a data link each shard's reply of dense parameters is received straight into the
// caller's buffer instead (parameter_destination.hpp), so the scatter finds nothing to copy: the
// buffer is lent to the shard's proxy for the call and taken back when wait returns (or the
// client ends); a call that fails may then have written part of it.
#include "actors/node/cluster_core.hpp"

#include "actors/roles/batch_tables.hpp"
#include "actors/roles/shard_conversation.hpp"

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

/// A call's sparse parts as the conversation's batch tables: each part's keys, de-duplicated
/// per table and split by owner shard, and where each part's keys start in its table's list.
struct call_tables {
  batch_tables tables;
  std::vector<std::size_t> offsets;  // per part

  template <class Part>
  call_tables(const train_spec& spec, const std::vector<Part>& parts) : tables(spec) {
    if (tables.empty()) return;
    std::vector<std::vector<uint64_t>> keys(spec.model.sparse_tables.size());
    for (const auto& p : parts) {
      offsets.push_back(keys[p.table].size());
      keys[p.table].insert(keys[p.table].end(), p.keys, p.keys + p.count);
    }
    tables.prepare(keys);
  }

  /// The index in its table's distinct keys of part p's i-th key.
  uint32_t row_of(const std::vector<table_rows>& rows, uint32_t table, std::size_t p,
                  std::size_t i) const {
    return rows[table].inverse[offsets[p] + i];
  }
};

} // namespace actorps::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorps::detail::client_call)

namespace actorps {

using detail::call_result;
using detail::client_call;
using detail::call_tables;
using detail::cluster_core;

struct worker_client::impl {
  struct pending_call {
    std::future<call_result> done;
    std::vector<std::shared_ptr<borrowed_output>> lent;  // taken back when the call ends
  };

  std::shared_ptr<cluster_core> cluster;  // keeps the shards (or the proxies) alive
  caf::actor client;
  int32_t worker = 0;
  bool finished = false;  // finish() has run: calls fail
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

/// The user's gradient rows summed into `push`'s (a key pushed twice pushes the sum).
void sum_grads(const train_spec& spec, const std::vector<sparse_push>& parts, call_tables& push) {
  auto& rows = push.tables.rows();
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const auto dim = spec.model.sparse_tables[parts[p].table].config.dim;
    auto& grads = rows[parts[p].table].grads;
    for (std::size_t i = 0; i < parts[p].count; ++i) {
      float* to = grads.data() + std::size_t(push.row_of(rows, parts[p].table, p, i)) * dim;
      const float* from = parts[p].grads + i * dim;
      for (uint32_t d = 0; d < dim; ++d) to[d] += from[d];
    }
  }
}

/// The pulled rows copied out to each part's rows_out, in the order of its keys.
void hand_out_rows(const train_spec& spec, const std::vector<sparse_pull>& parts,
                   const call_tables& pulled) {
  const auto& rows = pulled.tables.rows();
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const auto dim = spec.model.sparse_tables[parts[p].table].config.dim;
    const auto& values = rows[parts[p].table].values;
    for (std::size_t i = 0; i < parts[p].count; ++i)
      std::memcpy(parts[p].rows_out + i * dim,
                  values.data() + std::size_t(pulled.row_of(rows, parts[p].table, p, i)) * dim,
                  dim * sizeof(float));
  }
}

caf::behavior client_actor(caf::event_based_actor* self, std::shared_ptr<cluster_core> cluster,
                           int32_t worker) {
  using conversation = shard_conversation<caf::event_based_actor*>;
  // The shards and the layout of the cluster's generation this client last called in; after a
  // scale (cluster_scale.cpp) its next call talks to the new ones.
  struct talking {
    std::shared_ptr<conversation> shards;
    uint64_t generation = 0;
    // the ones before: a reply of a round that failed may still come to one (its handlers
    // point at it)
    std::vector<std::shared_ptr<conversation>> before;
  };
  auto now = std::make_shared<talking>();
  auto converse = [=] {
    if (now->shards) now->before.push_back(std::move(now->shards));
    now->generation = cluster->generation;
    now->shards = std::make_shared<conversation>(
      self, "worker:" + std::to_string(worker), cluster->shards,
      std::shared_ptr<const block_layout>(cluster, cluster->layout.get()), false,
      cluster->opts.timeout);
  };
  converse();
  now->shards->start_watchdog();
  return {
    [=](const client_call& call) {
      if (now->generation != cluster->generation) converse();
      const auto& shards = now->shards;
      auto tables = cluster->spec.model.sparse_tables.size();
      auto unknown = [&](const auto& parts) {
        return std::any_of(parts.begin(), parts.end(), [&](const auto& p) { return p.table >= tables; });
      };
      if (unknown(call.grads) || unknown(call.rows))
        return call.done->set_value(call_result{make_error(
          errc::unknown_table, "the model has " + std::to_string(tables) + " sparse tables")});
      const auto& layout = *cluster->layout;
      const auto& spec = cluster->spec;
      const bool sparse = tables > 0;
      auto pushed = std::make_shared<call_tables>(spec, call.grads);
      auto pulled = std::make_shared<call_tables>(spec, call.rows);
      if (sparse) sum_grads(spec, call.grads, *pushed);
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
      auto round = shards->begin(
        {call.push ? call.clock + 1 : call.clock, call.out, sparse ? &pulled->tables : nullptr},
        [=, rows = call.rows, done = call.done](const round_outcome& r) {
          hand_out_rows(cluster->spec, rows, *pulled);
          (void) pushed;  // kept to the end: a push by reference may point at its rows
          done->set_value(call_result{caf::none, r.staleness, r.newest_clock});
        },
        [done = call.done](const char*, caf::error err) {
          done->set_value(call_result{std::move(err)});
        });
      for (std::size_t s = 0; s < shards->shards(); ++s) {
        auto shard = static_cast<int32_t>(s);
        auto keys = pulled->tables.keys_for(shard);
        if (call.push) {
          auto grads = pushed->tables.grads_for(shard);
          // A shard in this process may keep the push past wait (and the caller then writes
          // its gradient again): copied. One elsewhere got its bytes before it replied.
          // bf16 blocks are narrowed into the message, so never by reference.
          auto push = cluster->shards_elsewhere && spec.wire == wire_precision::fp32
                        ? encode_push_by_reference(worker, call.clock, shard, layout, call.grad,
                                                   {}, 0, grads, keys)
                        : encode_push(worker, call.clock, shard, layout, call.grad, 0, grads,
                                      keys, spec.wire);
          lend(s, keys.empty());
          shards->ask(round, s, true, push_pull_atom::value, push_request{std::move(push)});
        } else if (sparse) {
          shards->ask(round, s, false, pull_atom::value,
                      encode_pull(worker, call.clock, shard, keys));
        } else {
          lend(s, true);
          shards->ask(round, s, false, pull_atom::value, worker, call.clock);
        }
      }
    },
    [=](watchdog_atom) { now->shards->watch(); },
  };
}

} // namespace

namespace detail {

worker_client make_worker_client(std::shared_ptr<cluster_core> core, int32_t w) {
  auto client = std::make_shared<worker_client::impl>();
  client->client = core->sys->spawn(client_actor, core, w);
  client->cluster = std::move(core);
  client->worker = w;
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
  if (impl_->finished) {  // answered at once; nothing is sent
    call.done->set_value(call_result{caf::make_error(
      caf::sec::invalid_argument,
      "worker " + std::to_string(impl_->worker) + " has finished: no more pulls or pushes")});
    auto t = impl_->next++;
    impl_->pending.emplace(t, impl::pending_call{call.done->get_future(), {}});
    return t;
  }
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

int worker_client::staleness_bound() const { return impl_->cluster->spec.staleness_bound(); }

bool worker_client::may_compute_ahead(int64_t staleness) const {
  const auto bound = staleness_bound();
  return bound < 0 || staleness + 1 <= bound;
}

caf::error worker_client::finish() {
  auto& im = *impl_;
  if (!im.pending.empty())
    return caf::make_error(caf::sec::invalid_argument,
                           "finish: " + std::to_string(im.pending.size())
                             + " ticket(s) not waited yet");
  if (im.finished) return caf::none;
  // The pushes waited for have been applied, so the shards take this after them whichever way
  // it travels.
  caf::scoped_actor self{*im.cluster->sys};
  const auto& shards = im.cluster->shards;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    caf::error failed;
    self->request(shards[s], im.cluster->opts.timeout, done_atom::value, im.worker)
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
    if (failed)
      return caf::make_error(caf::sec::runtime_error,
                             "finish of worker " + std::to_string(im.worker) + ": shard "
                               + std::to_string(s) + " refused it: " + describe(failed));
  }
  im.finished = true;
  return caf::none;
}

} // namespace actorps
