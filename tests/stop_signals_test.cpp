// apps/stop_signals: what a process that is about to end for another reason learns about a
// stop signal that came meanwhile (arrived), whether or not the signal thread has run yet.
#include "apps/stop_signals.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <ctime>
#include <future>
#include <pthread.h>

using actorps::stop_signals;

namespace {

/// Blocks `signal` in this thread for its lifetime; takes one pending `signal` away at the end,
/// so that unblocking it does not run the handler (or the default action) later.
class blocked_here {
public:
  explicit blocked_here(int signal) {
    sigemptyset(&set_);
    sigaddset(&set_, signal);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  ~blocked_here() {
    timespec none{0, 0};
    sigtimedwait(&set_, nullptr, &none);
    pthread_sigmask(SIG_UNBLOCK, &set_, nullptr);
  }
  blocked_here(const blocked_here&) = delete;
  blocked_here& operator=(const blocked_here&) = delete;

private:
  sigset_t set_;
};

} // namespace

TEST_CASE("stop signals: a signal sent but not yet delivered has arrived, though no thread saw it") {
  stop_signals signals;
  blocked_here blocked(SIGTERM);
  CHECK(signals.arrived() == 0);
  REQUIRE(raise(SIGTERM) == 0);  // pending on this thread: the handler cannot run
  CHECK(signals.first() == 0);
  CHECK(signals.arrived() == SIGTERM);
}

TEST_CASE("stop signals: a handled signal has arrived at once, and is the first one handed on") {
  std::promise<int> handed;
  auto first = handed.get_future();
  {
    stop_signals signals;
    CHECK(signals.arrived() == 0);
    REQUIRE(raise(SIGINT) == 0);  // this thread runs the handler before raise returns
    CHECK(signals.arrived() == SIGINT);
    REQUIRE(raise(SIGTERM) == 0);
    CHECK(signals.arrived() == SIGINT);  // the first one stays
    bool said = false;  // the handler runs under the object's lock: one call at a time
    signals.on_signal([&](int signal, int) {
      if (!said) handed.set_value(signal);
      said = true;
    });
    CHECK(first.get() == SIGINT);
  }
  stop_signals again;  // a new one starts from nothing
  CHECK(again.arrived() == 0);
}
