#include "actors/deploy/ps_task.hpp"

#include <caf/all.hpp>

#include <memory>
#include <set>

namespace actorps {

namespace {

ps_task_actor::behavior_type ps_task(ps_task_actor::pointer self, ps_task_config cfg) {
  self->monitor(cfg.shard);
  self->set_down_handler([=](caf::down_msg& dm) { self->quit(dm.reason); });
  return {
    [=](shard_atom) { return cfg.shard; },
    [=](link_atom) { return std::make_tuple(cfg.link_port, cfg.link_name); },
    [=, done = std::make_shared<std::set<int32_t>>()](done_atom,
                                                      int32_t worker) -> caf::result<caf::ok_atom> {
      if (worker < 0 || worker >= cfg.finish_after)
        return caf::make_error(caf::sec::invalid_argument,
                               "done from worker " + std::to_string(worker) + " of "
                                 + std::to_string(cfg.finish_after));
      done->insert(worker);
      if (static_cast<int32_t>(done->size()) == cfg.finish_after)
        self->send_exit(cfg.shard, caf::exit_reason::user_shutdown);  // this task follows it
      return caf::ok_atom::value;
    },
  };
}

} // namespace

ps_task_actor spawn_ps_task(caf::actor_system& sys, ps_task_config cfg) {
  return sys.spawn(ps_task, std::move(cfg));
}

} // namespace actorps
