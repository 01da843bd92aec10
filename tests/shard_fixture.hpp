// A doctest fixture owning an actor_system with actorps' types registered, plus helpers that
// talk to one ps_shard through a scoped actor with finite timeouts (a hang fails the test).
#pragma once

#include "actors/model/mlp_plugin.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/roles/ps_shard.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace actorps::test {

inline constexpr auto timeout = std::chrono::seconds(10);

/// A tiny run: layers 4-3-2 cut into blocks of 4 floats (7 blocks, 23 floats), one shard,
/// SGD with lr 1 so that every update is easy to compute by hand.
inline train_spec tiny_spec(consistency mode, int workers, int staleness = 0) {
  train_spec spec;
  spec.model = mlp_model({4, 3, 2});
  spec.block_floats = 4;
  spec.shards = 1;
  spec.workers = workers;
  spec.mode = mode;
  spec.staleness = staleness;
  spec.optimizer.kind = optimizer_kind::sgd;
  spec.optimizer.learning_rate = 1.0f;
  return spec;
}

struct actor_fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::unique_ptr<caf::scoped_actor> self;

  actor_fixture() {
    register_message_types(cfg);
    cfg.set("scheduler.max-threads", size_t{2});
    sys = std::make_unique<caf::actor_system>(cfg);
    self = std::make_unique<caf::scoped_actor>(*sys);
  }
  ~actor_fixture() {
    self.reset();
    sys.reset();
  }
};

/// A shard initialised with values 0, 1, 2, ... and helpers to drive it.
struct shard_fixture : actor_fixture {
  train_spec spec;
  block_layout layout;
  ps_shard_actor shard;
  std::vector<float> initial;

  explicit shard_fixture(train_spec s, shard_config config = {})
    : spec(std::move(s)), layout(spec) {
    shard = spawn_ps_shard(*sys, 0, std::move(config));
    initial.resize(layout.total_floats());
    for (std::size_t i = 0; i < initial.size(); ++i) initial[i] = float(i);
    std::vector<float> part(layout.shard_floats(0));
    layout.gather(0, initial.data(), part.data());
    bool ok = false;
    (*self)->request(shard, timeout, init_atom::value, encode_shard_init(spec, 0, layout, part.data()))
      .receive([&](caf::ok_atom) { ok = true; }, [&](caf::error&) {});
    if (!ok) throw std::runtime_error("shard init failed");
  }
  ~shard_fixture() { (*self)->send_exit(shard, caf::exit_reason::user_shutdown); }

  /// Asks `to` and returns the reply buffer or the error. Ask another fixture's shard through
  /// that fixture: CAF runs an actor woken by a scoped actor on the scoped actor's system, so
  /// a shard asked from here could still be finishing on this system's workers when its own
  /// system is destroyed ("pure virtual method called" in its cleanup, 1 run in ~2 000).
  template <class... Ts>
  caf::expected<wire_buffer> ask(const ps_shard_actor& to, Ts&&... xs) {
    caf::expected<wire_buffer> out{caf::none};
    (*self)->request(to, timeout, std::forward<Ts>(xs)...)
      .receive([&](wire_buffer& reply) { out = std::move(reply); },
               [&](caf::error& err) { out = std::move(err); });
    return out;
  }

  /// A standby of the shard (backup), holding its state: the image's bytes the shard answered,
  /// or the error.
  caf::expected<uint64_t> back_up(const ps_shard_actor& standby) {
    caf::expected<uint64_t> out{caf::none};
    (*self)->request(shard, timeout, backup_atom::value,
                     caf::actor_cast<caf::strong_actor_ptr>(standby))
      .receive([&](uint64_t bytes) { out = bytes; },
               [&](caf::error& err) { out = std::move(err); });
    return out;
  }

  /// Sends push_pull and waits for the answer: the parameters, or the error.
  caf::expected<std::vector<float>> push_pull(const wire_buffer& push) {
    caf::expected<std::vector<float>> out{caf::none};
    (*self)->request(shard, timeout, push_pull_atom::value, push_request{push})
      .receive([&](const wire_buffer& reply) { out = parameters_of(reply); },
               [&](caf::error& err) { out = std::move(err); });
    return out;
  }

  std::vector<float> parameters_of(const wire_buffer& reply) {
    std::vector<float> flat(layout.total_floats(), 0.0f);
    auto msg = scatter_shard_parameters(reply, layout, flat.data());
    if (!msg) throw std::runtime_error("bad reply: " + describe(msg.error()));
    return flat;
  }

  std::vector<float> snapshot() {
    std::vector<float> flat;
    (*self)->request(shard, timeout, snapshot_atom::value)
      .receive([&](const wire_buffer& snap) { flat = parameters_of(snap); },
               [&](caf::error&) {});
    return flat;
  }

  shard_stats stats() {
    shard_stats out;
    (*self)->request(shard, timeout, stats_atom::value)
      .receive([&](shard_stats& s) { out = s; }, [&](caf::error&) {});
    return out;
  }

  /// A gradient whose every value is `value`.
  wire_buffer push_of(int32_t worker, int64_t clock, float value) {
    std::vector<float> grad(layout.total_floats(), value);
    return encode_push(worker, clock, 0, layout, grad.data());
  }
};

} // namespace actorps::test
