#include "actors/data/stream_watch.hpp"

#include "actors/data/file_part.hpp"
#include "actors/data/load_split.hpp"
#include "actors/protocol/log.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <poll.h>
#include <stdexcept>
#include <sys/inotify.h>
#include <unistd.h>

namespace actorps {

namespace fs = std::filesystem;

namespace {

// What changes the directory or the stop file: a file renamed into place or closed after
// writing; for the stop file also one created (touch) or whose attributes changed.
constexpr uint32_t directory_events = IN_MOVED_TO | IN_CLOSE_WRITE;
constexpr uint32_t stop_events = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB;
// Without inotify (a kernel or filesystem without it, or its watches used up) the thread looks
// once a second, its one bounded poll.
constexpr int fallback_poll_ms = 1000;

} // namespace

stream_watch::stream_watch(data_source src, int workers, std::string last, std::string stop_file,
                           callbacks on)
    : src_(std::move(src)), workers_(workers), last_(std::move(last)),
      stop_file_(std::move(stop_file)), on_(std::move(on)) {
  if (::pipe2(wake_, O_CLOEXEC) != 0) throw std::runtime_error("stream_watch: pipe2 failed");
  inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify_ >= 0) {
    bool watched = ::inotify_add_watch(inotify_, src_.train_path.c_str(), directory_events) >= 0;
    if (!stop_file_.empty()) {
      auto parent = fs::path(stop_file_).parent_path();
      if (parent.empty()) parent = ".";
      watched = watched && ::inotify_add_watch(inotify_, parent.c_str(),
                                               stop_events | IN_MASK_ADD) >= 0;
    }
    if (!watched) {
      log_line(log_level::warn, "stream", "inotify cannot watch " + src_.train_path + " ("
                                            + std::strerror(errno) + "): looking once a second");
      ::close(inotify_);
      inotify_ = -1;
    }
  }
  thread_ = std::thread([this] { run(); });
}

stream_watch::~stream_watch() {
  unsigned char byte = 0;
  [[maybe_unused]] auto n = ::write(wake_[1], &byte, 1);
  thread_.join();
  if (inotify_ >= 0) ::close(inotify_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void stream_watch::run() {
  look();  // what came before the watches
  for (;;) {
    pollfd fds[2] = {{wake_[0], POLLIN, 0}, {inotify_, POLLIN, 0}};
    const int n = ::poll(fds, inotify_ >= 0 ? 2 : 1, inotify_ >= 0 ? -1 : fallback_poll_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[0].revents != 0) return;
    if (inotify_ >= 0) {  // the events only say that something changed: look at what
      alignas(inotify_event) char buf[4096];
      while (::read(inotify_, buf, sizeof buf) > 0) {
      }
    }
    look();
  }
}

void stream_watch::look() {
  if (stopped_) return;
  if (!stop_file_.empty()) {
    std::error_code ec;
    if (fs::exists(stop_file_, ec)) {
      stopped_ = true;
      return on_.stop("the stop file " + stop_file_);
    }
  }
  std::vector<stream_file> grown;
  try {
    for (const auto& path : stream_files(src_.train_path)) {
      auto name = fs::path(path).filename().string();
      if (name <= last_) {
        if (seen_.insert(name).second && looked_)
          log_line(log_level::warn, "stream",
                   path + " came after " + last_
                     + ", which sorts after it: left out (files are read in name order)");
        continue;
      }
      seen_.insert(name);
      grown.push_back(count_stream_file(src_, path, workers_));
      last_ = std::move(name);
    }
  } catch (const std::exception& e) {
    if (!grown.empty()) on_.grew(std::move(grown));
    stopped_ = true;
    return on_.stop(std::string("a file of the stream cannot be read: ") + e.what());
  }
  looked_ = true;
  if (!grown.empty()) on_.grew(std::move(grown));
}

} // namespace actorps
