// A training directory followed as it grows (--follow), and the stop file that ends such a run
// (--stop-file). A thread of its own blocks on inotify (Linux) and wakes only when something
// changes in the directory or next to the stop file; it then lists the directory, counts the
// rows each worker reads of every new file (load_split.hpp: count_stream_file) and hands them
// on. The actor that receives them never waits and never polls.
//
// A file is taken once its name is visible: a writer writes under a hidden name (".day-09.tmp",
// which stream_files leaves out) and renames the file into place, so that a visible name is a
// complete file. Only names after the last one taken count (name order is stream order): a file
// whose name sorts earlier came too late, and is left out with a warning.
#pragma once

#include "actors/protocol/wire.hpp"
#include "actors/ps/data_source.hpp"

#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace actorps {

class stream_watch {
public:
  struct callbacks {
    /// New files, in name order, each with the rows each worker reads of it.
    std::function<void(std::vector<stream_file>)> grew;
    /// The stop file exists (`why` names it), or a new file cannot be read (`why` says why).
    /// Called once at most.
    std::function<void(const std::string& why)> stop;
  };

  /// Watches directory `src.train_path` for files after `last` (a name in it) and, when
  /// `stop_file` is not empty, for that file. The callbacks run on the watch's thread; the
  /// directory is listed once at the start (files that came before the watch did). Throws
  /// std::runtime_error when the thread cannot start.
  stream_watch(data_source src, int workers, std::string last, std::string stop_file,
               callbacks on);
  /// Wakes the thread and waits for it (a count under way finishes first).
  ~stream_watch();
  stream_watch(const stream_watch&) = delete;
  stream_watch& operator=(const stream_watch&) = delete;

  /// Whether inotify watches the directory (false: a bounded poll of it, once a second).
  bool notified() const { return inotify_ >= 0; }

private:
  void run();
  void look();

  data_source src_;
  int workers_;
  std::string last_, stop_file_;
  callbacks on_;
  int inotify_ = -1;
  int wake_[2] = {-1, -1};  ///< the destructor writes a byte: the thread ends
  bool stopped_ = false;    ///< stop was called
  bool looked_ = false;     ///< the directory was listed once (the names then are known)
  std::set<std::string> seen_;  ///< names listed so far
  std::thread thread_;
};

} // namespace actorps
