#include "actors/link/link_verbs.hpp"

#include "actors/protocol/wire.hpp"

namespace actorps {

namespace {

const char* verb_name(frame_kind kind) {
  switch (kind) {
    case frame_kind::push_pull: return "push";
    case frame_kind::pull: return "pull";
    case frame_kind::keyed_pull: return "keyed pull";
    case frame_kind::snapshot: return "snapshot";
    case frame_kind::keyed_snapshot: return "keyed snapshot";
    case frame_kind::hello:
    case frame_kind::reply:
    case frame_kind::failure:
    case frame_kind::shm_offer:
    case frame_kind::local_ticket:
    case frame_kind::reply_part: return "";
  }
  return "";
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
    out = link_verb_info{v::kind, v::asker, v::arrival, v::reply, v::has_payload, verb_name(kind)};
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
        link_call call{v::kind};
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
    link_verbs{});
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
      } else if constexpr (std::is_same_v<typename v::atom, push_pull_atom>) {
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
