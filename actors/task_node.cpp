#include "actors/task_node.hpp"

#include "actors/connect.hpp"
#include "actors/evaluator.hpp"
#include "actors/log.hpp"
#include "actors/worker.hpp"

#include <caf/all.hpp>

namespace actorps {

namespace {

struct task_node_state {
  static inline const char* name = "task_node";
  task_node_config cfg;
  // what it spawned, stopped when this task stops (shared with the functor that does it: the
  // state is gone when attached functors run)
  std::shared_ptr<std::vector<caf::actor_addr>> roles = std::make_shared<std::vector<caf::actor_addr>>();
};

using self_ptr = task_node_actor::stateful_pointer<task_node_state>;

/// Connects to every shard of the setup, in shard order.
caf::expected<std::vector<ps_shard_actor>> connect_shards(self_ptr self, const role_setup& setup) {
  std::vector<ps_shard_actor> shards;
  for (const auto& text : setup.shard_addresses) {
    host_port addr;
    try {
      addr = parse_address(text, "shard address");
    } catch (const cluster_error& e) {
      return caf::make_error(caf::sec::runtime_error, e.what());
    }
    auto shard = connect_to<ps_shard_actor>(self->system(), addr, self->state.cfg.connect_timeout);
    if (!shard) return std::move(shard.error());
    shards.push_back(std::move(*shard));
  }
  return shards;
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

task_node_actor::behavior_type task_node(self_ptr self, task_node_config cfg) {
  self->state.cfg = std::move(cfg);
  self->attach_functor([roles = self->state.roles] {  // stopping this task stops its roles
    for (const auto& role : *roles) caf::anon_send_exit(role, caf::exit_reason::user_shutdown);
  });
  return {
    [=](setup_atom, const wire_buffer& buf) -> caf::result<worker_actor> {
      auto prepared = prepare(buf, true);
      if (!prepared) return std::move(prepared.error());
      auto& [setup, data] = *prepared;
      auto shards = connect_shards(self, setup);
      if (!shards) return std::move(shards.error());
      worker_config wc;
      wc.index = setup.index;
      wc.spec = setup.spec;
      wc.batch = setup.batch;
      wc.steps = setup.steps;
      wc.start_clock = setup.start_clock;
      wc.incarnation = setup.incarnation;
      wc.slow_ms = setup.slow_ms;
      wc.backend = setup.backend;
      wc.device = setup.device;
      wc.request_timeout = setup.request_timeout;
      wc.train = data;
      wc.shards = std::move(*shards);
      wc.chief = caf::actor_cast<chief_actor>(self->current_sender());  // the chief asked
      log_line(self->state.cfg.name, "connected to " + std::to_string(wc.shards.size())
                                       + " shard(s); starting worker " + std::to_string(wc.index));
      auto worker = spawn_worker(self->system(), std::move(wc));
      // Not linked: the chief may stop the role (a rollback) and set this task up again.
      self->state.roles->push_back(worker.address());
      return worker;
    },
    [=](setup_atom, eval_atom, const wire_buffer& buf) -> caf::result<evaluator_actor> {
      auto prepared = prepare(buf, false);
      if (!prepared) return std::move(prepared.error());
      auto& [setup, data] = *prepared;
      auto shards = connect_shards(self, setup);
      if (!shards) return std::move(shards.error());
      log_line(self->state.cfg.name, "connected to " + std::to_string(shards->size())
                                       + " shard(s); starting the evaluator");
      auto evaluator = spawn_evaluator(self->system(),
                                       {setup.spec, data, std::move(*shards), setup.request_timeout});
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
