#include "actors/deploy/simulation.hpp"

#include "actors/deploy/metrics_endpoint.hpp"
#include "actors/protocol/log.hpp"
#include "actors/protocol/system_config.hpp"

#include <caf/all.hpp>

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

caf::expected<run_summary> simulate(simulation_options opts) {
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
  return run_to_end(sys, spawn_chief(sys, std::move(opts.chief)));
}

} // namespace actorps
