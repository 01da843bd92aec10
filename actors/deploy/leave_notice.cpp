#include "actors/deploy/leave_notice.hpp"

#include <caf/scoped_actor.hpp>

#include <mutex>
#include <optional>

namespace actorps {
namespace {

struct armed_notice {
  caf::actor_system* sys = nullptr;
  chief_actor chief;
  task_id task;
  worker_actor worker;  // the worker role this task runs now, if any
};

std::mutex notice_mutex;
std::optional<armed_notice> notice;  // guarded by notice_mutex

} // namespace

void arm_leave_notice(caf::actor_system& sys, chief_actor chief, task_id task) {
  std::lock_guard<std::mutex> guard(notice_mutex);
  notice = armed_notice{&sys, std::move(chief), std::move(task), worker_actor{}};
}

void arm_leave_reports(worker_actor worker) {
  std::lock_guard<std::mutex> guard(notice_mutex);
  if (notice) notice->worker = std::move(worker);
}

bool tell_chief_leaving(const std::string& why, std::chrono::milliseconds within) {
  std::optional<armed_notice> armed;
  {
    std::lock_guard<std::mutex> guard(notice_mutex);
    armed = notice;
  }
  if (!armed || !armed->chief) return false;
  caf::scoped_actor self{*armed->sys};
  // The reports first: both travel to the chief's node over the one connection, in order.
  if (armed->worker)
    self->request(armed->worker, within / 2, train_atom::value)
      .receive([](caf::ok_atom) {}, [](const caf::error&) {});
  bool answered = false;
  self->request(armed->chief, within, leave_atom::value, armed->task.type,
                static_cast<int32_t>(armed->task.index), why)
    .receive([&](caf::ok_atom) { answered = true; }, [](const caf::error&) {});
  return answered;
}

} // namespace actorps
