// The shard process of a two-process benchmark (bench_transport, bench_sparse_link): an
// uninitialised shard published behind a ps task on 127.0.0.1, with its data link, as a ps
// process does (actors/deploy/deployment.cpp). The driving process connects with connect_shard,
// sends init (or, over TLS, finds the shard initialised here: only the chief's certificate may
// send init), and ends this process by stopping the shard it was given.
#pragma once

#include "actors/deploy/ps_task.hpp"
#include "actors/guard/guarded_publish.hpp"
#include "actors/link/shard_link_server.hpp"
#include "actors/guard/tls_config.hpp"
#include "actors/protocol/system_config.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/roles/ps_shard.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace actorps {

struct bench_serve_options {
  uint16_t port = 0;       ///< the ps task's port on 127.0.0.1; 0: any free one
  int threads = 2;         ///< CAF scheduler threads
  bool data_link = true;   ///< false: everything over CAF's middleman
  bool tcp_only = false;   ///< the data link over TCP only (no local socket)
  tls_files tls;           ///< CAF's connection and the data link over mutual TLS with these
  std::optional<wire_buffer> init;  ///< the shard's init, sent here before it is published
  link_limits limits = {};          ///< the data link's
};

/// What the process publishes in place of the shard: given the shard, an actor speaking
/// ps_shard_actor in front of it (a benchmark's probe). It must stop when the shard does, and
/// stopping it must stop the shard (link them).
using bench_shard_wrapper = std::function<ps_shard_actor(caf::actor_system&, ps_shard_actor)>;

/// Publishes the shard (or wrap's actor in front of it) and prints "bench shard serving on
/// 127.0.0.1:PORT" on stderr (the port it got), then runs until that actor stops, and exits the
/// process. Throws std::runtime_error when it cannot listen.
[[noreturn]] inline void serve_bench_shard(const bench_serve_options& o,
                                           const bench_shard_wrapper& wrap = {}) {
  caf::actor_system_config cfg;
  configure_system(cfg, o.threads, network_settings{});
  configure_tls(cfg, o.tls);
  caf::actor_system sys{cfg};
  std::unique_ptr<shard_link_server> links;
  if (o.data_link) {  // on a free port, announced by the published ps task
    auto listening = shard_link_server::listen(
      "127.0.0.1", 0,
      [](const std::string& line) { std::fprintf(stderr, "bench shard: %s\n", line.c_str()); },
      o.limits, o.tls);
    if (!listening) throw std::runtime_error(describe(listening.error()));
    links = std::move(*listening);
  }
  auto shard = spawn_ps_shard(sys, 0);
  if (o.init) {
    caf::scoped_actor self{sys};
    bool ok = false;
    self->request(shard, std::chrono::seconds(60), init_atom::value, *o.init)
      .receive([&](caf::ok_atom) { ok = true; }, [](caf::error&) {});
    if (!ok) throw std::runtime_error("shard init failed");
  }
  auto front = wrap ? wrap(sys, shard) : shard;
  if (links) links->serve(sys, front, 0);
  auto task = spawn_ps_task(sys, {front, links ? links->port() : uint16_t{0},
                                  links && !o.tcp_only ? links->local_name() : std::string{}});
  auto port = o.tls.enabled()  // CAF's own publish knows no TLS
                ? publish_guarded(sys, task, "127.0.0.1", o.port, {})
                : sys.middleman().publish(task, o.port, "127.0.0.1", true);
  if (!port) throw std::runtime_error("cannot listen on port " + std::to_string(o.port));
  caf::scoped_actor self{sys};
  self->monitor(front);
  std::fprintf(stderr, "bench shard serving on 127.0.0.1:%u\n", unsigned(*port));
  self->receive([](caf::down_msg&) {});
  // Read by scripts/bench/transport_processes.sh: this process's copies over its whole life.
  std::fprintf(stderr, "bench shard copied_payload_bytes %llu\n",
               static_cast<unsigned long long>(copied_payload_bytes.load()));
  std::fflush(nullptr);
  std::_Exit(0);  // see apps/cluster_commands.cpp: CAF 0.17 may keep a dead peer's references
}

} // namespace actorps
