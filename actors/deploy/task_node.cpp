#include "actors/deploy/task_node.hpp"

#include "actors/chief/role_setup_codec.hpp"
#include "actors/guard/connect.hpp"
#include "actors/roles/authorisation.hpp"
#include "actors/roles/evaluator.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"
#include "actors/deploy/leave_notice.hpp"
#include "actors/deploy/remote_shard.hpp"
#include "actors/roles/worker.hpp"
#include "actors/data/load_split.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace actorps {

namespace {

/// The shards of a role, connected in shard order; closed when the role stops.
struct shard_set {
  std::vector<remote_shard> remote;
  std::vector<std::string> addresses;  ///< by shard, where it was reached ("": elsewhere)

  std::vector<ps_shard_actor> handles() const {
    std::vector<ps_shard_actor> out;
    for (const auto& s : remote) out.push_back(s.handle);
    return out;
  }
  void close() const {
    for (const auto& s : remote) s.close();
  }
  /// Closes those not in `kept` (a change of shards keeps the links to the shards that stay).
  void close_all_but(const shard_set& kept) const {
    for (const auto& s : remote) {
      auto same = [&](const remote_shard& k) { return k.handle == s.handle; };
      if (std::none_of(kept.remote.begin(), kept.remote.end(), same)) s.close();
    }
  }
  /// "2 shard(s) (data links: shared memory, tcp)", for the log (remote_shard::transport()).
  std::string describe() const {
    std::string out = std::to_string(remote.size()) + " shard(s) (data links:";
    for (std::size_t i = 0; i < remote.size(); ++i) {
      out += i ? ", " : " ";
      out += remote[i].transport();
    }
    return out + ")";
  }
};

/// The shards a worker talks to: closed when it stops, swapped by a change of shards (its
/// exit and the swap may meet: the worker's thread runs the one, the node's the other).
class worker_links {
public:
  explicit worker_links(shard_set shards) : current_(std::move(shards)) {}

  void close() {
    std::lock_guard<std::mutex> guard{mutex_};
    closed_ = true;
    current_.close();
  }

  /// The links it uses now.
  shard_set current() {
    std::lock_guard<std::mutex> guard{mutex_};
    return current_;
  }

  /// `next` from now on, the previous ones it does not keep closed; `next` too when the worker
  /// has stopped.
  void replace(shard_set next) {
    std::lock_guard<std::mutex> guard{mutex_};
    current_.close_all_but(next);
    current_ = std::move(next);
    if (closed_) current_.close();
  }

private:
  std::mutex mutex_;
  shard_set current_;
  bool closed_ = false;
};

struct task_node_state {
  static inline const char* name = "task_node";
  task_node_config cfg;
  // what it spawned, stopped when this task stops (shared with the functor that does it: the
  // state is gone when attached functors run)
  std::shared_ptr<std::vector<caf::actor_addr>> roles = std::make_shared<std::vector<caf::actor_addr>>();
  // the links of each worker it spawned, which a change of shards replaces
  std::map<caf::actor_addr, std::shared_ptr<worker_links>> links;
};

using self_ptr = task_node_actor::stateful_pointer<task_node_state>;

/// Connects to every shard of the setup, with its data link; a shard in `elsewhere` (served by
/// a promoted standby, task_node_actor's setup) is that handle, over CAF. A link of `kept` (a
/// worker's, at a change of shards) to the same shard at the same address is taken as it is.
caf::expected<shard_set> connect_shards(self_ptr self, const role_setup& setup,
                                        const std::vector<caf::actor>& elsewhere,
                                        const shard_set& kept = {}) {
  shard_set shards;
  shard_set fresh;  // closed on a failure (not those of `kept`)
  for (std::size_t i = 0; i < setup.shard_addresses.size(); ++i) {
    if (i < elsewhere.size() && elsewhere[i]) {
      remote_shard over_caf;  // no data link: its ps task's link serves another shard
      over_caf.handle = over_caf.shard = caf::actor_cast<ps_shard_actor>(elsewhere[i]);
      shards.remote.push_back(std::move(over_caf));
      shards.addresses.emplace_back();
      continue;
    }
    const auto& address = setup.shard_addresses[i];
    if (i < kept.addresses.size() && kept.addresses[i] == address) {
      shards.remote.push_back(kept.remote[i]);
      shards.addresses.push_back(address);
      continue;
    }
    host_port addr;
    try {
      addr = parse_address(address, "shard address");
    } catch (const cluster_error& e) {
      fresh.close();
      return caf::make_error(caf::sec::runtime_error, e.what());
    }
    auto shard = connect_shard(self->system(), addr, static_cast<int32_t>(i),
                               self->state.cfg.connect_timeout, setup.request_timeout);
    if (!shard) {
      fresh.close();
      return std::move(shard.error());
    }
    fresh.remote.push_back(*shard);
    shards.remote.push_back(std::move(*shard));
    shards.addresses.push_back(address);
  }
  return shards;
}

/// Closes the role's shard links once the role has stopped, however it stopped.
template <class Handle>
void close_links_with(const Handle& role, shard_set shards) {
  auto ptr = caf::actor_cast<caf::strong_actor_ptr>(role);
  ptr->get()->attach_functor([shards = std::move(shards)] { shards.close(); });
}

/// Decodes the setup and loads the split the role needs; errors name what is wrong.
caf::expected<std::pair<role_setup, std::shared_ptr<const dataset>>> prepare(const wire_buffer& buf,
                                                                            bool train) {
  auto setup = decode_role_setup(buf);
  if (!setup) return std::move(setup.error());
  try {
    auto data = load_split(setup->data, train);
    return std::make_pair(std::move(*setup), std::move(data));
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::runtime_error, e.what());
  }
}

/// A role this task cannot start: said here, in the task's own log (where whoever reads the
/// chief's "could not start" looks), and answered to the chief.
caf::error cannot_start(self_ptr self, const char* role, caf::error err) {
  log_line(log_level::error, self->state.cfg.name, "cannot start " + std::string(role) + ": "
                                                      + describe(err));
  return err;
}

task_node_actor::behavior_type task_node(self_ptr self, task_node_config cfg) {
  self->state.cfg = std::move(cfg);
  self->attach_functor([roles = self->state.roles] {  // stopping this task stops its roles
    for (const auto& role : *roles) caf::anon_send_exit(role, caf::exit_reason::user_shutdown);
  });
  self->set_down_handler([=](const caf::down_msg& dm) { self->state.links.erase(dm.source); });
  return {
    [=](setup_atom, const wire_buffer& buf, bool standbys,
        const std::vector<caf::actor>& elsewhere) -> caf::result<worker_actor> {
      if (auto err = note_refusal(self->state.cfg.name,
                                  authorise_chief(current_role(self), "setup")))
        return err;
      auto prepared = prepare(buf, true);
      if (!prepared) return cannot_start(self, "the worker", std::move(prepared.error()));
      auto& [setup, data] = *prepared;
      auto shards = connect_shards(self, setup, elsewhere);
      if (!shards) return cannot_start(self, "the worker", std::move(shards.error()));
      worker_config wc;
      wc.index = setup.index;
      wc.spec = setup.spec;
      wc.batch = setup.batch;
      wc.steps = setup.steps;
      wc.start_clock = setup.start_clock;
      wc.data_offset = setup.data_offset;
      wc.follow_until = setup.follow_until;
      wc.pause_at = setup.pause_at;
      wc.plan = setup.plan;
      wc.incarnation = setup.incarnation;
      wc.slow_ms = setup.slow_ms;
      wc.backend = setup.backend;
      wc.device = setup.device;
      wc.request_timeout = setup.request_timeout;
      wc.standbys = standbys;
      wc.train = data;
      wc.source = setup.data;
      wc.shards = shards->handles();
      wc.destinations = destinations_of(shards->remote);  // replies received in place
      wc.chief = caf::actor_cast<chief_actor>(self->current_sender());  // the chief asked
      log_line(self->state.cfg.name, "connected to " + shards->describe() + "; starting worker "
                                       + std::to_string(wc.index));
      auto worker = spawn_worker(self->system(), std::move(wc));
      arm_leave_reports(worker);
      auto links = std::make_shared<worker_links>(std::move(*shards));
      self->state.links[worker.address()] = links;
      caf::actor_cast<caf::strong_actor_ptr>(worker)->get()->attach_functor([links] {
        links->close();
      });
      self->monitor(worker);  // its entry in links goes with it
      // Not linked: the chief may stop the role (a rollback) and set this task up again.
      self->state.roles->push_back(worker.address());
      return worker;
    },
    [=](resize_atom, const worker_actor& worker, const wire_buffer& buf,
        const std::vector<caf::actor>& elsewhere) -> caf::result<int64_t> {
      if (auto err = note_refusal(self->state.cfg.name,
                                  authorise_chief(current_role(self), "resize")))
        return err;
      auto found = self->state.links.find(worker.address());
      if (found == self->state.links.end())
        return caf::make_error(caf::sec::runtime_error,
                               "a change of shards for a worker this task does not run");
      auto setup = decode_role_setup(buf);
      if (!setup) return cannot_start(self, "the worker on new shards", std::move(setup.error()));
      auto links = found->second;
      auto shards = connect_shards(self, *setup, elsewhere, links->current());
      if (!shards)
        return cannot_start(self, "the worker on new shards", std::move(shards.error()));
      log_line(self->state.cfg.name, "connected to " + shards->describe() + "; worker "
                                       + std::to_string(setup->index) + " goes on with them");
      auto taken = std::make_shared<shard_set>(std::move(*shards));
      auto answer = self->make_response_promise<int64_t>();
      self->request(worker, setup->request_timeout, resize_atom::value,
                    static_cast<int32_t>(taken->remote.size()),
                    worker_shards{taken->handles(), destinations_of(taken->remote)},
                    setup->incarnation, setup->pause_at)
        .then(
          [=](int64_t clock) mutable {
            links->replace(std::move(*taken));
            answer.deliver(clock);
          },
          [=](caf::error& err) mutable {
            taken->close_all_but(links->current());
            answer.deliver(std::move(err));
          });
      return answer;
    },
    [=](setup_atom, eval_atom, const wire_buffer& buf,
        const std::vector<caf::actor>& elsewhere) -> caf::result<evaluator_actor> {
      if (auto err = note_refusal(self->state.cfg.name,
                                  authorise_chief(current_role(self), "setup")))
        return err;
      auto prepared = prepare(buf, false);
      if (!prepared) return cannot_start(self, "the evaluator", std::move(prepared.error()));
      auto& [setup, data] = *prepared;
      auto shards = connect_shards(self, setup, elsewhere);
      if (!shards) return cannot_start(self, "the evaluator", std::move(shards.error()));
      log_line(self->state.cfg.name, "connected to " + shards->describe() + "; starting the evaluator");
      auto evaluator = spawn_evaluator(self->system(),
                                       {setup.spec, data, shards->handles(), setup.request_timeout});
      close_links_with(evaluator, std::move(*shards));
      self->state.roles->push_back(evaluator.address());
      return evaluator;
    },
  };
}

} // namespace

task_node_actor spawn_task_node(caf::actor_system& sys, task_node_config cfg) {
  return sys.spawn<caf::detached>(task_node, std::move(cfg));
}

} // namespace actorps
