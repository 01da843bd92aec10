#include "apps/stop_signals.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

namespace actorps {

namespace {

int write_fd = -1;  // the pipe's write end, for the handler (async-signal-safe: write only)
struct sigaction previous_term, previous_int;
// The first signal the handler ran for, set at once (a lock-free atomic is async-signal-safe):
// the signal thread may run long after, on a loaded host.
std::atomic<int> handled{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int signal) {
  int saved = errno;
  int none = 0;
  handled.compare_exchange_strong(none, signal);
  unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] auto n = ::write(write_fd, &byte, 1);  // a full pipe drops it: 255 pending
  errno = saved;
}

} // namespace

stop_signals::stop_signals() {
  if (write_fd >= 0) throw std::logic_error("stop_signals: only one may exist at a time");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("stop_signals: pipe2 failed");
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);  // the handler never blocks
  read_fd_ = fds[0];
  write_fd = fds[1];
  handled.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &action, &previous_term);
  ::sigaction(SIGINT, &action, &previous_int);
  thread_ = std::thread([this] {
    unsigned char byte = 0;
    for (;;) {
      auto n = ::read(read_fd_, &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n != 1 || byte == 0) return;  // 0: the destructor's wake-up
      dispatch(byte);
    }
  });
}

stop_signals::~stop_signals() {
  ::sigaction(SIGTERM, &previous_term, nullptr);
  ::sigaction(SIGINT, &previous_int, nullptr);
  unsigned char stop = 0;
  [[maybe_unused]] auto n = ::write(write_fd, &stop, 1);
  thread_.join();
  ::close(write_fd);
  ::close(read_fd_);
  write_fd = -1;
}

void stop_signals::on_signal(handler h) {
  std::lock_guard<std::mutex> guard(mutex_);
  handler_ = std::move(h);
  if (handler_ && count_ > 0) handler_(first_.load(), count_);
}

void stop_signals::dispatch(int signal) {
  std::lock_guard<std::mutex> guard(mutex_);
  ++count_;
  int expected = 0;
  first_.compare_exchange_strong(expected, signal);
  if (handler_) handler_(signal, count_);
}

int stop_signals::arrived() const {
  if (int signal = handled.load()) return signal;
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);  // sent, not yet delivered to a thread (the process's or this one's)
  if (sigismember(&pending, SIGTERM)) return SIGTERM;
  if (sigismember(&pending, SIGINT)) return SIGINT;
  return 0;
}

const char* stop_signals::name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "a stop signal";
  }
}

} // namespace actorps
