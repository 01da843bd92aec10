// Where the roles come from. simulate: the chief spawns every shard, worker and the evaluator
// in this process. Distributed: each ps, worker and evaluator process joins the chief with its
// actor; once all have joined (within join_timeout) the chief initialises the shards and asks
// each worker / evaluator process to spawn its role. Either way the same actors run the same
// code; only placement differs.
#include "actors/chief/role_setup_codec.hpp"
#include "actors/chief/state.hpp"

#include "actors/roles/evaluator.hpp"
#include "actors/protocol/log.hpp"
#include "actors/roles/ps_shard.hpp"
#include "actors/roles/worker.hpp"
#include "actors/protocol/model_spec.hpp"

namespace actorps::chief_detail {

namespace {

bool all_joined(const chief_state& st) {
  auto present = [](const auto& handle) { return static_cast<bool>(handle); };
  return std::all_of(st.shards.begin(), st.shards.end(), present)
         && std::all_of(st.worker_nodes.begin(), st.worker_nodes.end(), present)
         && (!st.cfg.remote->evaluator || st.evaluator_node);
}

role_setup base_setup(const chief_state& st) {
  const auto& remote = *st.cfg.remote;
  role_setup setup;
  setup.spec = st.cfg.spec;
  setup.batch = st.cfg.batch;
  setup.steps = st.cfg.steps;
  setup.request_timeout = st.cfg.request_timeout;
  setup.data = remote.data;
  setup.backend = st.cfg.backend;
  for (const auto& a : remote.ps) setup.shard_addresses.push_back(a.text());
  return setup;
}

/// The shards the ps task at their address no longer serves (a standby promoted in another ps
/// task: fail_over), by shard: their handles, none for the others; empty when there is none.
/// A worker or evaluator set up now reaches those over CAF.
std::vector<caf::actor> served_elsewhere(const chief_state& st) {
  std::vector<caf::actor> out(st.shards.size());
  bool any = false;
  for (std::size_t s = 0; s < st.shards.size() && s < st.primary_host.size(); ++s) {
    if (st.primary_host[s] == static_cast<int32_t>(s) || !st.shards[s]) continue;
    out[s] = caf::actor_cast<caf::actor>(st.shards[s]);
    any = true;
  }
  if (!any) out.clear();
  return out;
}

/// Starts the evaluator and every worker at the run's start clock; then training begins.
void start_roles(self_ptr self) {
  auto& st = self->state;
  auto one_started = after_all(st.workers.size() + 1, [=] { begin_training(self); });
  start_evaluator(self, [=](bool) { one_started(); });
  for (int32_t w = 0; w < static_cast<int32_t>(st.workers.size()); ++w)
    start_worker(self, w, st.start_clock, [=](bool ok) {
      // a process lost while its role started is awaited (recovery.cpp): its next one takes over
      if (!ok && !self->state.awaiting_rejoin.count(worker_role(w)))
        return fail_run(self, worker_role(w).text() + " could not start its role",
                        caf::make_error(caf::sec::runtime_error, "see its log"));
      one_started();
    });
}

/// Sends each shard the spec and its part of the seeded initial parameters.
void init_shards(self_ptr self) {
  auto& st = self->state;
  st.roles_placed = true;
  const auto& ck = st.cfg.checkpoints;
  if (ck.resume || ck.init_from) {
    auto ckpt = std::make_shared<const loaded_checkpoint>(ck.resume ? *ck.resume : *ck.init_from);
    restore_shards(self, ckpt, [=] { start_roles(self); });
    return;
  }
  const auto& spec = st.cfg.spec;
  block_layout layout(spec);
  auto initial = initial_values(spec.model, spec.seed);
  ask_each<caf::ok_atom>(
    st.shards.size(),
    [&](std::size_t s) {
      std::vector<float> part(layout.shard_floats(static_cast<int32_t>(s)));
      layout.gather(static_cast<int32_t>(s), initial.data(), part.data());
      return self->request(st.shards[s], st.cfg.request_timeout, init_atom::value,
                           encode_shard_init(spec, static_cast<int32_t>(s), layout, part.data()));
    },
    [=](std::vector<caf::ok_atom>) { start_roles(self); },
    [=](caf::error& err) { fail_run(self, "initialising the shards failed", err); });
}

caf::error join_refused(const std::string& why) {
  return caf::make_error(caf::sec::runtime_error, why);
}

} // namespace

void spawn_local_shard(self_ptr self, int32_t s) {
  auto& st = self->state;
  // In one process the shards' checkpoint root is the run's checkpoint directory.
  st.shards[s] = spawn_ps_shard(self->system(), s, {st.cfg.checkpoints.dir, st.cfg.bounds});
  self->monitor(st.shards[s]);
}

void start_worker(self_ptr self, int32_t w, int64_t start_clock, std::function<void(bool)> done) {
  auto& st = self->state;
  st.clocks[w] = start_clock;
  st.done[w] = false;
  st.released[w] = false;
  if (!st.cfg.remote) {
    worker_config wc;
    wc.index = w;
    wc.spec = st.cfg.spec;
    wc.batch = st.cfg.batch;
    wc.steps = st.batches_planned(w);
    if (!st.plans.empty()) wc.plan = st.plans[w];
    wc.start_clock = start_clock;
    wc.data_offset = st.data_offset(w);
    wc.incarnation = st.incarnation[w];
    wc.follow_until = follow_grant(self);
    wc.pause_at = next_resize_clock(st, start_clock);
    wc.slow_ms = w < static_cast<int32_t>(st.cfg.slow_ms.size()) ? st.cfg.slow_ms[w] : 0;
    wc.request_timeout = st.cfg.request_timeout;
    wc.backend = st.cfg.backend;
    wc.device = st.cfg.gpus[w % st.cfg.gpus.size()];
    wc.train = st.cfg.train;
    wc.source = st.cfg.source;
    wc.shards = st.shards;
    wc.chief = self;
    wc.standbys = st.cfg.replicas > 0;
    st.workers[w] = spawn_worker(self->system(), std::move(wc));
    self->monitor(st.workers[w]);
    st.live[w] = true;
    done(true);
    return;
  }
  if (!st.worker_nodes[w]) {  // its process was lost before its role was asked for
    log_line(log_level::warn, "chief", worker_role(w).text() + " has no process to start it");
    st.data_stopped(w);
    if (!st.awaiting_rejoin.count(worker_role(w))) {
      st.live[w] = false;
      for (auto& s : st.shards)
        if (s) self->send(s, leave_atom::value, w);
      await_worker_process(self, w, std::chrono::steady_clock::now());
    }
    return done(false);
  }
  auto setup = base_setup(st);
  setup.index = w;
  setup.start_clock = start_clock;
  setup.data_offset = st.data_offset(w);
  setup.incarnation = st.incarnation[w];
  setup.follow_until = follow_grant(self);
  setup.pause_at = next_resize_clock(st, start_clock);
  setup.steps = st.batches_planned(w);
  if (!st.plans.empty()) setup.plan = st.plans[w];
  setup.slow_ms = w < static_cast<int32_t>(st.cfg.slow_ms.size()) ? st.cfg.slow_ms[w] : 0;
  setup.device = st.cfg.gpus[w % st.cfg.gpus.size()];
  auto incarnation = st.incarnation[w];
  // Answered once: by the node's reply, or by fail_pending_start when the node is lost first.
  auto answer = std::make_shared<std::function<void(bool)>>(std::move(done));
  auto finish = [answer](bool ok) {
    if (auto f = std::exchange(*answer, nullptr)) f(ok);
  };
  st.pending_starts[w] = answer;
  self->request(st.worker_nodes[w], st.cfg.request_timeout, setup_atom::value,
                encode_role_setup(setup), st.cfg.replicas > 0, served_elsewhere(st))
    .then(
      [=](worker_actor& worker) {
        auto& st = self->state;
        if (st.incarnation[w] != incarnation || !*answer) {  // superseded, or its node lost
          self->send_exit(worker, caf::exit_reason::kill);
          finish(false);
          return;
        }
        self->monitor(worker);
        st.workers[w] = std::move(worker);
        st.live[w] = true;
        finish(true);
      },
      [=](caf::error& err) {
        if (!*answer) return;  // answered already: its node was lost
        log_line(log_level::error, "chief",
                 worker_role(w).text() + " could not start: " + describe(err));
        finish(false);
      });
}

void resize_worker(self_ptr self, int32_t w, int64_t clock, std::function<void(bool)> done) {
  auto& st = self->state;
  const auto worker = st.workers[w];
  const auto generation = st.resize_generation;
  st.clocks[w] = clock;
  st.done[w] = false;
  st.released[w] = false;
  st.live[w] = true;
  auto taken = [=](int64_t) {
    ++self->state.resize.kept;
    done(true);
  };
  auto refused = [=](caf::error& err) {
    auto& st = self->state;
    if (st.phase != run_phase::resizing || st.resize_generation != generation)
      return done(false);  // the run went back or ended meanwhile: started by that, if at all
    if (st.workers[w] == worker) {
      log_line(log_level::warn, "chief",
               worker_role(w).text() + " did not take the new shards (" + describe(err)
                 + "); started again");
      self->demonitor(worker.address());
      self->send_exit(worker, caf::exit_reason::kill);
      st.workers[w] = nullptr;
    }
    start_worker(self, w, clock, done);
  };
  const auto pause_at = next_resize_clock(st, clock);
  if (!st.cfg.remote) {
    self->request(worker, st.cfg.request_timeout, resize_atom::value, st.cfg.spec.shards,
                  worker_shards{st.shards, {}}, st.incarnation[w], pause_at)
      .then(taken, refused);
    return;
  }
  // In another process the worker's node reaches the new shards first, with their data links.
  auto setup = base_setup(st);
  setup.index = w;
  setup.incarnation = st.incarnation[w];
  setup.pause_at = pause_at;
  self->request(st.worker_nodes[w], st.cfg.request_timeout, resize_atom::value, worker,
                encode_role_setup(setup), served_elsewhere(st))
    .then(taken, refused);
}

void start_evaluator(self_ptr self, std::function<void(bool)> done) {
  auto& st = self->state;
  if (!st.cfg.remote) {
    if (st.cfg.test) {
      st.evaluator = spawn_evaluator(self->system(),
                                     {st.cfg.spec, st.cfg.test, st.shards, st.cfg.request_timeout});
      self->monitor(st.evaluator);
    }
    done(true);
    return;
  }
  if (!st.evaluator_node) {
    done(true);
    return;
  }
  auto setup = base_setup(st);
  self->request(st.evaluator_node, st.cfg.request_timeout, setup_atom::value, eval_atom::value,
                encode_role_setup(setup), served_elsewhere(st))
    .then(
      [=](evaluator_actor& evaluator) {
        self->monitor(evaluator);
        self->state.evaluator = std::move(evaluator);
        done(true);
      },
      [=](caf::error& err) {
        log_line(log_level::error, "chief",
                 evaluator_role().text() + " could not start: " + describe(err));
        done(false);
      });
}

void place_roles(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.remote) {
    for (int32_t s = 0; s < st.cfg.spec.shards; ++s) spawn_local_shard(self, s);
    init_shards(self);
    return;
  }
  if (all_joined(st)) {
    init_shards(self);
    return;
  }
  self->delayed_send(self, st.cfg.remote->join_timeout, join_due_atom::value);
}

caf::error seat_shard(self_ptr self, int32_t index, ps_shard_actor shard, ps_task_actor task) {
  auto& st = self->state;
  if (!st.cfg.remote) return join_refused("this chief runs a simulation; nothing can join");
  auto name = ps_role(index).text();
  if (index < 0 || index >= static_cast<int32_t>(st.shards.size()) || !shard)
    return join_refused(name + " is not part of this cluster");
  if (st.shards[index]) return join_refused(name + " has already joined");
  st.shards[index] = std::move(shard);
  self->monitor(st.shards[index]);
  st.ps_tasks.resize(st.shards.size());
  st.primary_host.resize(st.shards.size());
  st.ps_tasks[index] = std::move(task);  // where standbys of other shards are spawned
  st.primary_host[index] = index;
  return caf::none;
}

caf::expected<role_id> seat_node(self_ptr self, const std::string& type, int32_t index,
                                 task_node_actor node) {
  auto& st = self->state;
  auto name = type + ":" + std::to_string(index);  // as it came: it may name no role of ours
  if (!st.cfg.remote) return join_refused("this chief runs a simulation; nothing can join");
  auto kind = role_kind_named(type);
  task_node_actor* slot = nullptr;
  if (kind == role_kind::worker && index >= 0
      && index < static_cast<int32_t>(st.worker_nodes.size()))
    slot = &st.worker_nodes[index];
  else if (kind == role_kind::evaluator && index == 0)  // in the cluster, or outside it (TFJob)
    slot = &st.evaluator_node;
  if (!slot || !node) return join_refused(name + " is not part of this cluster");
  if (*slot) return join_refused(name + " has already joined");
  *slot = std::move(node);
  self->monitor(*slot);
  return role_id{*kind, index};
}

namespace {

/// Whether nothing has been started on the task in a slot yet, so that a new process of the
/// same task may simply take the slot over.
bool nothing_started_on(const chief_state& st, role_id role) {
  if (st.phase == run_phase::waiting) return true;
  if (st.phase != run_phase::placing) return false;
  switch (role.kind) {
    case role_kind::ps: return !all_joined(st);  // the shards are initialised once all have
    case role_kind::worker: return !st.workers[role.index];
    case role_kind::evaluator: return !st.evaluator;
  }
  return false;
}

/// The previous process of `role` (in `slot`) is gone, though its down message has not come
/// yet: its loss is handled now (placing: it simply gives way, when nothing ran on it).
template <class Handle>
void lose_previous(self_ptr self, role_id role, Handle& slot) {
  auto& st = self->state;
  log_line("chief", role.text() + " joined again from a new process: its previous process is lost");
  auto previous = slot.address();
  self->demonitor(previous);
  if (nothing_started_on(st, role)) {
    slot = nullptr;
    if (role.kind == role_kind::worker) fail_pending_start(self, role.index);
    return;
  }
  on_down(self, caf::down_msg{previous, caf::make_error(caf::exit_reason::remote_link_unreachable)});
}

} // namespace

bool supersede_shard(self_ptr self, int32_t index, const ps_shard_actor& shard) {
  auto& st = self->state;
  if (!st.cfg.remote || !shard || index < 0 || index >= static_cast<int32_t>(st.shards.size())
      || !st.shards[index] || st.shards[index] == shard)
    return false;
  lose_previous(self, ps_role(index), st.shards[index]);
  return true;
}

bool rejoin_as_standby_host(self_ptr self, int32_t index, const ps_shard_actor& shard,
                            const ps_task_actor& task) {
  auto& st = self->state;
  if (!st.cfg.remote || st.cfg.replicas < 1 || !task || !shard || index < 0
      || index >= static_cast<int32_t>(st.primary_host.size())
      || index >= static_cast<int32_t>(st.ps_tasks.size()) || !st.shards[index]
      || st.primary_host[index] == index)
    return false;
  auto& slot = st.ps_tasks[index];
  if (slot == task) return true;  // said twice
  if (slot) self->demonitor(slot.address());  // a host before it, lost: its standbys' own downs tell
  slot = task;
  self->monitor(slot);
  st.idle_shards.resize(st.ps_tasks.size());
  st.idle_shards[index] = shard;
  log_line("chief", ps_role(index).text() + " is back from a new process, as a host of standbys: "
                      + "shard " + std::to_string(index) + " is served by ps:"
                      + std::to_string(st.primary_host[index]) + " since its fail-over");
  if (st.phase == run_phase::training)
    for (int32_t s = 0; s < static_cast<int32_t>(st.shards.size()); ++s) build_standby(self, s, true);
  return true;
}

bool supersede_node(self_ptr self, const std::string& type, int32_t index,
                    const task_node_actor& node) {
  auto& st = self->state;
  auto kind = role_kind_named(type);
  if (!st.cfg.remote || !node || !kind) return false;
  task_node_actor* slot = nullptr;
  if (*kind == role_kind::worker && index >= 0
      && index < static_cast<int32_t>(st.worker_nodes.size()))
    slot = &st.worker_nodes[index];
  else if (*kind == role_kind::evaluator && index == 0)
    slot = &st.evaluator_node;
  if (!slot || !*slot || *slot == node) return false;
  lose_previous(self, role_id{*kind, index}, *slot);
  return true;
}

void on_joined_while_placing(self_ptr self, role_id role) {
  auto& st = self->state;
  // An evaluator outside the cluster is not waited for: the roles may be starting already.
  if (role.kind == role_kind::evaluator && !st.cfg.remote->evaluator) return;
  // a lost worker's next process, while the roles are being started: begin_training hands it
  // its role
  if (st.roles_placed) return;
  if (all_joined(st)) init_shards(self);
}

void start_late_evaluator(self_ptr self) {
  auto& st = self->state;
  if (st.phase != run_phase::training || st.evaluator || !st.evaluator_node
      || st.cfg.remote->evaluator)  // one in the cluster started with the others
    return;
  log_line("chief", evaluator_role().text() + " joined from outside the cluster; starting it");
  start_evaluator(self, [](bool) {});
}

void on_join_due(self_ptr self) {
  auto& st = self->state;
  if (all_joined(st)) return;  // the shards are being initialised
  std::string missing;
  const auto& remote = *st.cfg.remote;
  auto add = [&](const std::string& name, const host_port& addr) {
    missing += (missing.empty() ? "" : ", ") + name + " at " + addr.text();
  };
  for (std::size_t s = 0; s < st.shards.size(); ++s)
    if (!st.shards[s]) add(ps_role(static_cast<int32_t>(s)).text(), remote.ps[s]);
  for (std::size_t w = 0; w < st.worker_nodes.size(); ++w)
    if (!st.worker_nodes[w]) add(worker_role(static_cast<int32_t>(w)).text(), remote.workers[w]);
  if (remote.evaluator && !st.evaluator_node) add(evaluator_role().text(), *remote.evaluator);
  fail_run(self, "tasks did not join in time",
           make_error(errc::peer_unreachable, "never joined: " + missing));
}

void fail_pending_start(self_ptr self, int32_t w) {
  auto& pending = self->state.pending_starts;
  auto i = pending.find(w);
  if (i == pending.end()) return;
  auto answer = std::move(i->second);
  pending.erase(i);
  if (!*answer) return;  // answered already: the role started (or failed) before
  log_line(log_level::warn, "chief", worker_role(w).text()
                                       + "'s process was lost while its role was starting");
  // Not live; its next process takes over when it joins (or --connect-timeout gives up on it).
  auto& st = self->state;
  st.data_stopped(w);
  st.live[w] = false;
  for (auto& s : st.shards)
    if (s) self->send(s, leave_atom::value, w);
  await_worker_process(self, w, std::chrono::steady_clock::now());
  std::exchange(*answer, nullptr)(false);
}

} // namespace actorps::chief_detail
