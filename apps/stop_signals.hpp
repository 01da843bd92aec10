// SIGTERM and SIGINT, turned into calls on a thread of our own (the self-pipe trick): the
// signal handler only writes the signal's number into a pipe; a dedicated thread blocks reading
// it and calls the handler, which may do anything (log, send a message to the chief actor).
// Nothing polls. The handlers are process-wide, so at most one stop_signals exists at a time.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace actorps {

class stop_signals {
public:
  /// Called on the signal thread with the signal and how many stop signals came so far (1 for
  /// the first).
  using handler = std::function<void(int signal, int count)>;

  /// Installs the handlers for SIGTERM and SIGINT; until on_signal sets a handler, a signal
  /// is only counted (and handed to the handler when one is set).
  stop_signals();
  /// Restores the previous dispositions and ends the thread.
  ~stop_signals();
  stop_signals(const stop_signals&) = delete;
  stop_signals& operator=(const stop_signals&) = delete;

  /// Sets (or, with an empty function, clears) what a signal does. Signals that came before a
  /// handler was set are handed to it at once, the first one only.
  void on_signal(handler h);

  /// The first stop signal handed on by the signal thread (0: none yet).
  int first() const { return first_.load(); }

  /// The first stop signal sent to this process so far: one the handler has run for, even if
  /// the signal thread has not handed it on yet, or one still pending (0: none). For a thread
  /// that is about to end the process for another reason: a process told to stop while it was
  /// leaving should say so in its exit status, whichever thread got there first.
  int arrived() const;

  /// "SIGTERM", "SIGINT", or "signal N".
  static const char* name(int signal);

private:
  void dispatch(int signal);

  int read_fd_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  handler handler_;
  int count_ = 0;
  std::atomic<int> first_{0};
};

} // namespace actorps
