#include "actors/deploy/simulation.hpp"

#include "actors/deploy/metrics_endpoint.hpp"
#include "actors/protocol/log.hpp"
#include "actors/protocol/system_config.hpp"

#include <caf/all.hpp>

#include <memory>
#include <mutex>

namespace actorps {

caf::expected<run_summary> run_to_end(caf::actor_system& sys, const chief_actor& chief,
                                      const std::function<void()>& sent) {
  caf::expected<run_summary> result{caf::make_error(caf::sec::runtime_error, "no result")};
  {
    caf::scoped_actor self{sys};
    self->monitor(chief);  // a chief that dies without answering must not leave us waiting
    self->send(chief, run_atom::value);
    if (sent) sent();
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

caf::expected<run_summary> simulate(
    simulation_options opts,
    const std::function<void(std::function<void(const std::string& why)>)>& on_start) {
  caf::actor_system_config cfg;
  configure_system(cfg, opts.scheduler_threads);
  caf::actor_system sys{cfg};
  std::unique_ptr<metrics_endpoint> endpoint;  // destroyed before `sys`
  if (opts.prometheus_port != 0) {
    auto opened = metrics_endpoint::open(sys, "127.0.0.1", opts.prometheus_port);
    if (!opened) return opened.error();
    endpoint = std::move(*opened);
    if (!opts.chief.metrics) opts.chief.metrics = std::make_shared<metrics_file>("");
    endpoint->count_events_of(*opts.chief.metrics);
    log_line("simulate", "serving /metrics on " + endpoint->address() + " (unauthenticated)");
  }
  auto chief = spawn_chief(sys, std::move(opts.chief));
  if (!on_start) return run_to_end(sys, chief);
  // A stop may be asked from another thread at any time: it reaches the chief only while the
  // run goes on (the handle is dropped, under the lock, before `sys` ends).
  struct door {
    std::mutex mutex;
    chief_actor chief;
  };
  auto to_chief = std::make_shared<door>();
  to_chief->chief = chief;
  auto result = run_to_end(sys, chief, [&] {
    on_start([to_chief](const std::string& why) {
      std::lock_guard<std::mutex> guard(to_chief->mutex);
      if (to_chief->chief) caf::anon_send(to_chief->chief, interrupt_atom::value, why);
    });
  });
  std::lock_guard<std::mutex> guard(to_chief->mutex);
  to_chief->chief = nullptr;
  return result;
}

} // namespace actorps
