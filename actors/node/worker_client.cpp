// worker_client (actors/ps.hpp): a user's loop talking to the shards. Each client owns a small
// actor that asks every shard, and once all have answered scatters their replies into the
// caller's buffer and fulfils the ticket's promise; the caller's thread blocks only in wait.
#include "actors/node/cluster_core.hpp"

#include "actors/protocol/fan_out.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <future>
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
  std::shared_ptr<std::promise<call_result>> done;
};

} // namespace actorps::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorps::detail::client_call)

namespace actorps {

using detail::call_result;
using detail::client_call;
using detail::cluster_core;

struct worker_client::impl {
  std::shared_ptr<cluster_core> cluster;  // keeps the shards (or the proxies) alive
  caf::actor client;
  worker_client::ticket next = 0;
  std::map<worker_client::ticket, std::future<call_result>> pending;

  ~impl() { caf::anon_send_exit(client, caf::exit_reason::user_shutdown); }
};

namespace {

/// What the shards' replies to one call say together: the staleness (the largest over shards)
/// and the newest clock included (the smallest); each reply is scattered into `out`.
call_result combine(const std::vector<wire_buffer>& replies, const block_layout& layout,
                    int64_t target, float* out) {
  call_result r;
  for (std::size_t s = 0; s < replies.size(); ++s) {
    auto view = scatter_shard_parameters(replies[s], layout, out);
    if (!view) {
      r.err = view.error();
      return r;
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
      const auto& shards = cluster->shards;
      const auto& layout = *cluster->layout;
      const auto target = call.push ? call.clock + 1 : call.clock;
      ask_each<wire_buffer>(
        shards.size(),
        [&](std::size_t s) {
          if (call.push)
            return self->request(shards[s], cluster->opts.timeout, push_pull_atom::value,
                                 encode_push(worker, call.clock, static_cast<int32_t>(s), layout,
                                             call.grad));
          return self->request(shards[s], cluster->opts.timeout, pull_atom::value, worker,
                               call.clock);
        },
        [=, out = call.out, done = call.done](std::vector<wire_buffer> replies) {
          done->set_value(combine(replies, *cluster->layout, target, out));
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

worker_client::ticket worker_client::pull(int64_t clock, float* params_out) {
  return submit(false, clock, nullptr, params_out);
}

worker_client::ticket worker_client::push_pull(int64_t clock, const float* grad,
                                               float* params_out) {
  return submit(true, clock, grad, params_out);
}

worker_client::ticket worker_client::submit(bool push, int64_t clock, const float* grad,
                                            float* params_out) {
  client_call call{push, clock, grad, params_out, std::make_shared<std::promise<call_result>>()};
  auto t = impl_->next++;
  impl_->pending.emplace(t, call.done->get_future());
  caf::anon_send(impl_->client, std::move(call));
  return t;
}

caf::expected<int64_t> worker_client::wait(ticket t) {
  auto i = impl_->pending.find(t);
  if (i == impl_->pending.end())
    return caf::make_error(caf::sec::invalid_argument,
                           "ticket " + std::to_string(t) + " is unknown or already waited");
  auto result = i->second.get();
  impl_->pending.erase(i);
  if (result.err) return std::move(result.err);
  newest_clock_ = result.newest_clock;
  return result.staleness;
}

} // namespace actorps
