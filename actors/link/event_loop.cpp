#include "actors/link/event_loop.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace actorps {

namespace {

// The loop's own descriptors are told apart by their generation 0 and these fds.
constexpr uint64_t tag(uint32_t generation, int fd) {
  return (uint64_t{generation} << 32) | static_cast<uint32_t>(fd);
}

void check(int rc, const char* what) {
  if (rc < 0) throw std::system_error(errno, std::generic_category(), what);
}

} // namespace

event_loop::event_loop() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  check(epoll_fd_, "epoll_create1");
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (wake_fd_ < 0 || timer_fd_ < 0) {
    int err = errno;
    if (wake_fd_ >= 0) ::close(wake_fd_);
    ::close(epoll_fd_);
    throw std::system_error(err, std::generic_category(), "eventfd/timerfd");
  }
  for (int fd : {wake_fd_, timer_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag(0, fd);
    check(::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev), "epoll_ctl");
  }
}

event_loop::~event_loop() {
  stop();
  ::close(timer_fd_);
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void event_loop::start(std::function<void()> on_timer, std::function<void()> after_events) {
  on_timer_ = std::move(on_timer);
  after_events_ = std::move(after_events);
  thread_ = std::thread([this] { run(); });
}

void event_loop::stop() {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopping_ = true;
  }
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

void event_loop::watch(int fd, uint32_t events, handler h) {
  auto generation = next_generation_++;
  if (next_generation_ == 0) next_generation_ = 1;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag(generation, fd);
  check(::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev), "epoll_ctl add");
  watched_[fd] = watched{generation, std::move(h)};
}

void event_loop::change(int fd, uint32_t events) {
  auto it = watched_.find(fd);
  if (it == watched_.end()) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag(it->second.generation, fd);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
}

void event_loop::forget(int fd) {
  if (watched_.erase(fd) > 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void event_loop::wake_at(clock::time_point when) {
  itimerspec spec{};
  if (when != clock::time_point::max()) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
    if (ns <= 0) ns = 1;  // 0 would disarm it: a deadline already passed fires at once
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
  }
  ::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

void event_loop::post(std::function<void()> task) {
  bool was_empty;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (stopping_) return;
    was_empty = posted_.empty();
    posted_.push_back(std::move(task));
  }
  if (was_empty) {  // one wake-up per batch: the loop takes the whole queue at once
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  }
}

void event_loop::run_posted() {
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    tasks.swap(posted_);
  }
  for (auto& task : tasks) task();
}

void event_loop::run() {
  constexpr int batch = 256;
  epoll_event events[batch];
  for (;;) {
    int n = ::epoll_wait(epoll_fd_, events, batch, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the epoll descriptor is broken: nothing more can be served
    }
    for (int i = 0; i < n; ++i) {
      auto generation = static_cast<uint32_t>(events[i].data.u64 >> 32);
      auto fd = static_cast<int>(static_cast<uint32_t>(events[i].data.u64));
      if (generation == 0 && fd == wake_fd_) {
        uint64_t count;
        [[maybe_unused]] auto r = ::read(wake_fd_, &count, sizeof count);
        {
          std::lock_guard<std::mutex> guard{mutex_};
          if (stopping_) return;
        }
        run_posted();
      } else if (generation == 0 && fd == timer_fd_) {
        uint64_t expirations;
        [[maybe_unused]] auto r = ::read(timer_fd_, &expirations, sizeof expirations);
        if (on_timer_) on_timer_();
      } else {
        auto it = watched_.find(fd);
        if (it == watched_.end() || it->second.generation != generation) continue;
        auto h = it->second.on_event;  // a copy: the handler may forget its own descriptor
        h(events[i].events);
      }
    }
    if (after_events_) after_events_();
  }
}

} // namespace actorps
