#include "actors/deploy/ps_task.hpp"

#include "actors/guard/connect.hpp"
#include "actors/protocol/log.hpp"
#include "actors/roles/authorisation.hpp"

#include <caf/all.hpp>

#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace actorps {

namespace {

/// Spawns the standby of `shard` here and hands it to `promise` once this process has a
/// connection of its own to ps:<primary_task> (dialled now at `addr`, the chief's word for it,
/// or the address in this task's cluster spec when empty: CAF keeps one per pair of nodes, so
/// a second standby of the same primary, or the primary's task dialling us, reuses it), or at
/// once when no address is known. Without that connection the primary and its standby would
/// talk through the chief's node. Refused, with the reason, when the primary's task cannot be
/// reached: a standby its primary cannot replicate to is no standby.
void spawn_standby_when_connected(ps_task_actor::pointer self, const ps_task_config& cfg,
                                  std::shared_ptr<std::vector<caf::actor_addr>> standbys,
                                  int32_t shard, int32_t primary_task, host_port addr,
                                  caf::typed_response_promise<ps_shard_actor> promise) {
  auto spawn = [=]() mutable {
    auto config = cfg.standby_config;
    config.primary_task = primary_task;
    auto standby = spawn_ps_shard(self->system(), shard, std::move(config));
    standbys->push_back(standby.address());
    promise.deliver(standby);
  };
  if (addr.host.empty()) {  // the chief named none: the one of this task's cluster spec
    if (primary_task >= static_cast<int32_t>(cfg.ps_addresses.size())) return spawn();
    addr = cfg.ps_addresses[primary_task];
  }
  auto connector = spawn_connector(self->system(), addr,
                                   self->system().message_types(
                                     caf::detail::type_list<ps_task_actor>{}),
                                   cfg.connect_timeout);
  auto name = "ps:" + std::to_string(cfg.index);
  auto refused = [=](caf::error& err) mutable {
    log_line(log_level::warn, name,
             "no standby of shard " + std::to_string(shard) + ": " + describe(err));
    promise.deliver(std::move(err));
  };
  self->request(connector, cfg.connect_timeout + std::chrono::seconds(15), caf::connect_atom::value)
    .then(
      [=](const caf::strong_actor_ptr& primary) mutable {
        // Our side of the handshake is done, not necessarily the other's: its answer to a
        // hello comes once it has taken this connection as the route to this process.
        self->request(caf::actor_cast<ps_task_actor>(primary), cfg.connect_timeout,
                      standby_atom::value)
          .then(
            [=](caf::ok_atom) mutable {
              log_line(name, "connected to ps:" + std::to_string(primary_task) + " at "
                               + addr.text() + ", where the primary of its standby of shard "
                               + std::to_string(shard) + " runs");
              spawn();
            },
            refused);
      },
      refused);
}

/// A loop of the user's own: the workers that said done, and the waits for the others held
/// until every worker but the one waiting is among them.
struct finished_workers {
  explicit finished_workers(int32_t workers) : workers(workers) {}

  void answer_waiting() {
    auto others_done = [&](int32_t worker) {
      auto mine = done.count(worker);
      return static_cast<int32_t>(done.size() - mine) == workers - 1;
    };
    for (auto i = waiting.begin(); i != waiting.end();) {
      if (others_done(i->first)) {
        i->second.deliver(caf::ok_atom::value);
        i = waiting.erase(i);
      } else {
        ++i;
      }
    }
  }

  int32_t workers;
  std::set<int32_t> done;
  std::vector<std::pair<int32_t, caf::typed_response_promise<caf::ok_atom>>> waiting;
};

/// A loop of the user's own changing its number of shards (task_cluster::scale), met at ps:0:
/// the workers that asked, held until worker 0 (answered first, once every worker not done has
/// asked) says how the change went.
struct scale_rendezvous {
  int32_t shards = 0;  // the number asked (0: none asked)
  bool moving = false; // worker 0 was answered: it moves the state
  std::map<int32_t, caf::typed_response_promise<int64_t>> asked;

  /// Every worker waiting gets `why`; the next change starts afresh.
  void refuse_all(const std::string& why) {
    for (auto& [worker, promise] : asked)
      promise.deliver(caf::make_error(caf::sec::invalid_argument, why));
    *this = {};
  }

  /// Once every worker not done has asked, worker 0 (which then moves the state) is answered.
  void begin_when_all_asked(const finished_workers& finished) {
    if (asked.empty() || moving) return;
    if (finished.done.count(0))
      return refuse_all("a change of shards: worker 0, which moves the state, has finished");
    const auto live = finished.workers - static_cast<int32_t>(finished.done.size());
    if (static_cast<int32_t>(asked.size()) < live) return;
    auto first = asked.find(0);
    if (first == asked.end()) return;  // (worker 0 not done has asked, as every one live)
    moving = true;
    first->second.deliver(int64_t{-1});
    asked.erase(first);
  }

  /// Worker 0's outcome, to every other worker waiting.
  void answer(int64_t clock, const std::string& why) {
    for (auto& [worker, promise] : asked) {
      if (why.empty())
        promise.deliver(clock);
      else
        promise.deliver(caf::make_error(caf::sec::runtime_error, why));
    }
    *this = {};
  }
};

ps_task_actor::behavior_type ps_task(ps_task_actor::pointer self, ps_task_config cfg) {
  self->monitor(cfg.shard);
  // Only the shard's own end stops the task: a down_msg is an ordinary message to send.
  self->set_down_handler([=](caf::down_msg& dm) {
    if (dm.source == cfg.shard.address()) self->quit(dm.reason);
  });
  const std::string who = "ps task";
  // Every refusal as not authorised goes through this: logged, and counted for the shard.
  auto note_refusal = [refusals = cfg.refusals, who](caf::error err) {
    if (err && refusals) ++*refusals;
    return actorps::note_refusal(who, std::move(err));
  };
  // The standbys spawned here end with the task (they die with the process anyway).
  auto standbys = std::make_shared<std::vector<caf::actor_addr>>();
  self->attach_functor([standbys] {
    for (const auto& s : *standbys) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  });
  auto finishing = std::make_shared<finished_workers>(cfg.finish_after);
  auto scaling = std::make_shared<scale_rendezvous>();
  // A done (or a wait) from a worker that is not one of this loop's, or not allowed to say so.
  auto check_worker = [=](int32_t worker, const std::string& what) -> caf::error {
    auto from = what + " from worker " + std::to_string(worker);
    if (auto err = note_refusal(authorise_chief_or_worker(current_role(self), worker, from)))
      return err;
    if (worker < 0 || worker >= cfg.finish_after)
      return caf::make_error(caf::sec::invalid_argument,
                             from + " of " + std::to_string(cfg.finish_after));
    return {};
  };
  return {
    [=](shard_atom) -> caf::result<ps_shard_actor> {
      if (auto err = note_refusal(authorise_reader(current_role(self), "shard"))) return err;
      return cfg.shard;
    },
    [=](link_atom) -> caf::result<uint16_t, std::string> {
      if (auto err = note_refusal(authorise_reader(current_role(self), "link"))) return err;
      return {cfg.link_port, cfg.link_name};
    },
    [=](done_atom, int32_t worker) -> caf::result<caf::ok_atom> {
      if (auto err = check_worker(worker, "done")) return err;
      finishing->done.insert(worker);
      finishing->answer_waiting();
      scaling->begin_when_all_asked(*finishing);  // one fewer to wait for
      if (static_cast<int32_t>(finishing->done.size()) == cfg.finish_after)
        self->send_exit(cfg.shard, caf::exit_reason::user_shutdown);  // this task follows it
      return caf::ok_atom::value;
    },
    [=](done_atom, others_atom, int32_t worker) -> caf::result<caf::ok_atom> {
      if (auto err = check_worker(worker, "a wait for the others")) return err;
      auto promise = self->make_response_promise<caf::ok_atom>();
      finishing->waiting.emplace_back(worker, promise);
      finishing->answer_waiting();  // at once when the others are done already
      return promise;
    },
    [=](scale_atom, int32_t worker, int32_t shards) -> caf::result<int64_t> {
      if (auto err = check_worker(worker, "a change of shards")) return err;
      auto refuse = [](const std::string& why) {
        return caf::make_error(caf::sec::invalid_argument, "a change of shards: " + why);
      };
      if (cfg.index != 0) return refuse("ask ps:0, not ps:" + std::to_string(cfg.index));
      if (shards < 1) return refuse("the number of shards is 1 or more");
      if (finishing->done.count(worker))
        return refuse("worker " + std::to_string(worker) + " has finished");
      if (scaling->moving) return refuse("one is under way already");
      if (scaling->asked.count(worker))
        return refuse("worker " + std::to_string(worker) + " asked twice");
      if (!scaling->asked.empty() && scaling->shards != shards) {
        auto why = "worker " + std::to_string(worker) + " asks for " + std::to_string(shards)
                   + " shards, worker " + std::to_string(scaling->asked.begin()->first)
                   + " for " + std::to_string(scaling->shards);
        scaling->refuse_all("a change of shards: " + why);
        return refuse(why);
      }
      scaling->shards = shards;
      auto promise = self->make_response_promise<int64_t>();
      scaling->asked.emplace(worker, promise);
      scaling->begin_when_all_asked(*finishing);
      return promise;
    },
    [=](scale_atom, done_atom, int32_t shards, int64_t clock,
        const std::string& why) -> caf::result<caf::ok_atom> {
      if (auto err = check_worker(0, "the outcome of a change of shards")) return err;
      if (!scaling->moving || shards != scaling->shards)
        return caf::make_error(caf::sec::invalid_argument,
                               "the outcome of a change to " + std::to_string(shards)
                                 + " shards, which is not under way");
      scaling->answer(clock, why);
      return caf::ok_atom::value;
    },
    [=](standby_atom) -> caf::result<caf::ok_atom> {
      if (auto err = note_refusal(authorise_ps_task(current_role(self), "standby hello")))
        return err;
      return caf::ok_atom::value;
    },
    [=](standby_atom, int32_t shard, int32_t primary_task,
        const std::string& address) -> caf::result<ps_shard_actor> {
      if (auto err = note_refusal(authorise_chief(current_role(self), "standby"))) return err;
      if (shard < 0 || primary_task < 0 || primary_task == cfg.index)
        return caf::make_error(caf::sec::invalid_argument,
                               "a standby of shard " + std::to_string(shard) + " served by ps:"
                                 + std::to_string(primary_task) + " cannot live in ps:"
                                 + std::to_string(cfg.index));
      host_port addr;
      if (!address.empty()) {
        try {
          addr = parse_address(address, "standby: the primary's address");
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::invalid_argument, e.what());
        }
      }
      auto promise = self->make_response_promise<ps_shard_actor>();
      spawn_standby_when_connected(self, cfg, standbys, shard, primary_task, std::move(addr),
                                   promise);
      return promise;
    },
  };
}

} // namespace

ps_task_actor spawn_ps_task(caf::actor_system& sys, ps_task_config cfg) {
  return sys.spawn(ps_task, std::move(cfg));
}

} // namespace actorps
