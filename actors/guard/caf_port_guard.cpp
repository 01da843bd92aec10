#include "actors/guard/caf_port_guard.hpp"

#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/spawn_options.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace actorps {

namespace {

namespace net = caf::io::network;

using deadline_atom = caf::atom_constant<caf::atom("hsdeadline")>;

int open_spare() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

/// The IP of "ip:port" ("[ip]:port" for IPv6): connections from it share its pending quota.
std::string address_part(const std::string& peer) { return peer.substr(0, peer.rfind(':')); }

std::string seconds_text(std::chrono::milliseconds t) {
  auto ms = t.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

} // namespace

caf_port_guard::caf_port_guard(net::default_multiplexer& mx, const caf_port_limits& limits,
                               report_fn report)
  : mx_(mx), limits_(limits), report_(std::move(report)), spare_fd_(open_spare()) {}

std::shared_ptr<caf_port_guard> caf_port_guard::make(caf::actor_system& sys,
                                                     net::default_multiplexer& mx,
                                                     const caf_port_limits& limits,
                                                     report_fn report) {
  std::shared_ptr<caf_port_guard> guard{new caf_port_guard(mx, limits, std::move(report))};
  std::weak_ptr<caf_port_guard> weak = guard;
  // Hidden: the timer does not keep the actor system from ending. The connection is touched
  // only in the network thread, so the timer only hands the expiry over to it.
  guard->timer_ = sys.spawn<caf::hidden>([weak](caf::event_based_actor*) -> caf::behavior {
    return {[weak](deadline_atom, uint64_t key) {
      if (auto g = weak.lock())
        g->mx_.dispatch([weak, key] {
          if (auto alive = weak.lock()) alive->expire(key);
        });
    }};
  });
  return guard;
}

caf_port_guard::~caf_port_guard() {
  caf::anon_send_exit(timer_, caf::exit_reason::user_shutdown);
  if (spare_fd_ >= 0) ::close(spare_fd_);
}

bool caf_port_guard::accept(net::native_socket& result, net::native_socket listener) {
  result = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (result != net::invalid_native_socket) return true;
  auto err = errno;
  if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) return true;
  if ((err != EMFILE && err != ENFILE) || spare_fd_ < 0) return false;
  // Level-triggered, the listener stays readable while the peer waits in its backlog: without
  // taking the peer, CAF's network thread would spin on it until a descriptor is free.
  ::close(spare_fd_);
  auto shed = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (shed >= 0) ::close(shed);
  spare_fd_ = open_spare();
  {
    std::lock_guard<std::mutex> guard{mutex_};
    ++counts_.refused_no_fd;
  }
  report("a peer", std::string("the process has no file descriptor left (") + std::strerror(err)
                     + "): refused at once; accepting goes on as soon as one is free");
  return true;
}

bool caf_port_guard::admit(const std::string& peer) {
  const auto address = address_part(peer);
  std::vector<std::pair<closable_connection*, std::string>> victims;
  std::size_t open = 0;
  bool admitted = false;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    const auto per_address = std::max<std::size_t>(limits_.max_pending_per_address, 1);
    auto mine = pending_by_address_.find(address);
    if (mine != pending_by_address_.end() && mine->second.size() >= per_address)
      if (auto* victim = take_victim(address))
        victims.emplace_back(victim, std::to_string(per_address)
                                       + " connections of its address had it pending");
    if (open_ - closing_.size() >= limits_.max_connections)
      if (auto* victim = take_victim({}))
        victims.emplace_back(victim, "the port held " + std::to_string(limits_.max_connections)
                                       + " connections, its limit");
    if (open_ - closing_.size() < limits_.max_connections) {
      ++open_;
      admitted = true;
    } else {
      ++counts_.refused_over_limit;
      open = open_;
    }
  }
  // Safe without a reference: this is the network thread, where connections are destroyed.
  for (auto& [victim, why] : victims)
    victim->close_now("its handshake was not through, and its place went to a newer connection ("
                      + why + ")");
  if (admitted) return true;
  report(peer, "the port already holds " + std::to_string(open)
                 + " connections (its limit): refused at once");
  return false;
}

closable_connection* caf_port_guard::take_victim(const std::string& address) {
  auto from = pending_by_address_.end();
  if (!address.empty())
    from = pending_by_address_.find(address);
  else
    for (auto it = pending_by_address_.begin(); it != pending_by_address_.end(); ++it)
      if (from == pending_by_address_.end() || it->second.size() > from->second.size()) from = it;
  if (from == pending_by_address_.end() || from->second.empty()) return nullptr;
  auto key = *from->second.begin();  // keys grow: the oldest
  auto it = pending_.find(key);
  auto* conn = it->second;
  drop_pending(it);
  closing_.insert(key);
  ++counts_.evicted;
  return conn;
}

void caf_port_guard::drop_pending(std::map<uint64_t, closable_connection*>::iterator it) {
  auto key = it->first;
  pending_.erase(it);
  auto address = address_of_.find(key);
  if (address == address_of_.end()) return;
  auto same = pending_by_address_.find(address->second);
  if (same != pending_by_address_.end()) {
    same->second.erase(key);
    if (same->second.empty()) pending_by_address_.erase(same);
  }
  address_of_.erase(address);
}

void caf_port_guard::closed() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (open_ > 0) --open_;
}

uint64_t caf_port_guard::watch(closable_connection* conn, const std::string& peer) {
  uint64_t key = 0;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    key = next_key_++;
    pending_.emplace(key, conn);
    auto address = address_part(peer);
    address_of_.emplace(key, address);
    pending_by_address_[address].insert(key);
  }
  caf::delayed_anon_send(timer_, limits_.handshake_timeout, deadline_atom::value, key);
  return key;
}

void caf_port_guard::through(uint64_t key) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (auto it = pending_.find(key); it != pending_.end()) drop_pending(it);
}

void caf_port_guard::forget(uint64_t key) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (auto it = pending_.find(key); it != pending_.end()) drop_pending(it);
  closing_.erase(key);
}

void caf_port_guard::expire(uint64_t key) {
  closable_connection* conn = nullptr;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    auto it = pending_.find(key);
    if (it == pending_.end()) return;  // through, or gone
    conn = it->second;
    drop_pending(it);
    closing_.insert(key);  // its place is free now; it counts as open until destroyed
    ++counts_.closed_by_deadline;
  }
  // Safe without a reference: connections are destroyed in this (the network) thread, and a
  // destroyed one has left pending_ (forget) before.
  conn->close_now("its TLS and BASP handshake was not through within "
                  + seconds_text(limits_.handshake_timeout) + ": closed");
}

std::size_t caf_port_guard::add_unsent(std::ptrdiff_t bytes) {
  if (bytes >= 0) return unsent_ += static_cast<std::size_t>(bytes);
  return unsent_ -= static_cast<std::size_t>(-bytes);
}

void caf_port_guard::count_unread() {
  std::lock_guard<std::mutex> guard{mutex_};
  ++counts_.closed_unread;
}

void caf_port_guard::report(const std::string& peer, const std::string& why) const {
  if (report_) report_(peer, why);
}

caf_port_counts caf_port_guard::counts() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return counts_;
}

} // namespace actorps
