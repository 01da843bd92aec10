#include "actors/roles/authorisation.hpp"

#include "actors/protocol/rate_limited_log.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"

#include <atomic>

namespace actorps {

namespace {

std::atomic<uint64_t> refused{0};

caf::error refuse(const sender_role& role, const std::string& what, const std::string& rule) {
  return make_error(errc::not_authorised, what + " from " + role.name + " (" + rule + ")");
}

bool chief(const sender_role& role) { return role.unrestricted() || role.is("chief", 0); }

} // namespace

sender_role current_role(caf::local_actor* self) {
  return role_of(self->current_sender(), self->home_system());
}

caf::error authorise_chief(const sender_role& role, const std::string& what) {
  if (chief(role)) return caf::none;
  return refuse(role, what, "only chief:0 may send it");
}

caf::error authorise_admin(const sender_role& role, const std::string& what) {
  if (chief(role) || role.is("admin", 0)) return caf::none;
  return refuse(role, what, "only chief:0 and admin:0 may send it");
}

caf::error authorise_worker(const sender_role& role, int32_t worker, const std::string& what) {
  if (role.unrestricted() || role.is("worker", worker)) return caf::none;
  return refuse(role, what, "only worker:" + std::to_string(worker) + " may send it");
}

caf::error authorise_chief_or_worker(const sender_role& role, int32_t worker,
                                     const std::string& what) {
  if (chief(role) || role.is("worker", worker)) return caf::none;
  return refuse(role, what, "only chief:0 and worker:" + std::to_string(worker) + " may send it");
}

caf::error authorise_reader(const sender_role& role, const std::string& what) {
  if (chief(role) || role.is("evaluator", 0)
      || (role.kind == sender_role::kind_t::task && role.type == "worker"))
    return caf::none;
  return refuse(role, what, "only chief:0, evaluator:0 and workers may send it");
}

caf::error authorise_task(const sender_role& role, const std::string& type, int32_t index,
                          const std::string& what) {
  if (role.unrestricted() || role.is(type, index)) return caf::none;
  return refuse(role, what, "only " + type + ":" + std::to_string(index) + " may send it");
}

caf::error authorise_primary(const sender_role& role, int32_t primary_task,
                             const std::string& what) {
  if (chief(role) || role.is("ps", primary_task)) return caf::none;
  return refuse(role, what, "only chief:0 and ps:" + std::to_string(primary_task)
                              + ", where its primary runs, may send it");
}

caf::error authorise_ps_task(const sender_role& role, const std::string& what) {
  if (chief(role) || (role.kind == sender_role::kind_t::task && role.type == "ps"))
    return caf::none;
  return refuse(role, what, "only chief:0 and the ps tasks may send it");
}

caf::error authorise_local(const sender_role& role, const std::string& what) {
  if (role.unrestricted()) return caf::none;
  return refuse(role, what, "only this process may send it");
}

caf::error note_refusal(const std::string& who, caf::error err) {
  if (!err) return err;
  ++refused;
  static rate_limited_log log{[](const std::string& line) { log_line(log_level::warn, "authz", line); }};
  log.write(who + " not authorised", who + " refused " + describe(err));
  return err;
}

uint64_t unauthorised_refusals() { return refused.load(); }

} // namespace actorps
