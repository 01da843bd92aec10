// The data link's side of the shard's verbs (actors/protocol/shard_verbs.hpp: the table, one
// row per request kind): both ends walk the table. The client's proxy turns a message to the
// shard into a frame (link_call_of), the server turns a frame back into that message
// (with_shard_message), the frame checks and the in-place reader take each kind's shape from it,
// and authorisation its asker. Nothing here names a verb: a new one is a row of the table.
#pragma once

#include "actors/link/link_socket.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/shard_verbs.hpp"

#include <caf/detail/type_list.hpp>
#include <caf/type_erased_tuple.hpp>

#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace actorps {

/// The frame kind a verb's requests travel as.
template <class Verb>
inline constexpr frame_kind frame_of = static_cast<frame_kind>(Verb::frame);

namespace detail {
constexpr bool is_link_frame(uint16_t n) {
  for (auto own : {frame_kind::hello, frame_kind::reply, frame_kind::failure, frame_kind::shm_offer,
                   frame_kind::reply_part, frame_kind::local_ticket})
    if (static_cast<uint16_t>(own) == n) return true;
  return false;
}
template <class... Verbs>
constexpr bool frames_apart(std::tuple<Verbs...>*) {
  constexpr uint16_t frames[] = {Verbs::frame...};
  for (std::size_t i = 0; i < sizeof...(Verbs); ++i) {
    if (frames[i] == 0 || (frames[i] & in_region_bit) != 0 || is_link_frame(frames[i])) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (frames[i] == frames[j]) return false;
  }
  return true;
}
} // namespace detail
static_assert(detail::frames_apart(static_cast<shard_verbs*>(nullptr)),
              "each verb has a frame number of its own: none of the link's own frames, not 0, "
              "below the in-region bit");

/// What a verb's row says, for code that holds a frame kind rather than a type.
struct link_verb_info {
  frame_kind kind{};
  link_asker asker{};
  link_arrival arrival{};
  link_reply reply{};
  bool has_payload = false;  ///< a Cap'n Proto message follows the header (or lies in memory)
  const char* name = "";     ///< its atom, "keyed " before it when a Pull names the keys
};

/// The row of `kind`; nullopt when `kind` is no request (hello, reply, failure, ...).
std::optional<link_verb_info> verb_of(frame_kind kind);

/// Calls f(verb{}) for the verb of `kind` and returns true; false when `kind` is no request.
template <class F>
bool visit_verb(frame_kind kind, F&& f) {
  return std::apply(
    [&](auto... verbs) { return ((frame_of<decltype(verbs)> == kind ? (f(verbs), true) : false) || ...); },
    shard_verbs{});
}

/// A request as the link carries it: its frame kind, the header's a and b, and its payload
/// (null: none). The payload is the message's own buffer, not a copy.
struct link_call {
  frame_kind kind{};
  int64_t a = 0;
  int64_t b = 0;
  const wire_buffer* payload = nullptr;
};

/// The link's form of a message to the shard; nullopt when the link does not carry it (control
/// messages go to the shard over CAF).
std::optional<link_call> link_call_of(const caf::type_erased_tuple& msg);

namespace detail {
template <class Verb, class F, class... Args>
void call_with(F& f, int64_t a, int64_t b, wire_buffer&& payload, caf::detail::type_list<Args...>) {
  using atom = typename Verb::atom;
  if constexpr (Verb::is_push)
    f(Verb{}, atom::value, push_request{std::move(payload)});
  else if constexpr (Verb::has_payload)
    f(Verb{}, atom::value, std::move(payload));
  else if constexpr (Verb::in_header)
    f(Verb{}, atom::value, static_cast<int32_t>(a), b);
  else
    f(Verb{}, atom::value);
  (void)a, (void)b, (void)payload;
}
} // namespace detail

/// The server's side: calls f(verb, atom, args...) with the shard message a request of `kind`
/// stands for, built from the header's a and b or the payload; false when `kind` is no request.
template <class F>
bool with_shard_message(frame_kind kind, int64_t a, int64_t b, wire_buffer&& payload, F&& f) {
  return visit_verb(kind, [&](auto verb) {
    using verb_t = decltype(verb);
    detail::call_with<verb_t>(f, a, b, std::move(payload), typename verb_t::arguments{});
  });
}

/// The payload a verb's message carries: a Pull, or a push_request's Push.
inline const wire_buffer& payload_of(const wire_buffer& message) { return message; }
inline const wire_buffer& payload_of(const push_request& push) { return push.bytes; }

namespace detail {
template <class Verb, class Send, class... Args>
auto handler_for(Send send, caf::detail::type_list<Args...>) {
  return [send](typename Verb::atom, const Args&... args) -> caf::result<wire_buffer> {
    link_call call{frame_of<Verb>};
    if constexpr (Verb::is_push) {
      const push_request& push = std::get<0>(std::tie(args...));
      if (push.notice) return caf::delegated<wire_buffer>{};  // sent, never asked: dropped
      if (push.progress)
        return make_error(errc::malformed_message, "a push still arriving sent to a proxy");
    }
    if constexpr (Verb::has_payload) call.payload = &payload_of(std::get<0>(std::tie(args...)));
    if constexpr (Verb::in_header) std::tie(call.a, call.b) = std::tie(args...);
    return send(call);
  };
}
} // namespace detail

/// The client's side as message handlers: one per verb, taking the shard's message and
/// returning send(link_call) with its link form, for a proxy's behaviour (shard_proxy.cpp). A
/// push's reply stream belongs to a link's server, in the shard's process: through a proxy the
/// push goes whole, and so does its answer; a push still arriving (with its progress) is handed
/// on by a link's server to its own shard only, and refused here.
template <class Send>
auto link_verb_handlers(Send send) {
  return std::apply(
    [&](auto... verbs) {
      return std::make_tuple(
        detail::handler_for<decltype(verbs)>(send, typename decltype(verbs)::arguments{})...);
    },
    shard_verbs{});
}

/// The worker a request speaks for, as authorisation checks it: the header's a for a (worker,
/// clock) request, the Push's or Pull's worker for one with a payload (decoded: an error when it
/// is not one); nullopt for a verb any client may use.
caf::expected<std::optional<int32_t>> worker_named(frame_kind kind, int64_t a,
                                                   const wire_buffer& payload);

} // namespace actorps
