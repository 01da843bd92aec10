// worker_client (actors/ps.hpp): a user's loop talking to the shards. Each client owns a small
// actor that sends the requests, scatters each shard's reply into the caller's buffer and fulfils
// the ticket's promise once every shard has answered; the caller's thread blocks only in wait.
#include "actors/node/cluster_core.hpp"

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

/// One call in flight: replies still missing and what arrived so far.
struct call_progress {
  std::size_t awaiting;
  call_result result;
  bool finished = false;
};

caf::behavior client_actor(caf::event_based_actor* self, std::shared_ptr<cluster_core> cluster,
                           int32_t worker) {
  return {
    [=](const client_call& call) {
      const auto& shards = cluster->shards;
      const auto& layout = *cluster->layout;
      auto progress = std::make_shared<call_progress>(call_progress{shards.size(), {}});
      const auto target = call.push ? call.clock + 1 : call.clock;
      auto finish = [progress, done = call.done] {
        progress->finished = true;
        done->set_value(std::move(progress->result));
      };
      for (std::size_t s = 0; s < shards.size(); ++s) {
        auto on_reply = [=, out = call.out](const wire_buffer& reply) {
          if (progress->finished) return;
          auto view = scatter_shard_parameters(reply, layout, out);
          if (!view) {
            progress->result.err = view.error();
            return finish();
          }
          auto& r = progress->result;
          r.staleness = std::max(r.staleness, target - view->min_clock);
          r.newest_clock = s == 0 ? view->newest_clock : std::min(r.newest_clock,
                                                                  view->newest_clock);
          if (--progress->awaiting == 0) finish();
        };
        auto on_error = [=](caf::error& err) {
          if (progress->finished) return;
          progress->result.err = std::move(err);
          finish();
        };
        if (call.push)
          self->request(shards[s], cluster->opts.timeout, push_pull_atom::value,
                        encode_push(worker, call.clock, static_cast<int32_t>(s), layout, call.grad))
            .then(on_reply, on_error);
        else
          self->request(shards[s], cluster->opts.timeout, pull_atom::value, worker, call.clock)
            .then(on_reply, on_error);
      }
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
