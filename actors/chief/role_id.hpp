// Which role a message, a failure or a wait is about: a kind and an index, ordered so it can key
// a map, printed as the cluster spec names tasks ("worker:1", "ps:0", "evaluator:0").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace actorps {

enum class role_kind { worker, ps, evaluator };

/// "worker", "ps" or "evaluator": the task type of the cluster spec.
const char* to_string(role_kind kind);

/// The kind a task type names ("worker", "ps", "evaluator"), or none.
std::optional<role_kind> role_kind_named(const std::string& type);

struct role_id {
  role_kind kind = role_kind::worker;
  int32_t index = 0;

  /// "worker:1": for logs and messages.
  std::string text() const { return std::string(to_string(kind)) + ":" + std::to_string(index); }

  friend bool operator<(const role_id& a, const role_id& b) {
    return std::tie(a.kind, a.index) < std::tie(b.kind, b.index);
  }
  friend bool operator==(const role_id& a, const role_id& b) {
    return a.kind == b.kind && a.index == b.index;
  }
};

inline role_id worker_role(int32_t index) { return {role_kind::worker, index}; }
inline role_id ps_role(int32_t index) { return {role_kind::ps, index}; }
inline role_id evaluator_role() { return {role_kind::evaluator, 0}; }

} // namespace actorps
