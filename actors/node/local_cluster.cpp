// local_cluster and worker_client: shards in this process driven by the user's own loop
// (actors/ps.hpp). Each worker_client talks to the shards through a small actor of its own,
// which sends the requests, scatters each shard's reply into the caller's buffer and fulfils
// the ticket's promise once every shard has answered; the caller's thread blocks only in wait.
#include "actors/ps.hpp"

#include "actors/protocol/system_config.hpp"
#include "actors/roles/ps_shard.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <mutex>

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

struct local_cluster::impl {
  caf::actor_system_config cfg;  // before sys: the system keeps a reference to it
  std::unique_ptr<caf::actor_system> sys;
  cluster_options opts;
  train_spec spec;
  std::unique_ptr<block_layout> layout;
  std::vector<ps_shard_actor> shards;

  ~impl() {
    for (auto& s : shards) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  }
};

struct worker_client::impl {
  std::shared_ptr<local_cluster::impl> cluster;  // keeps the shards alive
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

caf::behavior client_actor(caf::event_based_actor* self,
                           std::shared_ptr<local_cluster::impl> cluster, int32_t worker) {
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

local_cluster::local_cluster(const model_spec& model, const cluster_options& opts)
  : impl_(std::make_shared<impl>()) {
  if (opts.ps < 1 || opts.workers < 1)
    throw std::invalid_argument("a cluster needs at least one shard and one worker");
  auto& im = *impl_;
  im.opts = opts;
  im.spec.model = model;
  im.spec.shards = opts.ps;
  im.spec.workers = opts.workers;
  im.spec.mode = opts.mode;
  im.spec.staleness = opts.staleness;
  im.spec.optimizer = opts.optimizer;
  if (!(im.spec.optimizer.learning_rate > 0))
    im.spec.optimizer.learning_rate = default_learning_rate(opts.optimizer.kind);
  im.spec.schedule = opts.schedule;
  im.spec.total_clocks = opts.total_clocks;
  im.spec.seed = opts.seed;
  im.spec.block_floats = opts.block_floats;
  im.layout = std::make_unique<block_layout>(im.spec);  // throws for an invalid model
  configure_system(im.cfg, 0);
  im.sys = std::make_unique<caf::actor_system>(im.cfg);
  auto initial = initial_values(model, opts.seed);
  caf::scoped_actor self{*im.sys};
  for (int s = 0; s < opts.ps; ++s) {
    im.shards.push_back(spawn_ps_shard(*im.sys, s));
    std::vector<float> part(im.layout->shard_floats(s));
    im.layout->gather(s, initial.data(), part.data());
    caf::error failed;
    self->request(im.shards.back(), opts.timeout, init_atom::value,
                  encode_shard_init(im.spec, s, *im.layout, part.data()))
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
    if (failed)
      throw std::invalid_argument("shard " + std::to_string(s) + " refused its init: "
                                  + describe(failed));
  }
}

local_cluster::~local_cluster() = default;

std::size_t local_cluster::total_floats() const { return impl_->layout->total_floats(); }

worker_client local_cluster::worker(int w) {
  if (w < 0 || w >= impl_->opts.workers)
    throw std::invalid_argument("worker " + std::to_string(w) + " is outside the cluster's "
                                + std::to_string(impl_->opts.workers) + " workers");
  auto client = std::make_shared<worker_client::impl>();
  client->cluster = impl_;
  client->client = impl_->sys->spawn(client_actor, impl_, static_cast<int32_t>(w));
  return worker_client{std::move(client)};
}

caf::expected<std::vector<float>> local_cluster::snapshot() {
  auto& im = *impl_;
  std::vector<float> flat(im.layout->total_floats(), 0.0f);
  caf::scoped_actor self{*im.sys};
  caf::error failed;
  for (auto& shard : im.shards)
    self->request(shard, im.opts.timeout, snapshot_atom::value)
      .receive(
        [&](const wire_buffer& snap) {
          if (auto ok = scatter_shard_parameters(snap, *im.layout, flat.data()); !ok)
            failed = ok.error();
        },
        [&](caf::error& err) { failed = std::move(err); });
  if (failed) return failed;
  return flat;
}

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
