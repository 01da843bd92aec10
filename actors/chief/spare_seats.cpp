// Where a spare task joins from, and the word that it joined (spare_seats.hpp).
#include "actors/chief/spare_seats.hpp"

#include "actors/chief/cluster_view.hpp"
#include "actors/protocol/errors.hpp"

#include <algorithm>

namespace actorps::chief_detail {

caf::expected<host_port> spare_address(self_ptr self, role_id role, const std::string& view) {
  const auto kind = role.kind == role_kind::ps ? "ps" : "worker";
  auto seat = seat_for_spare(view, self->state.cfg.remote->cluster_view, kind, role.index);
  if (seat.refusal.empty()) return seat.address;
  const auto name = role.text();
  log_line(log_level::error, "chief", "refused " + name + "'s join as a spare: " + seat.refusal);
  return make_error(errc::cluster_mismatch, name + ": " + seat.refusal);
}

void note_spare_joined(self_ptr self, role_id role, const host_port& address, const char* what,
                       int32_t size, std::size_t spares, const char* scale_flag) {
  auto& st = self->state;
  ++st.spares_joined;
  const auto name = role.text();
  log_line("chief", name + " joined as a spare at " + address.text() + " (the run has "
                      + std::to_string(size) + " " + what + "; actorps scale " + scale_flag + " "
                      + std::to_string(std::max(size + 1, role.index + 1)) + " takes it in)");
  st.metrics->write(json_object().add("event", "spare").add("task", name)
                      .add("address", address.text()).add(what, size)
                      .add("spares", static_cast<uint64_t>(spares))
                      .add("spares_joined", st.spares_joined).add("wall_s", st.elapsed()));
  st.metrics->flush();
}

} // namespace actorps::chief_detail
