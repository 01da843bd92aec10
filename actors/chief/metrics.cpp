#include "actors/chief/metrics.hpp"

#include <stdexcept>
#include <unistd.h>

namespace actorps {

std::string render_json(const nlohmann::ordered_json& value) {
  // nlohmann writes NaN and infinities as null; invalid UTF-8 (a path, a peer's error text)
  // must not throw inside an actor.
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

metrics_file::metrics_file(const std::string& path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw std::runtime_error("cannot open metrics file " + path + " for writing");
}

metrics_file::~metrics_file() {
  if (file_) std::fclose(file_);
}

void metrics_file::write(const nlohmann::ordered_json& event) {
  if (!file_) return;
  auto line = render_json(event) + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  if (std::chrono::steady_clock::now() - last_flush_ > std::chrono::milliseconds(500)) flush();
}

void metrics_file::flush() {
  if (!file_) return;
  std::fflush(file_);
  last_flush_ = std::chrono::steady_clock::now();
}

progress_line::progress_line(bool enabled)
  : enabled_(enabled), tty_(isatty(STDOUT_FILENO) == 1) {}

bool progress_line::due(bool important) const {
  if (!enabled_) return false;
  if (important) return true;
  if (!tty_) return false;  // plain output: only the important lines
  return std::chrono::steady_clock::now() - last_draw_ >= std::chrono::milliseconds(100);
}

void progress_line::show(const std::string& text, bool important) {
  if (!due(important)) return;
  if (!tty_) {
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
    return;
  }
  last_draw_ = std::chrono::steady_clock::now();
  std::printf("\r\033[K%s", text.c_str());
  std::fflush(stdout);
  dirty_ = true;
}

void progress_line::finish() {
  if (enabled_ && tty_ && dirty_) std::printf("\n");
  dirty_ = false;
  std::fflush(stdout);
}

} // namespace actorps
