#include "actors/simulation.hpp"

#include "kernels/denormals.hpp"

#include <caf/all.hpp>

#include <thread>

namespace actorps {

namespace {

/// Flushes denormals in every thread CAF starts: shards run their optimizer there, and momentum
/// or Adam state decaying into denormal floats slowed a shard 2x (STACK.md).
class denormal_hook : public caf::thread_hook {
public:
  void init(caf::actor_system&) override {}
  void thread_started() override { flush_denormals_to_zero(); }
  void thread_terminates() override {}
};

} // namespace

caf::expected<run_summary> simulate(simulation_options opts) {
  caf::actor_system_config cfg;
  register_message_types(cfg);
  auto threads = opts.scheduler_threads > 0 ? opts.scheduler_threads
                                            : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", static_cast<size_t>(threads));
  cfg.add_thread_hook<denormal_hook>();
  caf::actor_system sys{cfg};
  caf::expected<run_summary> result{caf::make_error(caf::sec::runtime_error, "no result")};
  {
    auto chief = spawn_chief(sys, std::move(opts.chief));
    caf::scoped_actor self{sys};
    self->monitor(chief);  // a chief that dies without answering must not leave us waiting
    self->send(chief, run_atom::value);
    self->receive([&](run_summary& summary) { result = std::move(summary); },
                  [&](caf::error& err) { result = std::move(err); },
                  [&](caf::down_msg& dm) {
                    result = dm.reason ? dm.reason
                                       : caf::make_error(caf::sec::runtime_error,
                                                         "the chief stopped without a summary");
                  });
  }
  return result;
}

} // namespace actorps
