#include "actors/chief/tensorboard_file.hpp"

#include "actors/chief/tfrecord.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace actorps {

namespace {

double wall_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

constexpr std::size_t flush_at = std::size_t{1} << 20;
constexpr auto flush_after = std::chrono::seconds(5);

} // namespace

tensorboard_file::tensorboard_file(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create directory " + dir + ": " + ec.message());
  const double now = wall_time_now();
  const auto base = (std::filesystem::path(dir) / "events.out.tfevents.").string()
                    + std::to_string(static_cast<int64_t>(now)) + "." + host_name();
  for (int n = 0; fd_ < 0; ++n) {
    path_ = n == 0 ? base : base + "." + std::to_string(n);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || n >= 1000))
      throw std::runtime_error("cannot create " + path_ + ": " + std::strerror(errno));
  }
  append_tfrecord(pending_, encode_file_version_event(now));
  flush();  // the file is a valid, empty event file from the start
}

tensorboard_file::~tensorboard_file() {
  if (fd_ < 0) return;
  flush();
  ::close(fd_);
}

void tensorboard_file::add(int64_t step, const std::vector<tf_scalar>& values) {
  if (fd_ < 0 || values.empty()) return;
  append_tfrecord(pending_, encode_scalars_event(wall_time_now(), step, values));
  if (pending_.size() >= flush_at || std::chrono::steady_clock::now() - written_ >= flush_after)
    flush();
}

void tensorboard_file::flush() {
  written_ = std::chrono::steady_clock::now();
  const char* p = pending_.data();
  std::size_t left = pending_.size();
  while (left > 0) {
    auto n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the disk refuses: these events are lost, the run goes on
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  pending_.clear();
}

} // namespace actorps
