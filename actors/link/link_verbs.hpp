// The data link's verbs: every request a client makes of a shard over the link, in one table.
// A row names the frame kind, the shard's message it stands for (its atom and arguments), who
// may ask, and how its bytes travel. Both ends walk it: the client's proxy turns a message to
// the shard into a frame (link_call_of), the server turns a frame back into that message
// (with_shard_message), the frame checks and the in-place reader take each kind's shape from it,
// and authorisation its asker. A new request kind is one row here, the shard's handler for its
// message, and a test.
#pragma once

#include "actors/link/link_socket.hpp"
#include "actors/protocol/messages.hpp"

#include <caf/detail/type_list.hpp>
#include <caf/type_erased_tuple.hpp>

#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace actorps {

/// Who may make a request over a link whose peer has a certificate (mutual TLS; without TLS the
/// link has no identities, and everything that reaches it may ask).
enum class link_asker : uint8_t {
  client,       ///< any client of the link: a worker, the evaluator or the chief
  named_worker, ///< only the worker the request speaks for (a pull or push of its own)
};

/// How a request's body reaches the shard.
enum class link_arrival : uint8_t {
  whole,        ///< read whole, then handed over
  as_it_comes,  ///< handed over while it still arrives, for the shard to start on (a push)
};

/// How a request's reply reaches the worker.
enum class link_reply : uint8_t {
  whole,     ///< a wire_buffer the requester reads
  in_place,  ///< written straight into the worker's parameters as it arrives
};

/// One verb: frame kind `Kind` stands for the shard message (Atom, Args...), answered by a
/// wire_buffer. Its arguments travel in the frame's header (a = the int32_t, b = the int64_t of
/// (worker, clock)), as the payload (one wire_buffer: a Cap'n Proto Pull; or a push_request,
/// whose bytes are a Push), or not at all.
template <frame_kind Kind, link_asker Asker, link_arrival Arrival, link_reply Reply, class Atom,
          class... Args>
struct link_verb {
  static constexpr frame_kind kind = Kind;
  static constexpr link_asker asker = Asker;
  static constexpr link_arrival arrival = Arrival;
  static constexpr link_reply reply = Reply;
  using atom = Atom;
  using arguments = caf::detail::type_list<Args...>;
  static constexpr bool is_push = std::is_same_v<std::tuple<Args...>, std::tuple<push_request>>;
  static constexpr bool has_payload
    = is_push || std::is_same_v<std::tuple<Args...>, std::tuple<wire_buffer>>;
  static constexpr bool in_header
    = std::is_same_v<std::tuple<Args...>, std::tuple<int32_t, int64_t>>;
  static_assert(sizeof...(Args) == 0 || has_payload || in_header,
                "a verb's arguments are nothing, (worker, clock) or one message");
  static_assert(Arrival == link_arrival::whole || is_push,
                "only a push_request can carry a request still arriving");
  static_assert(caf::detail::tl_contains<
                  ps_shard_actor::signatures,
                  typename caf::replies_to<Atom, Args...>::template with<wire_buffer>>::value,
                "every verb is a message the shard answers with a wire_buffer");
};

/// The table. Replies over the link are wire_buffers (reply frames, parts of them while a push
/// is applied, or a failure); a reply may lie in shared memory when the request's payload may.
using link_verbs = std::tuple<
  //        frame kind                 who may ask                arrival                    reply                message
  link_verb<frame_kind::push_pull,      link_asker::named_worker, link_arrival::as_it_comes, link_reply::in_place, push_pull_atom, push_request>,
  link_verb<frame_kind::pull,           link_asker::named_worker, link_arrival::whole,       link_reply::in_place, pull_atom, int32_t, int64_t>,
  link_verb<frame_kind::keyed_pull,     link_asker::named_worker, link_arrival::whole,       link_reply::whole,    pull_atom, wire_buffer>,
  link_verb<frame_kind::snapshot,       link_asker::client,       link_arrival::whole,       link_reply::whole,    snapshot_atom>,
  link_verb<frame_kind::keyed_snapshot, link_asker::client,       link_arrival::whole,       link_reply::whole,    snapshot_atom, wire_buffer>>;

/// What a verb's row says, for code that holds a frame kind rather than a type.
struct link_verb_info {
  frame_kind kind{};
  link_asker asker{};
  link_arrival arrival{};
  link_reply reply{};
  bool has_payload = false;  ///< a Cap'n Proto message follows the header (or lies in memory)
  const char* name = "";     ///< "push", "pull", "keyed pull", "snapshot", "keyed snapshot"
};

/// The row of `kind`; nullopt when `kind` is no request (hello, reply, failure, ...).
std::optional<link_verb_info> verb_of(frame_kind kind);

/// Calls f(verb{}) for the verb of `kind` and returns true; false when `kind` is no request.
template <class F>
bool visit_verb(frame_kind kind, F&& f) {
  return std::apply(
    [&](auto... verbs) { return ((decltype(verbs)::kind == kind ? (f(verbs), true) : false) || ...); },
    link_verbs{});
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
    link_call call{Verb::kind};
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
    link_verbs{});
}

/// The worker a request speaks for, as authorisation checks it: the header's a for a (worker,
/// clock) request, the Push's or Pull's worker for one with a payload (decoded: an error when it
/// is not one); nullopt for a verb any client may use.
caf::expected<std::optional<int32_t>> worker_named(frame_kind kind, int64_t a,
                                                   const wire_buffer& payload);

} // namespace actorps
