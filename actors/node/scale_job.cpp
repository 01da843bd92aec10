// scale_job (actors/ps/scale.hpp): one request to the chief, from an actor system of its own.
#include "actors/ps/scale.hpp"

#include "actors/guard/connect.hpp"
#include "actors/guard/tls_config.hpp"
#include "actors/protocol/address.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/system_config.hpp"
#include "actors/tls/tls_files.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <future>
#include <memory>
#include <stdexcept>

namespace actorps {

scale_outcome scale_job(const scale_options& opts) {
  auto refused = [](std::string why) { return scale_outcome{scale_status::refused, std::move(why)}; };
  if (opts.ps < 0) return refused("--ps must be 1 or more, got " + std::to_string(opts.ps));
  if (opts.workers < 0)
    return refused("--workers must be 1 or more, got " + std::to_string(opts.workers));
  if (opts.ps == 0 && opts.workers == 0) return refused("neither shards nor workers asked for");
  host_port chief;
  try {
    chief = parse_address(opts.chief, "--chief");
  } catch (const std::exception& e) {
    return refused(e.what());
  }
  const tls_files tls{opts.tls_cert, opts.tls_key, opts.tls_ca};
  if (auto why = check_tls_files(tls); !why.empty()) return refused(why);
  // Left to the end of the process on purpose (scale.hpp): never destroyed, never waited for.
  auto* cfg = new caf::actor_system_config;
  configure_system(*cfg, 2, network_settings{});
  configure_tls(*cfg, tls);
  auto* sys = new caf::actor_system(*cfg);
  auto handle = connect_to<chief_actor>(*sys, chief, opts.connect_timeout);
  if (!handle) return {scale_status::unreachable, describe(handle.error())};
  // Asked by an actor that monitors the chief: a connection that drops fails no request before
  // its wait is over, but the chief's loss reaches its monitors at once.
  auto answered = std::make_shared<std::promise<scale_outcome>>();
  auto answer = answered->get_future();
  sys->spawn([answered, chief = *handle, opts](caf::event_based_actor* me) {
    auto once = [answered, me](scale_outcome out) {
      answered->set_value(std::move(out));
      me->quit();  // nothing after the first: the answer or the loss
    };
    me->monitor(chief);
    me->set_down_handler([once](caf::down_msg& dm) {
      once({scale_status::unreachable, "the chief is gone (" + describe(dm.reason) + ")"});
    });
    me->request(chief, opts.wait, scale_atom::value, opts.ps, opts.workers)
      .then(
        [once](int32_t shards, int32_t workers) {
          once({scale_status::done, "the run goes on with " + std::to_string(shards)
                                      + " shards and " + std::to_string(workers) + " workers"});
        },
        [once](caf::error& err) {
          const bool lost = err == caf::sec::request_timeout
                            || err == caf::sec::request_receiver_down;
          once({lost ? scale_status::unreachable : scale_status::refused, describe(err)});
        });
  });
  return answer.get();
}

} // namespace actorps
