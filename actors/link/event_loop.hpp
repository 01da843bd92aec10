// One thread that waits on many descriptors (epoll, level-triggered) and runs their handlers,
// tasks posted from other threads (an eventfd wakes it) and one deadline (a timerfd). The data
// link server serves every connection of a ps process on one of these instead of two threads
// per connection (4 000 idle connections had cost a ps process 8 018 threads, then its life).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace actorps {

class event_loop {
public:
  using clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC, the timerfd's clock
  /// Called with the epoll events (EPOLLIN, EPOLLOUT, EPOLLHUP, ...) that fired.
  using handler = std::function<void(uint32_t events)>;

  /// Creates the epoll, eventfd and timerfd; throws std::system_error when it cannot.
  event_loop();
  /// Stops the thread (if running) and closes the loop's own descriptors, not watched ones.
  ~event_loop();
  event_loop(const event_loop&) = delete;
  event_loop& operator=(const event_loop&) = delete;

  /// Starts the thread; `on_timer` runs on it when the deadline set by wake_at() passes, and
  /// `after_events` (if given) after each batch of handlers and posted tasks, outside them.
  void start(std::function<void()> on_timer, std::function<void()> after_events = {});
  /// Ends the thread after the handler it is running; call from any other thread.
  void stop();

  // --- on the loop's thread only (handlers, posted tasks, on_timer) ---------------------------
  /// Starts watching `fd` for `events` (EPOLLIN | EPOLLOUT ...).
  void watch(int fd, uint32_t events, handler h);
  /// Changes the events watched for `fd`.
  void change(int fd, uint32_t events);
  /// Stops watching `fd` (before it is closed); an event of it already fetched is not delivered.
  void forget(int fd);
  /// Runs on_timer at `when` (replacing the deadline set before); clock::time_point::max(): never.
  void wake_at(clock::time_point when);

  // --- from any thread -------------------------------------------------------------------------
  /// Runs `task` on the loop's thread, in the order posted; never run once the loop stopped.
  void post(std::function<void()> task);
  /// True on the loop's own thread.
  bool in_loop() const { return std::this_thread::get_id() == thread_.get_id(); }

private:
  void run();
  void run_posted();

  struct watched {
    uint32_t generation;  // tells a closed-and-reused descriptor's stale events apart
    handler on_event;
  };

  int epoll_fd_ = -1;
  int wake_fd_ = -1;   // eventfd: posted tasks, stop
  int timer_fd_ = -1;  // timerfd: the one deadline
  uint32_t next_generation_ = 1;
  std::unordered_map<int, watched> watched_;
  std::function<void()> on_timer_;
  std::function<void()> after_events_;
  std::thread thread_;
  std::mutex mutex_;  // guards posted_ and stopping_
  std::vector<std::function<void()>> posted_;
  bool stopping_ = false;
};

} // namespace actorps
