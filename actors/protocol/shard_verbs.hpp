// The shard's verbs: every request a shard answers with bytes (a wire_buffer) and the data link
// carries, in one table. A row names the request's message (its atom and arguments), the frame
// number it travels under on the link, who may ask, and how its bytes travel. Everything else
// follows the table: ps_shard_actor's typed interface (messages.hpp) holds a signature per row,
// the link's client turns the message into a frame and its server turns the frame back into the
// message (actors/link/link_verbs.hpp), the frame checks and the in-place reader take each
// kind's shape from it, authorisation its asker, the fuzzer its payload. A new request kind is
// one row here (with its atom, when it needs a new one), the shard's handler for it
// (actors/roles/ps_shard.cpp: the compiler asks for it), and a test
// (tests/every_shard_signature.hpp asks it over every path of the link).
#pragma once

#include "actors/protocol/push_request.hpp"
#include "actors/protocol/wire_buffer.hpp"

#include <caf/atom.hpp>
#include <caf/detail/type_list.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <tuple>
#include <type_traits>

namespace actorps {

// The verbs' atoms (CAF 0.17: at most 10 characters); messages.hpp holds the others.
using pull_atom = caf::atom_constant<caf::atom("pull")>;
using push_pull_atom = caf::atom_constant<caf::atom("push_pull")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;

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

/// One verb: the shard message (Atom, Args...), answered by a wire_buffer, travels on the link
/// as a frame of number `Frame`. Its arguments travel in the frame's header (a = the int32_t,
/// b = the int64_t of (worker, clock)), as the payload (one wire_buffer: a Cap'n Proto Pull; or
/// a push_request, whose bytes are a Push), or not at all.
template <uint16_t Frame, link_asker Asker, link_arrival Arrival, link_reply Reply, class Atom,
          class... Args>
struct shard_verb {
  static constexpr uint16_t frame = Frame;
  static constexpr link_asker asker = Asker;
  static constexpr link_arrival arrival = Arrival;
  static constexpr link_reply reply = Reply;
  using atom = Atom;
  using arguments = caf::detail::type_list<Args...>;
  /// Its line of ps_shard_actor's typed interface.
  using signature = typename caf::replies_to<Atom, Args...>::template with<wire_buffer>;
  static constexpr bool is_push = std::is_same_v<std::tuple<Args...>, std::tuple<push_request>>;
  static constexpr bool has_payload
    = is_push || std::is_same_v<std::tuple<Args...>, std::tuple<wire_buffer>>;
  static constexpr bool in_header
    = std::is_same_v<std::tuple<Args...>, std::tuple<int32_t, int64_t>>;
  static_assert(sizeof...(Args) == 0 || has_payload || in_header,
                "a verb's arguments are nothing, (worker, clock) or one message");
  static_assert(Arrival == link_arrival::whole || is_push,
                "only a push_request can carry a request still arriving");
};

/// The table. Frame numbers 1, 5, 6, 9, 10 and 11 are the link's own frames (hello, reply,
/// failure, ...: actors/link/link_socket.hpp); a new row takes the next number no build ever
/// used (a peer of another build reads the number), which the link's checks hold to.
/// (pull, worker, clock): the parameters for computing `clock`, held until allowed.
/// (pull, Pull): the same with the rows of the sparse keys the Pull names.
/// (push_pull, push_request of a Push for clock c): the parameters for computing c + 1, held
///   until allowed. From the shard's own data link, a large reply may go ahead in parts as the
///   update is written (the answer is sent whole as well), and a push still arriving is applied
///   block by block as its bytes do, or declined with an answer the link drops; the link's
///   notices that more has arrived are sent, not asked (push_request.hpp).
/// (snapshot): the current values, at once (never held).
/// (snapshot, Pull with worker -1): the same with the current rows of the keys it names, or
///   with every row of every table and its key when the Pull says allRows.
using shard_verbs = std::tuple<
  //         frame  who may ask                arrival                    reply                message
  shard_verb<2,     link_asker::named_worker,  link_arrival::as_it_comes, link_reply::in_place, push_pull_atom, push_request>,
  shard_verb<3,     link_asker::named_worker,  link_arrival::whole,       link_reply::in_place, pull_atom, int32_t, int64_t>,
  shard_verb<7,     link_asker::named_worker,  link_arrival::whole,       link_reply::whole,    pull_atom, wire_buffer>,
  shard_verb<4,     link_asker::client,        link_arrival::whole,       link_reply::whole,    snapshot_atom>,
  shard_verb<8,     link_asker::client,        link_arrival::whole,       link_reply::whole,    snapshot_atom, wire_buffer>>;

/// The frame number of the verb for message (Atom, Args...); 0 when it is none.
template <class Atom, class... Args>
constexpr uint16_t verb_frame() {
  return std::apply(
    [](auto... verbs) {
      uint16_t out = 0;
      ((out = std::is_same_v<typename decltype(verbs)::signature,
                             typename caf::replies_to<Atom, Args...>::template with<wire_buffer>>
                ? decltype(verbs)::frame
                : out),
       ...);
      return out;
    },
    shard_verbs{});
}

/// caf::typed_actor of the verbs' signatures followed by `Others...` (messages.hpp).
template <class Verbs, class... Others>
struct typed_actor_with_verbs;
template <class... Verbs, class... Others>
struct typed_actor_with_verbs<std::tuple<Verbs...>, Others...> {
  using type = caf::typed_actor<typename Verbs::signature..., Others...>;
};

} // namespace actorps
