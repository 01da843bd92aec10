#include "actors/link/link_hub.hpp"

#include "actors/link/link_authorisation.hpp"
#include "actors/link/link_verbs.hpp"
#include "actors/link/reply_part.hpp"
#include "actors/link/shm_region.hpp"
#include "actors/protocol/arriving_push.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/link_memory.hpp"

#include <caf/sec.hpp>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace actorps {

namespace {

constexpr auto accept_retry_after = std::chrono::milliseconds(100);
/// Frames read from one connection per readiness event, so that one busy client cannot keep the
/// loop from the others (epoll is level-triggered: the rest is read on the next round).
constexpr int frames_per_turn = 16;
const std::string refusal_kind = "refused a data connection";
const std::string unauthorised_kind = "refused a data request";
const std::string path_kind = "serving a data link";
/// The largest shared-memory ring a client may offer.
constexpr int64_t max_offered_ring = int64_t(1) << 30;

int open_spare() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

} // namespace

struct link_hub::session {
  session(uint64_t i, std::unique_ptr<byte_stream> stream, std::string peer)
    : id(i), conn(std::move(stream), std::move(peer)) {}
  uint64_t id;
  link_connection conn;
  bool serving = false;       // the hello was answered
  std::chrono::milliseconds timeout{1000};
  std::size_t in_flight = 0;  // requests at the shard
  bool parked = false;        // its next frame waits for the frame limit
  bool waited = false;        // it did so once for this frame already
  uint32_t events = 0;        // what the loop watches now
  bool read_posted = false;   // a read of bytes the TLS stream holds is posted to the loop
  std::string identity;       // the peer's certificate CN (TLS, or its ticket's), from its hello
  bool proving = false;       // accepted on the proven local socket: its hello needs a ticket
  bool proven = false;        // its hello carried a live ticket: `identity` is the ticket's
  std::string address;        // the peer's IP ("a local socket"): whose strangers it is among
  bool heard = false;         // bytes came from it (a stranger that has sent nothing goes first)
  std::size_t counted_unsent = 0;  // its share of unsent_total_
  std::size_t counted_pending = 0; // its share of pending_total_
  std::unique_ptr<shm_link> shm;   // its payloads' shared memory, once offered (shm_region.hpp)
  bool path_logged = false;        // its path was logged, at its first request
  // The push_pull being read that the shard was handed already (request_progress.hpp): its
  // progress, and how far the shard was told.
  request_progress_ptr streamed;
  std::size_t told = 0;
  std::size_t pending() const { return in_flight + conn.unsent_frames(); }
};

link_hub::link_hub(event_loop& loop, int tcp_fd, int local_fd, int32_t shard_index,
                   link_limits limits, hooks h, std::function<void(const std::string&)> log)
  : loop_(loop), tcp_fd_(tcp_fd), local_fd_(local_fd), spare_fd_(open_spare()),
    shard_index_(shard_index), limits_(limits), hooks_(std::move(h)), log_(std::move(log)),
    frame_limit_(limits.frame_limit_before_init) {}

link_hub::~link_hub() {
  // The loop has stopped: closing needs no more of it than the descriptors.
  for (auto& [id, s] : sessions_) {
    ::shutdown(s->conn.fd(), SHUT_RDWR);
    end(*s);
  }
  sessions_.clear();
  if (spare_fd_ >= 0) ::close(spare_fd_);
}

void link_hub::serve_proven_local(int fd, std::string name) {
  proven_fd_ = fd;
  proven_name_ = std::move(name);
}

void link_hub::start() {
  std::lock_guard<std::mutex> guard{mutex_};
  for (int fd : {tcp_fd_, local_fd_, proven_fd_}) {
    if (fd < 0) continue;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    loop_.watch(fd, EPOLLIN, [this, fd](uint32_t events) {
      std::lock_guard<std::mutex> guard{mutex_};
      on_listener(fd, events);
    });
  }
}

void link_hub::close_all() {
  std::lock_guard<std::mutex> guard{mutex_};
  for (auto& [id, s] : sessions_) {
    ::shutdown(s->conn.fd(), SHUT_RDWR);
    end(*s);
  }
  sessions_.clear();
  strangers_.clear();
  stranger_count_ = served_count_ = 0;
}

/// Ends what the shard waits for from a connection that goes: the rest of a push it was handed
/// will never come.
void link_hub::end(session& s) {
  if (s.streamed) {
    s.streamed->fail();
    if (hooks_.progress) hooks_.progress(std::move(s.streamed));
  }
}

// --- accepting --------------------------------------------------------------------------------

void link_hub::on_listener(int listener, uint32_t) {
  for (int i = 0; i < 64; ++i) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      admit(fd, listener == proven_fd_);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    auto why = std::string(std::strerror(errno));
    if ((errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
      // (accept fails so before it looks at its queue: perhaps nothing is pending at all)
      if (!shed_one(listener)) return;
      ++refused_;
      log_.write(refusal_kind, "refused a data connection: out of file descriptors (" + why + ")");
      continue;
    }
    log_.write("paused accepting", "paused accepting data links for "
                                     + std::to_string(accept_retry_after.count()) + " ms: " + why);
    pause_accepting();
    return;
  }
}

/// Out of descriptors, a pending connection would stay in the backlog and wake the loop again
/// and again; the spare descriptor, given up for a moment, lets it be accepted and closed at
/// once, so that its client learns and the listener stays quiet. False: none was pending.
bool link_hub::shed_one(int listener) {
  ::close(spare_fd_);
  int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) ::close(fd);
  spare_fd_ = open_spare();
  return fd >= 0;
}

void link_hub::pause_accepting() {
  for (int fd : {tcp_fd_, local_fd_, proven_fd_})
    if (fd >= 0) loop_.change(fd, 0);
  accept_retry_ = event_loop::clock::now() + accept_retry_after;
  rearm();
}

void link_hub::admit(int fd, bool proving) {
  auto peer = peer_address(fd);
  // A plain connection accepted with every served place taken could never be served: it is
  // told so at once. Over TLS nothing can be told before the handshake (bytes outside it read
  // as a broken record to the client: "wrong version number"), so it is told at its hello.
  const bool tls = hooks_.make_stream && !proving;
  if (!tls && served_count_ >= limits_.max_connections) return refuse_at_once(fd, peer);
  auto address = peer.substr(0, peer.rfind(':'));  // "a local socket" stays whole
  make_room(address);
  tune_link_socket(fd);
  auto id = next_id_++;
  auto s = std::make_unique<session>(id, tls ? hooks_.make_stream(fd) : make_socket_stream(fd),
                                     std::move(peer));
  s->address = address;
  s->proving = proving;
  s->events = EPOLLIN;
  loop_.watch(fd, EPOLLIN, [this, id](uint32_t events) {
    std::lock_guard<std::mutex> guard{mutex_};
    on_event(id, events);
  });
  sessions_.emplace(id, std::move(s));
  ++open_;
  strangers_[address].silent.insert(id);
  ++stranger_count_;
  hello_deadlines_.emplace_back(event_loop::clock::now() + limits_.hello_timeout, id);
  if (hello_deadlines_.size() == 1) rearm();
}

/// Tells a plain connection in a failure frame that every served place is taken, and closes it.
void link_hub::refuse_at_once(int fd, const std::string& peer) {
  auto [h, text] = failure_frame(0, over_limit());
  // What it sent already (its hello) is read first: closing a socket with unread bytes resets
  // the connection, and the client might lose the frame that tells it why.
  char drain[4096];
  [[maybe_unused]] auto got = ::recv(fd, drain, sizeof drain, MSG_DONTWAIT);
  iovec parts[2] = {{&h, sizeof h}, {text.data(), text.size()}};
  msghdr msg{};
  msg.msg_iov = parts;
  msg.msg_iovlen = 2;
  [[maybe_unused]] auto n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);  // fits any buffer
  ::close(fd);
  ++refused_;
  log_.write(refusal_kind, "refused a data connection from " + peer + ": over the limit of "
                             + std::to_string(limits_.max_connections) + " connections");
  rearm();
}

caf::error link_hub::over_limit() const {
  return caf::make_error(caf::sec::cannot_connect_to_node,
                         "this shard serves at most " + std::to_string(limits_.max_connections)
                           + " data connections");
}

/// Frees a stranger's place for a new connection from `address` when its address's share, or
/// the strangers' pool, is full: a stranger that has sent nothing before one that has, the
/// oldest first, of the address (for the pool: of the address holding the most such).
void link_hub::make_room(const std::string& address) {
  const auto per_address = std::max<std::size_t>(limits_.max_strangers_per_address, 1);
  if (auto mine = strangers_.find(address);
      mine != strangers_.end() && mine->second.size() >= per_address)
    evict(*sessions_.at(victim_among(address)),
          std::to_string(per_address) + " connections of its address had not said hello");
  if (stranger_count_ < std::max<std::size_t>(limits_.max_strangers, 1)) return;
  const std::string* most = nullptr;
  auto rank = [](const strangers_of& a) { return std::pair{a.silent.size(), a.size()}; };
  for (const auto& [where, them] : strangers_)
    if (!most || rank(them) > rank(strangers_.at(*most))) most = &where;
  evict(*sessions_.at(victim_among(*most)),
        std::to_string(stranger_count_) + " connections had not said hello");
}

/// The stranger of `address` to go first: the oldest that has sent nothing, else the oldest.
uint64_t link_hub::victim_among(const std::string& address) {
  auto& them = strangers_.at(address);
  while (!them.silent.empty()) {
    auto& s = *sessions_.at(*them.silent.begin());
    char byte;
    if (::recv(s.conn.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) return s.id;
    heard_from(s);  // it spoke since the loop last looked
  }
  return *them.heard.begin();
}

void link_hub::evict(session& s, const std::string& why) {
  ++evicted_;
  ++refused_;
  log_.write(refusal_kind, "refused a data connection from " + s.conn.peer()
                             + ": its place went to a newer one (" + why + ")");
  linger reset{1, 0};  // no TIME_WAIT left behind for each connection of a flood
  ::setsockopt(s.conn.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(s);
}

void link_hub::heard_from(session& s) {
  if (s.serving || s.heard) return;
  s.heard = true;
  auto& them = strangers_.at(s.address);
  them.silent.erase(s.id);
  them.heard.insert(s.id);
}

/// A stranger said its hello, or goes.
void link_hub::forget_stranger(session& s) {
  auto them = strangers_.find(s.address);
  if (them == strangers_.end()) return;
  if (them->second.silent.erase(s.id) + them->second.heard.erase(s.id) == 0) return;
  --stranger_count_;
  if (them->second.size() == 0) strangers_.erase(them);
}

// --- one connection ---------------------------------------------------------------------------

void link_hub::on_event(uint64_t id, uint32_t events) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  auto& s = *it->second;
  s.read_posted = false;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) heard_from(s);
  if (events & EPOLLOUT) {
    send_pending(s);
    if (sessions_.count(id) == 0) return;
  }
  bool readable = events & (EPOLLIN | EPOLLHUP | EPOLLERR);
  if ((events & EPOLLOUT) && s.conn.read_wants_write()) readable = true;
  if (readable && may_read(s)) {
    read_from(s);  // reads what the peer sent before it hung up
    if (sessions_.count(id) == 0) return;
  }
  if (events & (EPOLLHUP | EPOLLERR)) return close(s);
  update(s);
}

bool link_hub::may_read(const session& s) const {
  if (s.parked) return false;
  if (s.streamed) return true;  // the shard waits for the rest of the frame it was handed
  if (s.pending() >= limits_.max_requests_per_connection) return false;
  if (s.conn.unsent_bytes() >= limits_.max_unsent_bytes) return false;
  // One request each, whatever the totals: held pulls cannot wait for pushes that are never read.
  if (s.pending() == 0) return true;
  return !over_totals();
}

bool link_hub::over_totals() const {
  return unsent_total_ >= limits_.total_unsent_bytes
         || pending_total_ >= limits_.max_requests_total;
}

void link_hub::read_from(session& s) {
  for (int n = 0; n < frames_per_turn && may_read(s); ++n) {
    frame_header h;
    wire_buffer payload;
    std::string why;
    // Before its hello is answered a connection may send that alone: with a ticket where its
    // socket takes one.
    auto limit = s.serving ? frame_limit_.load() : s.proving ? local_ticket_secret : 0;
    switch (s.conn.read_frame(limit, h, payload, why, pause_after(s))) {
      case link_connection::read_status::blocked:
      case link_connection::read_status::partial:  // the shard applies what is in meanwhile
        return hand_on_partial(s);
      case link_connection::read_status::closed:
      case link_connection::read_status::broken:
        return close(s);
      case link_connection::read_status::bad_header:
        return refuse(s, why);
      case link_connection::read_status::refused:
        return refuse(s, "TLS handshake failed: " + why);
      case link_connection::read_status::too_large:
        if (!s.serving) return refuse(s, "the first frame is not a hello");
        if (limit_state_ != limit_state::known && !s.waited) {
          // The first frame over the bound before the shard's size is known waits for it.
          s.parked = s.waited = true;
          parked_.push_back(s.id);
          if (limit_state_ == limit_state::unknown) {
            limit_state_ = limit_state::learning;
            hooks_.learn_limit();
          }
          return;
        }
        return refuse(s, "a frame of " + std::to_string(h.size) + " bytes, over this shard's limit of "
                           + std::to_string(limit) + " bytes",
                      make_error(errc::malformed_message,
                                 "a frame of " + std::to_string(h.size)
                                   + " bytes, over this shard's limit of " + std::to_string(limit)));
      case link_connection::read_status::frame:
        s.waited = false;
        if (s.streamed) {
          if (!streamed_frame_read(s, h, std::move(payload))) return;
          break;
        }
        if (!handle(s, h, std::move(payload))) return;
        break;
    }
  }
}

// --- a push_pull handed on while it is read (request_progress.hpp) ---------------------------

/// Where read_frame pauses in a push_pull's payload: after each part, on a serving connection
/// (shared memory's payloads are whole in their ring).
std::size_t link_hub::pause_after(const session& s) const {
  if (!hooks_.progress || !s.serving) return 0;
  return limits_.request_part_bytes;
}

/// Whether a push_pull whose first part is in may go to the shard now. Over TLS its sender must
/// be allowed to make it, as any request (link_authorisation.hpp), checked on the push read from
/// the bytes that are in (arriving_push.hpp); one that cannot be read so (bf16, its structure not
/// in) or is refused waits to be handled whole, refused then and counted once (handle).
bool link_hub::may_hand_on(const session& s) const {
  if (!checked(s)) return true;
  auto arriving = read_arriving_push(s.conn.partial_payload(), s.conn.payload_read());
  return arriving && !authorise_link_push(s.identity, arriving->push.worker);
}

/// A push_pull's payload partly read: hands it to the shard once its first part is in, or tells
/// the shard of each further part.
void link_hub::hand_on_partial(session& s) {
  const auto part = pause_after(s);
  const auto* h = s.conn.partial_frame();
  if (part == 0 || !h || in_region(*h) || h->size < 2 * part) return;
  const auto verb = verb_of(kind_of(h->kind));
  if (!verb || verb->arrival != link_arrival::as_it_comes) return;
  const auto got = s.conn.payload_read();
  if (got < s.told + part) return;
  s.told = got;
  if (s.streamed) {
    s.streamed->advance(got);
    hooks_.progress(s.streamed);
    return;
  }
  if (!may_hand_on(s)) return;
  s.streamed = std::make_shared<request_progress>(h->size);
  s.streamed->advance(got);
  if (!s.path_logged) {
    s.path_logged = true;
    log_.write(path_kind, "serving a data link from " + s.conn.peer() + " over " + path_of(s));
  }
  ++s.in_flight;
  ++s.counted_pending;
  ++pending_total_;
  auto ticket = expect_answer(s, h->id);
  waiting_.at(ticket).progress = s.streamed;
  hooks_.ask(link_request{ticket, verb->kind, h->a, h->b, s.conn.partial_payload(), s.streamed});
}

/// The push_pull the shard was handed is read whole: it is told so, unless it declined it
/// (asked again now, as any request, before the next frame is read) or it has not looked yet
/// (it will take it whole). False: the connection is gone.
bool link_hub::streamed_frame_read(session& s, const frame_header& h, wire_buffer&& payload) {
  auto progress = std::move(s.streamed);
  s.streamed = nullptr;
  s.told = 0;
  if (progress->failed()) return true;  // timed out: the client has had its answer
  switch (progress->read_whole()) {
    case request_progress::fate::applying:
      hooks_.progress(std::move(progress));
      return true;
    case request_progress::fate::declined:
      return handle(s, h, std::move(payload));
    case request_progress::fate::undecided:  // the shard will find it whole
    case request_progress::fate::whole:
      break;
  }
  return true;
}

// --- requests -----------------------------------------------------------------------------------

bool link_hub::handle(session& s, const frame_header& h, wire_buffer&& payload) {
  auto kind = kind_of(h.kind);
  if (in_region(h)) {
    if (!s.shm) {
      refuse(s, "a payload in shared memory on a link without it");
      return false;
    }
    auto taken = s.shm->in.take(h.a, h.size, h.b);
    if (!taken) {
      refuse(s, describe(taken.error()), taken.error());
      return false;
    }
    payload = std::move(*taken);
  }
  if (!s.serving) {
    if (kind != frame_kind::hello) {
      refuse(s, "the first frame is not a hello");
      return false;
    }
    if (h.a != shard_index_) {
      refuse(s, "it asked for shard " + std::to_string(h.a),
             make_error(errc::wrong_shard, "this is shard " + std::to_string(shard_index_)
                                             + ", not " + std::to_string(h.a)));
      return false;
    }
    if (served_count_ >= limits_.max_connections) {
      refuse(s, "over the limit of " + std::to_string(limits_.max_connections) + " connections",
             over_limit());
      return false;
    }
    if (s.proving) {
      if (!redeem(s, payload)) return false;
    } else if (payload.size_bytes() != 0) {
      refuse(s, "a hello with a ticket where none is taken");
      return false;
    }
    if (s.conn.authenticated()) s.identity = s.conn.peer_identity();
    // The client's own request timeout bounds every request made for it (at least 1 s).
    s.timeout = std::chrono::milliseconds(std::max<int64_t>(h.b, 1000));
    forget_stranger(s);
    s.serving = true;
    ++served_count_;
    s.conn.queue(make_header(frame_kind::reply));
    auto id = s.id;  // send_pending may close the session, and `s` with it
    send_pending(s);
    return sessions_.count(id) > 0;
  }
  if (kind == frame_kind::shm_offer) return accept_shm(s, h);
  if (kind == frame_kind::local_ticket) return issue_ticket(s, h);
  if (!s.path_logged) {
    s.path_logged = true;
    log_.write(path_kind, "serving a data link from " + s.conn.peer() + " over " + path_of(s));
  }
  if (verb_of(kind)) {  // a request of the verb table (link_verbs.hpp)
    if (checked(s))
      if (auto err = authorise_link_request(s.identity, kind, h.a, payload)) {
        ++unauthorised_;
        log_.write(unauthorised_kind, "refused a data request from " + s.conn.peer() + " ("
                                        + s.identity + "): " + describe(err));
        s.conn.queue_failure(h.id, err);
        auto id = s.id;
        send_pending(s);
        return sessions_.count(id) > 0;
      }
    // Replies read since (this client's last one, most likely) give back their records, and
    // the leases they keep on the shard's parameters, before the update this request brings:
    // a parameter buffer still leased would make the shard allocate a fresh one. (A pass over
    // the sessions, bounded by the link limits; in a run they are its workers and evaluator.)
    for (auto& [id, other] : sessions_)
      if (other->shm) other->shm->out.reclaim();
    ++s.in_flight;
    ++s.counted_pending;  // counted at once: the next frame's may_read sees it
    ++pending_total_;
    hooks_.ask(link_request{expect_answer(s, h.id), kind, h.a, h.b, std::move(payload), nullptr});
    return true;
  }
  refuse(s, "a frame of kind " + std::to_string(h.kind) + " where a request belongs");
  return false;
}

std::string link_hub::path_of(const session& s) const {
  if (s.shm) return s.proven ? "shared memory (proven over TLS)" : "shared memory";
  if (s.proven) return "the proven local socket";
  std::string path = s.conn.peer() == "a local socket" ? "local socket" : "tcp";
  return s.conn.authenticated() ? "TLS over " + path : path;
}

/// Whether the session's requests are checked against its identity: one TLS proved, or a ticket.
bool link_hub::checked(const session& s) const { return s.conn.authenticated() || s.proven; }

/// Answers a TLS client on the local socket with a fresh ticket to the proven local socket: the
/// secret and the socket's name. A client elsewhere (TCP), or a hub without that socket, is
/// answered with a failure and served on as before.
bool link_hub::issue_ticket(session& s, const frame_header& h) {
  auto id = s.id;
  auto decline = [&](const std::string& why) {
    s.conn.queue_failure(h.id, make_error(errc::not_authorised, "no local ticket: " + why));
    send_pending(s);
    return sessions_.count(id) > 0;
  };
  if (proven_fd_ < 0) return decline("this shard has no proven local socket");
  if (!s.conn.authenticated() || s.conn.peer() != "a local socket")
    return decline("only over TLS on the local socket");
  const auto now = event_loop::clock::now();
  local_tickets_.erase(std::remove_if(local_tickets_.begin(), local_tickets_.end(),
                                      [&](const local_ticket& t) { return t.expires <= now; }),
                       local_tickets_.end());
  // Bounded like the strangers they would become: the oldest unused ticket goes first.
  if (local_tickets_.size() >= std::max<std::size_t>(limits_.max_strangers, 1))
    local_tickets_.erase(local_tickets_.begin());
  local_ticket t{{}, s.identity, now + limits_.hello_timeout};
  if (RAND_bytes(t.secret.data(), static_cast<int>(t.secret.size())) != 1)
    return decline("no random bytes from OpenSSL");
  unsigned char answer[local_ticket_bytes] = {};
  std::memcpy(answer, t.secret.data(), t.secret.size());
  std::memcpy(answer + local_ticket_secret, proven_name_.data(),
              std::min(proven_name_.size(), local_ticket_bytes - local_ticket_secret - 1));
  local_tickets_.push_back(std::move(t));
  queue_payload(s, frame_kind::reply, h.id, wire_buffer::from_bytes(answer, sizeof answer));
  send_pending(s);
  return sessions_.count(id) > 0;
}

/// Takes the hello's ticket on the proven local socket: a live one (used up now) gives the
/// session its identity; anything else refuses the connection, counted as unproven.
bool link_hub::redeem(session& s, const wire_buffer& ticket) {
  const auto now = event_loop::clock::now();
  auto it = local_tickets_.end();
  if (ticket.size_bytes() == local_ticket_secret && ticket.bytes() != nullptr)
    it = std::find_if(local_tickets_.begin(), local_tickets_.end(), [&](const local_ticket& t) {
      return CRYPTO_memcmp(t.secret.data(), ticket.bytes(), local_ticket_secret) == 0;
    });
  if (it == local_tickets_.end() || it->expires <= now) {
    if (it != local_tickets_.end()) local_tickets_.erase(it);
    ++unproven_;
    refuse(s, "a hello on the proven local socket without a live ticket",
           make_error(errc::not_authorised, "no live ticket: ask for one over TLS"));
    return false;
  }
  s.identity = it->identity;
  s.proven = true;
  local_tickets_.erase(it);
  return true;
}

/// The client's two memfds (requests, replies), mapped; answered with a reply, or refused (and
/// the connection closed) when they are not what the offer says.
bool link_hub::accept_shm(session& s, const frame_header& h) {
  auto fds = s.conn.take_descriptors();
  auto close_all = [&] {
    for (int d : fds) ::close(d);
  };
  auto refuse_offer = [&](const std::string& why) {
    close_all();
    refuse(s, "shared memory offer: " + why, make_error(errc::malformed_message, why));
    return false;
  };
  if (s.shm) return refuse_offer("offered twice");
  if (s.conn.authenticated() || s.conn.peer() != "a local socket")
    return refuse_offer("only on a plain local socket");
  if (fds.size() != 2 && fds.size() != 3)
    return refuse_offer(std::to_string(fds.size()) + " descriptors, expected 2 or 3");
  if (h.a < int64_t(shm_record_align) * 2 || h.a > max_offered_ring
      || h.b < int64_t(shm_record_align) * 2 || h.b > max_offered_ring)
    return refuse_offer("rings of " + std::to_string(h.a) + " and " + std::to_string(h.b) + " bytes");
  auto requests = shm_mapping::map(fds[0], static_cast<std::size_t>(h.a));
  if (!requests) return refuse_offer(describe(requests.error()));
  auto replies = shm_mapping::map(fds[1], static_cast<std::size_t>(h.b));
  if (!replies) return refuse_offer(describe(replies.error()));
  // The client's arena, read-only: its pushes name blocks there instead of copying them.
  std::shared_ptr<peer_arena> arena;
  if (fds.size() == 3) {
    auto mapped = peer_arena::open(fds[2]);
    if (!mapped) return refuse_offer("its arena: " + describe(mapped.error()));
    arena = std::move(*mapped);
  }
  close_all();  // mapped: the descriptors are not needed any more
  // This process's arena goes back with the answer: replies built on the shard's parameters
  // there name their blocks instead of copying them into the reply ring.
  const int own_arena = link_memory_fd();
  s.shm = std::make_unique<shm_link>(shm_link{shm_ring{std::move(*replies), own_arena >= 0},
                                              shm_inbox{std::move(*requests), std::move(arena)}});
  if (own_arena >= 0)
    s.conn.queue(make_header(frame_kind::reply, h.id), own_arena);
  else
    s.conn.queue(make_header(frame_kind::reply, h.id));
  auto id = s.id;
  send_pending(s);
  return sessions_.count(id) > 0;
}

/// Registers a request handed to the shard: its ticket (what the shard's answer comes back with)
/// and the deadline of the client's own request timeout, on the hub's timer. The timer is set
/// only when this deadline comes before the one it is set to: one that fires early (for a
/// request answered since) is set again by on_timer.
uint64_t link_hub::expect_answer(const session& s, uint64_t client_id) {
  auto ticket = next_ticket_++;
  auto deadline = event_loop::clock::now() + s.timeout;
  waiting_.emplace(ticket, waiting_request{s.id, client_id, deadline, false, nullptr});
  if (deadline < armed_) rearm();
  return ticket;
}

void link_hub::answer(uint64_t ticket, const caf::expected<wire_buffer>& reply) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto w = waiting_.find(ticket);
  if (w == waiting_.end()) return;  // timed out: the client has had its answer
  const auto connection = w->second.connection;
  const auto id = w->second.client_id;
  const bool answered = w->second.answered_by_parts;
  // A push_pull handed on while read, declined: asked again once whole (streamed_frame_read).
  const bool declined = w->second.progress
                        && w->second.progress->decided() == request_progress::fate::declined;
  waiting_.erase(w);
  auto it = sessions_.find(connection);
  if (it == sessions_.end()) return;  // the client has gone: its answers with it
  auto& s = *it->second;
  --s.in_flight;
  if (answered || declined) return update(s);  // the same bytes went as its parts, or none go
  if (reply)
    queue_payload(s, frame_kind::reply, id, *reply);
  else
    s.conn.queue_failure(id, reply.error());
  flush_answer(s);
}

void link_hub::answer_part(uint64_t ticket, const wire_buffer& reply, std::size_t from,
                           std::size_t to) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto w = waiting_.find(ticket);
  if (w == waiting_.end()) return;
  auto it = sessions_.find(w->second.connection);
  if (it == sessions_.end()) return;
  if (to == reply.size_bytes()) w->second.answered_by_parts = true;
  queue_payload(*it->second, frame_kind::reply_part, w->second.client_id,
                make_reply_part(reply, from, to));
  ++parts_sent_;
  flush_answer(*it->second);
}

/// Queues a frame of `payload`: in the session's shared memory where it has some and the
/// payload fits, else on the socket.
void link_hub::queue_payload(session& s, frame_kind kind, uint64_t id, const wire_buffer& payload) {
  shm_placed placed;
  if (s.shm && payload.size_bytes() > 0) placed = s.shm->out.place(payload);
  if (placed.offset >= 0)
    s.conn.queue(make_header(static_cast<frame_kind>(uint16_t(kind) | in_region_bit), id,
                             placed.offset, placed.pieces, placed.size));
  else
    s.conn.queue(kind, id, payload);
}

/// Sends what the socket takes now, from a thread that is not the loop's.
void link_hub::flush_answer(session& s) {
  if (s.conn.flush() == link_connection::write_status::broken) {
    // Closing forgets the descriptor in the loop, which only the loop's thread may do.
    loop_.post([this, connection = s.id] {
      std::lock_guard<std::mutex> guard{mutex_};
      if (auto gone = sessions_.find(connection); gone != sessions_.end()) close(*gone->second);
    });
    return;
  }
  update(s);
}

void link_hub::send_pending(session& s) {
  if (s.conn.flush() == link_connection::write_status::broken) close(s);
}

/// Watches what the session can do now, and keeps the totals of unsent bytes and pending
/// requests; when they fall back under their bounds, sessions held back are read again.
void link_hub::update(session& s) {
  bool was_over = over_totals();
  unsent_total_ = unsent_total_ - s.counted_unsent + s.conn.unsent_bytes();
  s.counted_unsent = s.conn.unsent_bytes();
  pending_total_ = pending_total_ - s.counted_pending + s.pending();
  s.counted_pending = s.pending();
  uint32_t events = (may_read(s) ? EPOLLIN : 0u) | (s.conn.wants_write() ? EPOLLOUT : 0u);
  if (events != s.events) {
    loop_.change(s.conn.fd(), events);
    s.events = events;
  }
  if ((events & EPOLLIN) && !s.read_posted && s.conn.buffered()) {
    // Bytes the TLS stream took from the socket already: epoll will not tell of them.
    s.read_posted = true;
    loop_.post([this, id = s.id] {
      std::lock_guard<std::mutex> guard{mutex_};
      on_event(id, EPOLLIN);
    });
  }
  if (was_over && !over_totals())
    for (auto& [id, other] : sessions_)
      if (other.get() != &s) update(*other);
}

void link_hub::refuse(session& s, const std::string& why, const caf::error& tell) {
  ++refused_;
  log_.write(refusal_kind, "refused a data connection from " + s.conn.peer() + ": " + why);
  if (tell) {
    s.conn.queue_failure(0, tell);
    s.conn.flush();  // best effort: a small frame, and the connection ends either way
  }
  close(s);
  rearm();
}

void link_hub::close(session& s) {
  end(s);
  bool was_over = over_totals();
  unsent_total_ -= s.counted_unsent;
  pending_total_ -= s.counted_pending;
  loop_.forget(s.conn.fd());
  --open_;
  if (s.serving)
    --served_count_;
  else
    forget_stranger(s);
  auto id = s.id;  // a copy: erase must not read the key from the node it destroys
  sessions_.erase(id);  // closes the socket
  if (was_over && !over_totals())  // what this one held lets the others be read again
    for (auto& [other_id, other] : sessions_) update(*other);
}

// --- the frame limit and the timer ------------------------------------------------------------

void link_hub::limit_learned(std::optional<std::size_t> limit) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (limit) {
    frame_limit_ = *limit;
    limit_state_ = limit_state::known;
  } else {
    limit_state_ = limit_state::unknown;  // the shard is not initialised: its frames are refused
  }
  auto parked = std::move(parked_);
  parked_.clear();
  for (auto id : parked) {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) continue;
    auto& s = *it->second;
    s.parked = false;
    read_from(s);
    if (sessions_.count(id) > 0) update(s);
  }
}

void link_hub::on_timer() {
  std::lock_guard<std::mutex> guard{mutex_};
  auto now = event_loop::clock::now();
  // Requests the shard has not answered within the client's request timeout (a pull held by
  // the consistency rule, a shard that hangs): the client hears request_timeout, as from a
  // request to a shard in its own process; the shard's late answer is dropped.
  // (A scan: the requests at the shard are few, bounded by link_limits, and the timer fires
  // about once a request timeout.) In ticket order, which is each connection's request order.
  std::vector<std::pair<uint64_t, waiting_request>> expired;
  for (auto w = waiting_.begin(); w != waiting_.end();) {
    if (w->second.deadline > now) {
      ++w;
      continue;
    }
    expired.emplace_back(*w);
    w = waiting_.erase(w);
  }
  std::sort(expired.begin(), expired.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& entry : expired) {
    const auto connection = entry.second.connection;
    const auto id = entry.second.client_id;
    auto it = sessions_.find(connection);
    if (it == sessions_.end()) continue;
    auto& s = *it->second;
    --s.in_flight;
    if (entry.second.progress && s.streamed == entry.second.progress) {
      s.streamed->fail();  // its shard drops what it wrote; the rest is read and dropped
      hooks_.progress(s.streamed);
    }
    if (entry.second.answered_by_parts) {  // the client has its whole reply
      update(s);
      continue;
    }
    s.conn.queue_failure(id, caf::make_error(caf::sec::request_timeout,
                                             "no answer from the shard within "
                                               + std::to_string(s.timeout.count()) + " ms"));
    send_pending(s);
    if (sessions_.count(connection) > 0) update(s);
  }
  while (!hello_deadlines_.empty() && hello_deadlines_.front().first <= now) {
    auto id = hello_deadlines_.front().second;
    hello_deadlines_.pop_front();
    auto it = sessions_.find(id);
    if (it != sessions_.end() && !it->second->serving)
      refuse(*it->second, "no hello within " + std::to_string(limits_.hello_timeout.count()) + " ms");
  }
  if (accept_retry_ && *accept_retry_ <= now) {
    accept_retry_.reset();
    if (spare_fd_ < 0) spare_fd_ = open_spare();
    for (int fd : {tcp_fd_, local_fd_, proven_fd_})
      if (fd >= 0) loop_.change(fd, EPOLLIN);
  }
  log_.flush();
  armed_ = event_loop::clock::time_point::max();
  rearm();
}

/// Sets the timer to the earliest of: the oldest pending hello's deadline, the retry of a paused
/// accept, the end of a log window that held lines back.
void link_hub::rearm() {
  auto next = event_loop::clock::time_point::max();
  // Deadlines of connections that since said hello or left are dropped from the front (a flood's
  // evicted strangers would wake the timer once each), and skipped when they come.
  while (!hello_deadlines_.empty()) {
    auto s = sessions_.find(hello_deadlines_.front().second);
    if (s != sessions_.end() && !s->second->serving) break;
    hello_deadlines_.pop_front();
  }
  if (!hello_deadlines_.empty()) next = hello_deadlines_.front().first;
  if (accept_retry_) next = std::min(next, *accept_retry_);
  for (const auto& entry : waiting_) next = std::min(next, entry.second.deadline);
  if (auto flush = log_.next_flush()) next = std::min(next, *flush);
  if (next != armed_) {
    loop_.wake_at(next);
    armed_ = next;
  }
}

} // namespace actorps
