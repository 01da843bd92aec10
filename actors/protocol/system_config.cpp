#include "actors/protocol/system_config.hpp"

#include "actors/protocol/messages.hpp"
#include "kernels/denormals.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <thread>

namespace actorps {

namespace {

/// Shards run their optimizer on CAF's threads, and momentum or Adam state decaying into
/// denormal floats slowed a shard 2x (STACK.md).
class denormal_hook : public caf::thread_hook {
public:
  void init(caf::actor_system&) override {}
  void thread_started() override { flush_denormals_to_zero(); }
  void thread_terminates() override {}
};

} // namespace

void configure_system(caf::actor_system_config& cfg, int scheduler_threads,
                      const std::optional<network_settings>& network) {
  register_message_types(cfg);
  auto threads = scheduler_threads > 0 ? static_cast<unsigned>(scheduler_threads)
                                       : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", static_cast<size_t>(threads));
  cfg.add_thread_hook<denormal_hook>();
  // An idle CAF worker first polls its queue 500 times with a 50 us sleep between polls (25 ms
  // of wake-ups) before it waits on a condition variable, which any enqueue from outside the
  // scheduler (detached workers, the data link's threads) signals. With as many busy threads
  // as cores those wake-ups take CPU from the kernels and copies: 14 % of a shard process's time
  // went to context switches. Skipping that phase: 4 MiB push+pull across processes 3.7 ->
  // 3.2 ms, simulate on synthetic 784-256-128-10 72-77k -> 82-99k samples/s (2-core VM).
  cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
  if (network) {
    cfg.load<caf::io::middleman>();
    cfg.set("middleman.heartbeat-interval", caf::timespan{network->heartbeat});
    cfg.set("middleman.connection-timeout", caf::timespan{network->peer_timeout});
  }
}

} // namespace actorps
