// JSON text as actorps writes it: the metrics lines (--metrics), the commands' output (predict,
// evaluate --json, gen-data) and the benchmarks'. Part of the front door, so that a program
// prints what the command prints; header-only on nlohmann's json, so that the layers behind
// the front door write their lines with it too (scripts/layers.txt: layer plain).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace actorps {

/// The one way actorps renders JSON text (metrics lines, the commands' and benchmarks' output):
/// compact, keys in the order they were added, non-finite numbers as null, bytes that are not
/// UTF-8 replaced by U+FFFD rather than thrown.
inline std::string render_json(const nlohmann::ordered_json& value) {
  // nlohmann writes NaN and infinities as null; invalid UTF-8 (a path, a peer's error text)
  // must not throw inside an actor.
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

/// One event built key by key, for call sites that chain:
/// json_object().add("event", "eval").add("clock", 40). A thin builder over
/// nlohmann::ordered_json; a value is stored with its own JSON type (string, integer, unsigned,
/// double, bool, or any value nlohmann can convert).
class json_object {
public:
  template <class T>
  json_object& add(const char* key, const T& value) {
    doc_[key] = value;
    return *this;
  }
  const nlohmann::ordered_json& json() const { return doc_; }
  std::string str() const { return render_json(doc_); }

private:
  nlohmann::ordered_json doc_ = nlohmann::ordered_json::object();
};

} // namespace actorps
