#include "actors/chief/metrics.hpp"

#include <cerrno>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

namespace actorps {

metrics_file::metrics_file(const std::string& path, bool append) {
  if (path.empty()) return;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (append ? 0 : O_TRUNC),
               0644);
  if (fd_ < 0)
    throw std::runtime_error("cannot open metrics file " + path + " for writing");
}

metrics_file::~metrics_file() {
  if (fd_ >= 0) ::close(fd_);
}

void metrics_file::write(const nlohmann::ordered_json& event) {
  for (const auto& o : observers_) o->on_event(event);
  if (fd_ < 0) return;
  auto line = render_json(event) + "\n";
  // One write(2) per line: a kill between two events leaves whole lines only. A short write
  // (a full disk) would tear the line, so the rest follows at once rather than later.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    auto n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the disk refuses: the run goes on without its metrics
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void metrics_file::flush() {
  for (const auto& o : observers_) o->flush();
}

void metrics_file::add_observer(std::shared_ptr<metrics_observer> observer) {
  observers_.push_back(std::move(observer));
}

progress_line::progress_line(bool enabled, console& out) : enabled_(enabled), out_(out) {}

bool progress_line::due(bool important) const {
  if (!enabled_) return false;
  if (important) return true;
  if (!out_.in_place()) return false;  // plain output: only the important lines
  return std::chrono::steady_clock::now() - last_draw_ >= std::chrono::milliseconds(100);
}

void progress_line::show(const std::string& text, bool important) {
  if (!due(important)) return;
  last_draw_ = std::chrono::steady_clock::now();
  out_.progress(text);
}

void progress_line::finish() {
  if (enabled_) out_.end_progress();
}

} // namespace actorps
