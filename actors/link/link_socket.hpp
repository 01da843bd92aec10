// The bulk data path between a worker (or the evaluator) and a shard in another process: one
// connection per pair (TCP, or a local socket on the same host), beside CAF's middleman,
// carrying framed requests and replies.
//
// Why beside BASP: CAF 0.17's middleman copies a 4 MiB payload into its own buffers and moves it
// around there several times (memmove was 35-47 % of both processes' time in perf), so a 4 MiB
// push+pull cost 12.4 ms across loopback against 2.7 ms in one process. A frame is a fixed
// 40-byte header followed by the payload, which is a wire_buffer's bytes: the sender hands the
// buffer to the kernel as it is (sendmsg with the header beside it) and the receiver reads it
// straight into the wire_buffer that the shard or worker then uses, so the payload is copied
// only by the kernel. Control messages (init, leave, rejoin, checkpoints, ...) stay on CAF.
#pragma once

#include "actors/tls/tls_files.hpp"
#include "actors/protocol/shard_verbs.hpp"
#include "actors/protocol/wire.hpp"

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <netdb.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace actorps {

// Several requests may be in flight on one connection: the shard side asks its shard in arrival
// order and sends each answer as soon as it has it (a held pull's answer may overtake nothing
// but its successors); the answer carries its request's id.
enum class frame_kind : uint16_t {
  /// client → shard, first: a = shard index expected, b = request timeout (ms); on the shard's
  /// proven local socket its payload is a ticket (local_ticket_secret bytes), else none.
  hello = 1,
  reply = 5,      ///< payload: the reply's wire_buffer (empty for hello)
  failure = 6,    ///< a = error code, b = error category (atom value), payload: context text
  // client → shard: a request, one kind per row of the shard's verbs (shard_verbs.hpp), which
  // numbers them; these names are for code that writes frames by hand (tests, benchmarks).
  push_pull = verb_frame<push_pull_atom, push_request>(),  ///< payload: a Push
  pull = verb_frame<pull_atom, int32_t, int64_t>(),        ///< a = worker, b = clock
  snapshot = verb_frame<snapshot_atom>(),                  ///< no payload
  keyed_pull = verb_frame<pull_atom, wire_buffer>(),       ///< payload: a Pull naming sparse keys
  keyed_snapshot = verb_frame<snapshot_atom, wire_buffer>(),  ///< payload: a Pull (worker -1)
  /// client → shard on a local socket, after the hello's answer: use shared memory (shm_region.hpp).
  /// a = request ring bytes, b = reply ring bytes; the two memfds ride along (SCM_RIGHTS), and
  /// a third, the client's arena (link_memory.hpp), when it has one.
  /// Answered by a reply (accepted) or a failure (refused, and the connection closes).
  shm_offer = 9,
  /// shard → client: part of a push_pull's reply sent while the shard still applies the push
  /// (reply_part.hpp); the parts of one reply follow each other, from its first byte to its
  /// last. A reply or failure for the same request instead ends them early: that is the answer.
  reply_part = 10,
  /// client → shard over TLS on its local socket, after the hello: asks for a one-time ticket to
  /// the shard's proven local socket, where the identity its certificate proved is had without
  /// TLS (shared memory included). Answered by a reply of local_ticket_bytes (the secret, then
  /// that socket's name, NUL-padded) or a failure.
  local_ticket = 11,
};

/// A ticket's secret: random bytes that only the TLS connection which asked for it ever carried.
inline constexpr std::size_t local_ticket_secret = 32;
/// The answer to local_ticket: the secret, then the proven local socket's name in 32 bytes.
inline constexpr std::size_t local_ticket_bytes = local_ticket_secret + 32;

/// Added to the kind of a push_pull, keyed_pull, keyed_snapshot, reply or reply_part whose payload lies in
/// the link's shared memory: `size` bytes at offset `a` of the sender's ring, a record of `b`
/// pieces (0: the payload itself); none follow on the socket.
inline constexpr uint16_t in_region_bit = 0x100;
/// The kind without in_region_bit.
inline frame_kind kind_of(uint16_t kind) { return static_cast<frame_kind>(kind & ~in_region_bit); }

/// Host byte order (every supported host is little-endian, like the Cap'n Proto payload).
struct frame_header {
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t kind = 0;
  uint64_t id = 0;    ///< the request's id; an answer carries the id of its request
  int64_t a = 0;
  int64_t b = 0;
  uint64_t size = 0;  ///< payload bytes that follow
};
static_assert(sizeof(frame_header) == 40, "the frame header is 40 bytes on the wire");

inline bool in_region(const frame_header& h) { return (h.kind & in_region_bit) != 0; }

inline constexpr uint32_t frame_magic = 0x4c535041;  // "APSL"
/// 2: a frame in shared memory may be a record of pieces (its b), and the answer to a shared
/// memory offer may carry the shard's arena. 3: a reply may come in parts (reply_part). 4: local
/// tickets (local_ticket), and a hello that carries one. A peer of another version is refused at
/// its hello.
inline constexpr uint16_t frame_version = 4;
/// Largest error text accepted in a failure frame.
inline constexpr uint64_t max_failure_text = 64 * 1024;

frame_header make_header(frame_kind kind, uint64_t id = 0, int64_t a = 0, int64_t b = 0,
                         uint64_t size = 0);

/// A failure frame carrying `err`: its header (a = code, b = category) and its payload, the
/// error's first context string cut to max_failure_text.
std::pair<frame_header, std::string> failure_frame(uint64_t id, const caf::error& err);

/// Empty if `h` is a frame this version understands, else what is wrong with it.
std::string check_header(const frame_header& h);

class tls_channel;

/// One connected socket carrying frames, in plain bytes or, after start_tls, over mutual TLS.
/// Sends and receives block; one thread sends and one receives at a time, and shutdown() may be
/// called from any thread to end blocked calls.
class link_socket {
public:
  explicit link_socket(int fd);
  ~link_socket();
  link_socket(const link_socket&) = delete;
  link_socket& operator=(const link_socket&) = delete;

  /// Turns the connection into a mutual TLS session with `files` (before any frame), within
  /// `timeout`, and checks that the server's certificate names `expected_peer` ("ps:0"): a
  /// server of the cluster's CA that is not the task meant is refused. On failure the socket
  /// is shut down and the error (sec::cannot_connect_to_node) says why.
  caf::error start_tls(const tls_files& files, const std::string& expected_peer,
                       std::chrono::milliseconds timeout);
  /// Whether start_tls succeeded.
  bool is_tls() const { return tls_ != nullptr; }

  /// Sends a header and `size` payload bytes with as few system calls as the kernel allows.
  caf::error send(const frame_header& h, const void* payload = nullptr);
  /// Sends `h` (its size set to the payload's) and the payload's pieces as they lie: a buffer
  /// built by reference goes from the float blocks to the kernel, one iovec per segment.
  caf::error send(frame_header h, const wire_buffer& payload);
  caf::error send(frame_kind kind, uint64_t id, const wire_buffer& payload);
  /// Sends `n` bytes as they are: the rest of a frame whose header and first bytes went before
  /// (a peer that sends a payload in runs, as a slow or stalled one does).
  caf::error send_bytes(const void* data, std::size_t n);
  /// Sends a failure frame carrying `err` (its code, category and first context string).
  caf::error send_failure(uint64_t id, const caf::error& err);
  /// Sends a header with no payload and the descriptors `fds` beside it (SCM_RIGHTS; a local
  /// socket without TLS only).
  caf::error send_with_fds(const frame_header& h, const int* fds, int count);

  /// Receives the next header (exit_reason::remote_link_unreachable once the peer has closed).
  caf::error receive_header(frame_header& h);
  /// The same, keeping the descriptors that came with it (at most 4, now the caller's; a local
  /// socket without TLS only).
  caf::error receive_header(frame_header& h, std::vector<int>& fds);
  /// Receives a payload of h.size bytes (a multiple of 8) into a new buffer.
  caf::expected<wire_buffer> receive_buffer(const frame_header& h);
  /// Receives exactly the bytes of `parts`, in order (a scatter read: recvmsg with an iovec
  /// each; over TLS part by part). `parts` is advanced over what was read.
  caf::error receive_parts(iovec* parts, int count);
  /// Receives a failure frame's payload into `carried`, the error it carries; returns an error
  /// only if the link broke.
  caf::error receive_failure(const frame_header& h, caf::error& carried);

  /// Receives fail with sec::request_timeout after `timeout` without data (0: wait forever).
  void set_receive_timeout(std::chrono::milliseconds timeout);

  /// Ends the connection: blocked and later calls fail. Safe from any thread, any number of
  /// times; the descriptor itself is closed by the destructor only.
  void shutdown();

  /// "ip:port" of the other end, or "a local socket".
  const std::string& peer() const { return peer_; }
  /// A local (Unix) socket rather than TCP.
  bool is_local() const { return local_; }

private:
  caf::error send_parts(iovec* parts, int count);
  caf::error receive_bytes(void* data, std::size_t n);
  caf::error broken(const char* what, int err);
  caf::error broken_with(const char* what, const std::string& why);

  int fd_;
  bool local_;
  std::string peer_;
  std::mutex shutdown_mutex_;
  bool shut_ = false;
  std::unique_ptr<tls_channel> tls_;             // set once, before frames flow
  std::chrono::milliseconds receive_timeout_{0};  // TLS receives wait with poll, not SO_RCVTIMEO
};

/// The addresses of host:port for a stream socket (`passive`: to listen on), freed with the
/// pointer; null with `why` set when the name does not resolve.
using address_list = std::unique_ptr<addrinfo, void (*)(addrinfo*)>;
address_list resolve_stream(const std::string& host, uint16_t port, bool passive, std::string& why);

/// "ip:port" of the other end of a connected socket, "a local socket", or "?".
std::string peer_address(int fd);

/// Sets what every data connection uses: no Nagle delay, and the largest socket buffers the
/// host allows (a 4 MiB payload then leaves in one go).
void tune_link_socket(int fd);

/// The address of the abstract Unix socket `name` (sun_path[0] == 0: no file; the name lives in
/// the network namespace) and its length; `len` is 0 for a name that does not fit.
sockaddr_un local_address(const std::string& name, socklen_t& len);

/// Connects to the local (abstract Unix) socket `name` of a server on this host and in this
/// network namespace; fails at once where there is none.
caf::expected<std::shared_ptr<link_socket>> connect_local_link(const std::string& name);

/// Connects to host:port (an address or a name) within `timeout`.
caf::expected<std::shared_ptr<link_socket>> connect_link(const std::string& host, uint16_t port,
                                                         std::chrono::milliseconds timeout);

} // namespace actorps
