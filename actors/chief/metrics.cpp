#include "actors/chief/metrics.hpp"

#include <cmath>
#include <stdexcept>
#include <unistd.h>

namespace actorps {

std::string json_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 2);
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

void json_object::key(const char* k) {
  body_ += body_.empty() ? "{\"" : ",\"";
  body_ += k;
  body_ += "\":";
}

json_object& json_object::add(const char* k, const std::string& value) {
  key(k);
  body_ += "\"" + json_escape(value) + "\"";
  return *this;
}

json_object& json_object::add(const char* k, double value) {
  key(k);
  if (!std::isfinite(value)) {
    body_ += "null";
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", value);
    body_ += buf;
  }
  return *this;
}

json_object& json_object::add(const char* k, int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

json_object& json_object::add(const char* k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

json_object& json_object::add_raw(const char* k, const std::string& json) {
  key(k);
  body_ += json;
  return *this;
}

metrics_file::metrics_file(const std::string& path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw std::runtime_error("cannot open metrics file " + path + " for writing");
}

metrics_file::~metrics_file() {
  if (file_) std::fclose(file_);
}

void metrics_file::write(const json_object& event) {
  if (!file_) return;
  auto line = event.str() + "\n";
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
