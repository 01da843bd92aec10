// Authorisation by role: which task may send which message, checked where the message lands.
//
// With mutual TLS every remote sender is the task its certificate names (peer_roles.hpp); an
// actor of the same process is trusted, and without TLS every sender passes (the run as before;
// a shard still writes checkpoints only under its own root). A refusal is the error
// not_authorised naming the message and the sender's task; it is counted and logged
// (rate-limited), and the state is unchanged.
//
// Every message of an interface reachable from the network (messages.hpp), and its rule:
//
//   interface      message                              who may send it
//   ps_shard       init                                 chief:0
//                  checkpoint (dir, clock)              chief:0 (and under the shard's root)
//                  checkpoint (clock)                   chief:0
//                  restore, rejoin, admit, stats,       chief:0
//                    resize (hand-over), restore resize
//                  leave (worker w)                     chief:0, worker:w
//                  pull (w, clock), pull (Pull of w)    worker:w
//                  push_pull (Push of w)                worker:w
//                  snapshot, snapshot (Pull)            chief:0, evaluator:0, any worker
//                  backup, promote                      chief:0
//                  replicate (push, leave, rejoin,      a standby in another process: ps:p,
//                    admit, image)                      the task its primary runs in, and
//                                                       chief:0; in simulate this process only
//   ps_task        shard, link                          chief:0, evaluator:0, any worker
//                  done (worker w)                      chief:0, worker:w
//                  scale (worker w), scale done         chief:0, worker:w (done: worker:0)
//                  standby (shard, primary task)        chief:0
//   chief          train (report of w), done (w)        worker:w
//                  join (ps index i, shard)             ps:i
//                  join ("worker"|"evaluator", i, node) worker:i | evaluator:i
//                  scale (shards)                       chief:0, admin:0 (actorps scale)
//                  run, join_due, rejoin_due,           this process only
//                  worker_due, stop_due, kill, interrupt,
//                  failover (a fail-over's report)
//   failover       leave (worker w lost)                this process only
//   worker         start                                chief:0
//                  step                                 this process only (its own timer)
//                  train (its reports now)              this process only (its leave notice)
//                  resize (the new shards)              this process only (the chief in one
//                                                       process, else the worker's task node)
//   evaluator      eval                                 chief:0
//   task_node      setup, setup (eval), resize          chief:0
//   any actor      exit (send_exit, even kill)          chief:0 (checked on the connection,
//                                                        basp_origin.hpp: CAF carries out a
//                                                        kill whatever the actor's handler says)
//
// "chief:0" etc. always include this process's own actors and, without TLS, everybody.
#pragma once

#include "actors/protocol/peer_roles.hpp"

#include <caf/error.hpp>
#include <caf/local_actor.hpp>

#include <cstdint>
#include <string>

namespace actorps {

/// The role of the sender of the message `self` is handling.
sender_role current_role(caf::local_actor* self);

/// None when `role` is chief:0 (or unrestricted), else not_authorised for `what`.
caf::error authorise_chief(const sender_role& role, const std::string& what);

/// Worker w acting as itself: worker:w only (pull, push).
caf::error authorise_worker(const sender_role& role, int32_t worker, const std::string& what);

/// chief:0 or admin:0, the certificate of an operator's tool (actorps scale).
caf::error authorise_admin(const sender_role& role, const std::string& what);

/// chief:0, or worker:w acting as itself (leave, done).
caf::error authorise_chief_or_worker(const sender_role& role, int32_t worker,
                                     const std::string& what);

/// A reader of parameters: chief:0, evaluator:0 or any worker (snapshots, a ps task's address).
caf::error authorise_reader(const sender_role& role, const std::string& what);

/// Task `type`:`index` itself (a task joining the chief).
caf::error authorise_task(const sender_role& role, const std::string& type, int32_t index,
                          const std::string& what);

/// chief:0, or ps:primary_task, the task a standby's primary runs in (replication).
caf::error authorise_primary(const sender_role& role, int32_t primary_task, const std::string& what);

/// chief:0 or any ps task (a ps task about to host a standby of this one's shard says hello).
caf::error authorise_ps_task(const sender_role& role, const std::string& what);

/// This process only (timers, fault injection, signals): no remote sender, with TLS or without.
caf::error authorise_local(const sender_role& role, const std::string& what);

/// Counts `err` (when set) in the process's refusals and logs it for `who` at most 5 lines per
/// 10 s; returns it.
caf::error note_refusal(const std::string& who, caf::error err);

/// Messages refused as not authorised in this process so far.
uint64_t unauthorised_refusals();

} // namespace actorps
