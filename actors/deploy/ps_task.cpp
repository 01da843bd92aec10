#include "actors/deploy/ps_task.hpp"

#include <caf/all.hpp>

namespace actorps {

namespace {

ps_task_actor::behavior_type ps_task(ps_task_actor::pointer self, ps_task_config cfg) {
  self->monitor(cfg.shard);
  self->set_down_handler([=](caf::down_msg& dm) { self->quit(dm.reason); });
  return {
    [=](shard_atom) { return cfg.shard; },
    [=](link_atom) { return std::make_tuple(cfg.link_port, cfg.link_name); },
  };
}

} // namespace

ps_task_actor spawn_ps_task(caf::actor_system& sys, ps_task_config cfg) {
  return sys.spawn(ps_task, std::move(cfg));
}

} // namespace actorps
