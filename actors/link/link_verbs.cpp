#include "actors/link/link_verbs.hpp"

#include "actors/protocol/wire.hpp"

#include <caf/atom.hpp>

#include <string>

namespace actorps {

namespace {

/// A verb's name for messages: its atom, "keyed " before it when a Pull names the keys ("pull",
/// "keyed pull", "push_pull", ...); made once per verb.
template <class Verb>
const char* verb_name() {
  static const std::string name = std::string(Verb::has_payload && !Verb::is_push ? "keyed " : "")
                                  + caf::to_string(Verb::atom::value);
  return name.c_str();
}

/// Whether `msg` is exactly (Atom, Args...).
template <class Atom, class... Args>
bool matches(const caf::type_erased_tuple& msg, caf::detail::type_list<Args...>) {
  return msg.match_elements<Atom, Args...>();
}

} // namespace

std::optional<link_verb_info> verb_of(frame_kind kind) {
  std::optional<link_verb_info> out;
  visit_verb(kind, [&](auto verb) {
    using v = decltype(verb);
    out = link_verb_info{kind, v::asker, v::arrival, v::reply, v::has_payload, verb_name<v>()};
  });
  return out;
}

std::optional<link_call> link_call_of(const caf::type_erased_tuple& msg) {
  std::optional<link_call> out;
  std::apply(
    [&](auto... verbs) {
      auto try_one = [&](auto verb) {
        using v = decltype(verb);
        if (!matches<typename v::atom>(msg, typename v::arguments{})) return false;
        link_call call{frame_of<v>};
        if constexpr (v::is_push) {
          const auto& push = msg.get_as<push_request>(1);
          if (push.notice || push.progress) return true;  // a link server's, to its own shard
          call.payload = &push.bytes;
        }
        else if constexpr (v::has_payload) call.payload = &msg.get_as<wire_buffer>(1);
        if constexpr (v::in_header) {
          call.a = msg.get_as<int32_t>(1);
          call.b = msg.get_as<int64_t>(2);
        }
        out = call;
        return true;
      };
      (try_one(verbs) || ...);
    },
    shard_verbs{});
  return out;
}

caf::expected<std::optional<int32_t>> worker_named(frame_kind kind, int64_t a,
                                                   const wire_buffer& payload) {
  caf::expected<std::optional<int32_t>> out{std::nullopt};
  visit_verb(kind, [&](auto verb) {
    using v = decltype(verb);
    if constexpr (v::asker == link_asker::named_worker) {
      if constexpr (v::in_header) {
        out = std::optional<int32_t>{static_cast<int32_t>(a)};
      } else if constexpr (v::is_push) {
        auto push = decode_push(payload);
        if (push) out = std::optional<int32_t>{push->worker};
        else out = push.error();
      } else {
        auto pull = decode_pull(payload);
        if (pull) out = std::optional<int32_t>{pull->worker};
        else out = pull.error();
      }
    }
  });
  return out;
}

} // namespace actorps
