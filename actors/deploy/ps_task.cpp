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

/// A loop of the user's own: the workers in the job (at ps:0, where changes of workers meet;
/// every worker at the others), those that said done, and the waits for the others held until
/// every worker in the job but the one waiting is among them.
struct finished_workers {
  finished_workers(int32_t listed, int32_t training) {
    for (int32_t w = 0; w < (training > 0 ? training : listed); ++w) in_job.insert(w);
  }

  /// Whether every worker in the job but `worker` has said done.
  bool others_done(int32_t worker) const {
    for (auto w : in_job)
      if (w != worker && !done.count(w)) return false;
    return true;
  }

  /// How many workers in the job have not said done.
  int32_t live() const {
    int32_t n = 0;
    for (auto w : in_job) n += done.count(w) ? 0 : 1;
    return n;
  }

  void answer_waiting() {
    for (auto i = waiting.begin(); i != waiting.end();) {
      if (others_done(i->first)) {
        i->second.deliver(caf::ok_atom::value);
        i = waiting.erase(i);
      } else {
        ++i;
      }
    }
  }

  std::set<int32_t> in_job;
  std::set<int32_t> done;
  std::vector<std::pair<int32_t, caf::typed_response_promise<caf::ok_atom>>> waiting;
};

/// A loop of the user's own changing its numbers of shards and workers (task_cluster::scale),
/// met at ps:0: the workers that asked, held until worker 0 (answered first, once every worker
/// in the job and not done has asked) says how the change went; the changes made, and the
/// worker tasks beyond the job waiting to be taken in.
struct scale_rendezvous {
  int32_t shards = 0;   // the numbers asked (0: none asked)
  int32_t workers = 0;
  bool moving = false;  // worker 0 was answered: it moves the state
  std::map<int32_t, caf::typed_response_promise<int64_t>> asked;
  std::vector<int64_t> changes;  // (shards, workers, clock) of each change made
  std::map<int32_t, caf::typed_response_promise<std::vector<int64_t>>> joining;

  /// Every worker waiting gets `why`; the next change starts afresh.
  void refuse_all(const std::string& why) {
    for (auto& [worker, promise] : asked)
      promise.deliver(caf::make_error(caf::sec::invalid_argument, why));
    forget_asked();
  }

  void forget_asked() {
    asked.clear();
    shards = workers = 0;
    moving = false;
  }

  /// Once every worker in the job and not done has asked, worker 0 (which then moves the
  /// state) is answered.
  void begin_when_all_asked(const finished_workers& finished) {
    if (asked.empty() || moving) return;
    if (finished.done.count(0))
      return refuse_all("a change of shards or workers: worker 0, which moves the state, has "
                        "finished");
    if (static_cast<int32_t>(asked.size()) < finished.live()) return;
    auto first = asked.find(0);
    if (first == asked.end()) return;  // (worker 0 not done has asked, as every one live)
    moving = true;
    first->second.deliver(int64_t{-1});
    asked.erase(first);
  }

  /// Worker 0's outcome, to every other worker waiting; a change made takes the workers it
  /// names into the job (and those waiting to join in), leaves those beyond out.
  void answer(int64_t clock, const std::string& why, finished_workers& finished) {
    for (auto& [worker, promise] : asked) {
      if (why.empty())
        promise.deliver(clock);
      else
        promise.deliver(caf::make_error(caf::sec::runtime_error, why));
    }
    if (why.empty()) {
      changes.insert(changes.end(), {shards, workers, clock});
      finished.in_job.clear();
      for (int32_t w = 0; w < workers; ++w) finished.in_job.insert(w);
      for (auto i = joining.begin(); i != joining.end();) {
        if (finished.in_job.count(i->first)) {
          i->second.deliver(changes);
          i = joining.erase(i);
        } else {
          ++i;
        }
      }
    }
    forget_asked();
  }

  /// Once every worker in the job has finished, the worker tasks still waiting to join hear
  /// that none will take them in.
  void release_joining(const finished_workers& finished) {
    if (finished.live() > 0) return;
    for (auto& [worker, promise] : joining)
      promise.deliver(caf::make_error(caf::sec::runtime_error,
                                      "the job finished without taking worker "
                                        + std::to_string(worker) + " in"));
    joining.clear();
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
  auto finishing = std::make_shared<finished_workers>(cfg.finish_after, cfg.training);
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
      scaling->release_joining(*finishing);
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
    [=](scale_atom, int32_t worker, int32_t shards,
        int32_t workers) -> caf::result<int64_t> {
      if (auto err = check_worker(worker, "a change of shards or workers")) return err;
      auto refuse = [](const std::string& why) {
        return caf::make_error(caf::sec::invalid_argument, "a change of shards or workers: " + why);
      };
      if (cfg.index != 0) return refuse("ask ps:0, not ps:" + std::to_string(cfg.index));
      if (shards < 1) return refuse("the number of shards is 1 or more");
      if (workers < 1 || workers > cfg.finish_after)
        return refuse("the number of workers is 1 to the " + std::to_string(cfg.finish_after)
                      + " worker tasks listed (got " + std::to_string(workers) + ")");
      if (finishing->done.count(worker))
        return refuse("worker " + std::to_string(worker) + " has finished");
      if (!finishing->in_job.count(worker))
        return refuse("worker " + std::to_string(worker) + " is not in the job");
      if (scaling->moving) return refuse("one is under way already");
      if (scaling->asked.count(worker))
        return refuse("worker " + std::to_string(worker) + " asked twice");
      if (!scaling->asked.empty() && (scaling->shards != shards || scaling->workers != workers)) {
        auto why = "worker " + std::to_string(worker) + " asks for " + std::to_string(shards)
                   + " shards and " + std::to_string(workers) + " workers, worker "
                   + std::to_string(scaling->asked.begin()->first) + " for "
                   + std::to_string(scaling->shards) + " and " + std::to_string(scaling->workers);
        scaling->refuse_all("a change of shards or workers: " + why);
        return refuse(why);
      }
      scaling->shards = shards;
      scaling->workers = workers;
      auto promise = self->make_response_promise<int64_t>();
      scaling->asked.emplace(worker, promise);
      scaling->begin_when_all_asked(*finishing);
      return promise;
    },
    [=](scale_atom, done_atom, int32_t shards, int32_t workers, int64_t clock,
        const std::string& why) -> caf::result<caf::ok_atom> {
      if (auto err = check_worker(0, "the outcome of a change of shards or workers")) return err;
      if (!scaling->moving || shards != scaling->shards || workers != scaling->workers)
        return caf::make_error(caf::sec::invalid_argument,
                               "the outcome of a change to " + std::to_string(shards)
                                 + " shards and " + std::to_string(workers)
                                 + " workers, which is not under way");
      scaling->answer(clock, why, *finishing);
      return caf::ok_atom::value;
    },
    [=](join_atom, int32_t worker) -> caf::result<std::vector<int64_t>> {
      if (auto err = check_worker(worker, "a wait to join")) return err;
      if (cfg.index != 0)
        return caf::make_error(caf::sec::invalid_argument,
                               "a wait to join: ask ps:0, not ps:" + std::to_string(cfg.index));
      if (finishing->done.count(worker))
        return caf::make_error(caf::sec::invalid_argument,
                               "a wait to join: worker " + std::to_string(worker)
                                 + " has finished");
      if (finishing->in_job.count(worker)) return scaling->changes;  // taken in already
      if (finishing->live() == 0)
        return caf::make_error(caf::sec::runtime_error,
                               "the job finished without taking worker "
                                 + std::to_string(worker) + " in");
      if (scaling->joining.count(worker))
        return caf::make_error(caf::sec::invalid_argument,
                               "a wait to join: worker " + std::to_string(worker)
                                 + " waits already");
      auto promise = self->make_response_promise<std::vector<int64_t>>();
      scaling->joining.emplace(worker, promise);
      return promise;
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
