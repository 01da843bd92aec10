#include "actors/chief/role_id.hpp"

namespace actorps {

const char* to_string(role_kind kind) {
  switch (kind) {
    case role_kind::worker: return "worker";
    case role_kind::ps: return "ps";
    case role_kind::evaluator: return "evaluator";
  }
  return "?";
}

std::optional<role_kind> role_kind_named(const std::string& type) {
  for (auto kind : {role_kind::worker, role_kind::ps, role_kind::evaluator})
    if (type == to_string(kind)) return kind;
  return std::nullopt;
}

} // namespace actorps
