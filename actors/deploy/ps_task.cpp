#include "actors/deploy/ps_task.hpp"

#include "actors/roles/authorisation.hpp"

#include <caf/all.hpp>

#include <memory>
#include <set>

namespace actorps {

namespace {

ps_task_actor::behavior_type ps_task(ps_task_actor::pointer self, ps_task_config cfg) {
  self->monitor(cfg.shard);
  // Only the shard's own end stops the task: a down_msg is an ordinary message to send.
  self->set_down_handler([=](caf::down_msg& dm) {
    if (dm.source == cfg.shard.address()) self->quit(dm.reason);
  });
  const std::string who = "ps task";
  // The standbys spawned here end with the task (they die with the process anyway).
  auto standbys = std::make_shared<std::vector<caf::actor_addr>>();
  self->attach_functor([standbys] {
    for (const auto& s : *standbys) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  });
  return {
    [=](shard_atom) -> caf::result<ps_shard_actor> {
      if (auto err = note_refusal(who, authorise_reader(current_role(self), "shard"))) return err;
      return cfg.shard;
    },
    [=](link_atom) -> caf::result<uint16_t, std::string> {
      if (auto err = note_refusal(who, authorise_reader(current_role(self), "link"))) return err;
      return {cfg.link_port, cfg.link_name};
    },
    [=, done = std::make_shared<std::set<int32_t>>()](done_atom,
                                                      int32_t worker) -> caf::result<caf::ok_atom> {
      if (auto err = note_refusal(who, authorise_chief_or_worker(current_role(self), worker,
                                                                 "done of worker "
                                                                   + std::to_string(worker))))
        return err;
      if (worker < 0 || worker >= cfg.finish_after)
        return caf::make_error(caf::sec::invalid_argument,
                               "done from worker " + std::to_string(worker) + " of "
                                 + std::to_string(cfg.finish_after));
      done->insert(worker);
      if (static_cast<int32_t>(done->size()) == cfg.finish_after)
        self->send_exit(cfg.shard, caf::exit_reason::user_shutdown);  // this task follows it
      return caf::ok_atom::value;
    },
    [=](standby_atom, int32_t shard, int32_t primary_task) -> caf::result<ps_shard_actor> {
      if (auto err = note_refusal(who, authorise_chief(current_role(self), "standby"))) return err;
      if (shard < 0 || primary_task < 0 || primary_task == cfg.index)
        return caf::make_error(caf::sec::invalid_argument,
                               "a standby of shard " + std::to_string(shard) + " served by ps:"
                                 + std::to_string(primary_task) + " cannot live in ps:"
                                 + std::to_string(cfg.index));
      auto config = cfg.standby_config;
      config.primary_task = primary_task;
      auto standby = spawn_ps_shard(self->system(), shard, std::move(config));
      standbys->push_back(standby.address());
      return standby;
    },
  };
}

} // namespace

ps_task_actor spawn_ps_task(caf::actor_system& sys, ps_task_config cfg) {
  return sys.spawn(ps_task, std::move(cfg));
}

} // namespace actorps
