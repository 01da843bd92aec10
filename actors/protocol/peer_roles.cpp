#include "actors/protocol/peer_roles.hpp"

#include <caf/actor_control_block.hpp>

#include <cctype>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

namespace actorps {

namespace {

struct binding {
  std::string cn;
  uint32_t connections = 0;
};

using peer_key = std::pair<caf::node_id, caf::node_id>;  // (here, peer)

/// Bindings of peers whose connections have all closed are kept, with 0 connections: a message
/// such a connection delivered may still wait in a mailbox, and it is its task's, not a
/// stranger's (a standby refused its lost primary's last `replicate` as "a peer with no task
/// certificate"). No new message can come from that node until a connection binds it again,
/// which may then name another task. The most recent `departed_kept` are kept.
inline constexpr std::size_t departed_kept = 4096;

struct registry {
  std::mutex mutex;
  std::map<peer_key, binding> bound;  // (here, peer) → CN
  std::deque<peer_key> departed;      // bindings left with 0 connections, oldest first
};

registry& peers() {
  static registry r;  // never destroyed before the last connection: CAF's threads end first
  return r;
}

} // namespace

bool bind_peer(const caf::node_id& here, const caf::node_id& peer, const std::string& cn) {
  auto& r = peers();
  std::lock_guard<std::mutex> guard{r.mutex};
  auto& b = r.bound[{here, peer}];
  if (b.connections > 0 && b.cn != cn) return false;  // a departed binding is free to rebind
  b.cn = cn;
  ++b.connections;
  return true;
}

void unbind_peer(const caf::node_id& here, const caf::node_id& peer) {
  auto& r = peers();
  std::lock_guard<std::mutex> guard{r.mutex};
  auto it = r.bound.find({here, peer});
  if (it == r.bound.end()) return;
  if (--it->second.connections > 0) return;
  r.departed.push_back(it->first);
  while (r.departed.size() > departed_kept) {
    auto old = r.bound.find(r.departed.front());
    if (old != r.bound.end() && old->second.connections == 0) r.bound.erase(old);
    r.departed.pop_front();
  }
}

std::string bound_cn(const caf::node_id& here, const caf::node_id& peer) {
  auto& r = peers();
  std::lock_guard<std::mutex> guard{r.mutex};
  auto it = r.bound.find({here, peer});
  return it == r.bound.end() ? "" : it->second.cn;
}

sender_role role_from_cn(const std::string& cn) {
  sender_role role;
  role.kind = sender_role::kind_t::unknown;
  role.name = cn.empty() ? "a peer with no task certificate" : "'" + cn + "'";
  auto colon = cn.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == cn.size() || cn.size() - colon > 10)
    return role;
  int64_t index = 0;
  for (auto i = colon + 1; i < cn.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(cn[i]))) return role;
    index = index * 10 + (cn[i] - '0');
  }
  role.kind = sender_role::kind_t::task;
  role.type = cn.substr(0, colon);
  role.index = static_cast<int32_t>(index);
  role.name = cn;
  return role;
}

sender_role role_of(const caf::strong_actor_ptr& sender, const caf::actor_system& sys) {
  // No sender: local code (a TLS connection closes on an anonymous request, basp_origin.hpp;
  // an anonymous response answers a request and reaches no handler of an interface).
  if (!sender || sender->node() == sys.node()) return {sender_role::kind_t::local, "", -1,
                                                        "this process"};
  if (!sys.has_openssl_manager())
    return {sender_role::kind_t::open, "", -1, "a peer of a cluster without TLS"};
  return role_from_cn(bound_cn(sys.node(), sender->node()));
}

} // namespace actorps
