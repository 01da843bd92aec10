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
  scale_outcome out{scale_status::unreachable, "no answer"};
  caf::scoped_actor self{*sys};
  self->request(*handle, opts.wait, scale_atom::value, opts.ps, opts.workers)
    .receive(
      [&](int32_t shards, int32_t workers) {
        out = {scale_status::done, "the run goes on with " + std::to_string(shards)
                                     + " shards and " + std::to_string(workers) + " workers"};
      },
      [&](caf::error& err) {
        const bool lost = err == caf::sec::request_timeout
                          || err == caf::sec::request_receiver_down;
        out = {lost ? scale_status::unreachable : scale_status::refused, describe(err)};
      });
  return out;
}

} // namespace actorps
