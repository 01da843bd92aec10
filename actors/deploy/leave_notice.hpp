// A task that exits on its own (SIGTERM from Kubernetes, say) tells the chief first, so that the
// chief logs its loss as a leave rather than as a connection that broke. The task's main thread
// arms the notice once it has joined; the signal thread sends it.
#pragma once

#include "actors/deploy/cluster_spec.hpp"
#include "actors/protocol/messages.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <string>

namespace actorps {

/// From now on tell_chief_leaving speaks for `task` to `chief`, through `sys` (which must live
/// until the process ends, as a task's does: apps/cluster_commands.cpp).
void arm_leave_notice(caf::actor_system& sys, chief_actor chief, task_id task);

/// From now on tell_chief_leaving first has `worker` (the role this task runs now) send the chief
/// the train reports it holds back, so that the chief counts every minibatch it pushed.
void arm_leave_reports(worker_actor worker);

/// Tells the chief this task is about to exit (`why`: "SIGTERM") and waits for its ok at most
/// `within` (its worker's reports first, at most half of it). False when the task has not
/// joined a chief yet or no ok came. Any thread.
bool tell_chief_leaving(const std::string& why, std::chrono::milliseconds within);

} // namespace actorps
