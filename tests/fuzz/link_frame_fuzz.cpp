// Data-link frames (actors/link/link_socket.hpp) as they arrive from a socket: the input is
// what the peer sent, written into one end of a socketpair and read from the other with the
// product's own receive calls, so framing, partial payloads and a peer that stops mid-frame
// are all reached. The first byte picks the side: 0, a shard reading a client (a hello, then
// requests); 1, a client reading a shard (the hello's answer, then replies, replies in parts
// and failures).
// Each payload goes to the decoder its kind names (a request's: its verb's, shard_verbs.hpp).
#include "actors/link/link_socket.hpp"
#include "actors/link/link_verbs.hpp"
#include "actors/link/reply_part.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace actorps {
namespace {

/// Larger payloads than the input can hold are not read: receive_buffer allocates the declared
/// size before the bytes arrive, and the bound on that size is the frame limit's business
/// (link_limits.hpp), not the decoders'. The peer would close before sending them anyway.
constexpr uint64_t largest_read = std::size_t(1) << 20;

/// The payload of a frame of `kind`, decoded as its receiver decodes it; false when the link
/// broke (the reader stops, as the product's does).
bool take_payload(link_socket& link, const frame_header& h) {
  auto kind = static_cast<frame_kind>(h.kind);
  if (kind == frame_kind::failure) {
    caf::error carried;
    if (link.receive_failure(h, carried)) return false;
    (void)describe(carried);
    return true;
  }
  if (h.size > largest_read) return false;
  auto payload = link.receive_buffer(h);
  if (!payload) return false;
  if (kind == frame_kind::reply && payload->size_words() > 0)
    (void)decode_shard_parameters(*payload);
  visit_verb(kind, [&](auto verb) {  // a request: its payload is its verb's message
    using v = decltype(verb);
    if constexpr (v::is_push) (void)decode_push(*payload);
    else if constexpr (v::has_payload) (void)decode_pull(*payload);
  });
  return true;
}

/// A shard's side of a connection: the first frame must be a hello; then requests.
void serve(link_socket& link) {
  frame_header h;
  if (link.receive_header(h) || !check_header(h).empty()) return;
  if (static_cast<frame_kind>(h.kind) != frame_kind::hello) return;
  while (!link.receive_header(h)) {
    if (!check_header(h).empty()) return;
    auto kind = static_cast<frame_kind>(h.kind);
    if (kind == frame_kind::hello || kind == frame_kind::reply || kind == frame_kind::failure)
      return;  // not a request: the shard refuses the connection
    if (auto verb = verb_of(kind); verb && verb->has_payload)
      if (!take_payload(link, h)) return;
  }
}

/// A reply in parts (reply_part.hpp) read whole, as a worker without a place for it reads one:
/// the answers to other requests between its parts taken whole; then decoded. False when the
/// parts did not form a reply (the worker's link ends) or the link broke.
bool take_parts(link_socket& link, const frame_header& h) {
  reply_part_reader parts{link, nullptr,
                          [&](const frame_header& other) -> caf::error {
                            if (take_payload(link, other)) return {};
                            return make_error(errc::malformed_message, "an answer that broke");
                          },
                          largest_read};
  if (parts.begin(h)) return false;
  auto words = wire_buffer::allocate(parts.total() / sizeof(capnp::word));
  iovec all{words.get(), parts.total()};
  if (parts.read(&all, 1)) return parts.ended_by() && take_payload(link, *parts.ended_by());
  (void)decode_shard_parameters(wire_buffer{std::move(words), parts.total() / sizeof(capnp::word)});
  return true;
}

/// A client's side: the hello's answer (a reply or a failure), then answers to requests.
void client(link_socket& link) {
  frame_header h;
  while (!link.receive_header(h)) {
    if (!check_header(h).empty()) return;
    auto kind = static_cast<frame_kind>(h.kind);
    if (kind == frame_kind::reply_part && !in_region(h)) {
      if (!take_parts(link, h)) return;
      continue;
    }
    if (kind != frame_kind::reply && kind != frame_kind::failure) return;
    if (!take_payload(link, h)) return;
  }
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  fuzz::selected in;
  // A socket buffer holds the whole input, so that it can be written before it is read.
  if (!fuzz::select(data, size, 2, in) || in.size > 100 * 1024) return 0;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  int bytes = 1 << 20;
  ::setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  for (std::size_t sent = 0; sent < in.size;) {
    auto n = ::send(fds[1], in.data + sent, in.size - sent, MSG_NOSIGNAL);
    if (n <= 0) std::abort();
    sent += static_cast<std::size_t>(n);
  }
  ::close(fds[1]);  // the peer has said everything: reading past it finds the end
  link_socket link(fds[0]);
  if (in.choice == 0)
    serve(link);
  else
    client(link);
  return 0;
}
