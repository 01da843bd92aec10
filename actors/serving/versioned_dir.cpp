#include "actors/serving/versioned_dir.hpp"

#include <cerrno>
#include <cstdio>  // renameat2, RENAME_NOREPLACE (glibc ≥ 2.28 with _GNU_SOURCE)
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace actorps {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw versioned_dir_error(path + ": " + what + " (" + std::strerror(err) + ")");
}

/// The version a directory name stands for: a positive decimal without a leading zero (so
/// every version has one spelling); 0 for any other name.
uint64_t version_of(const char* name) {
  const std::size_t n = std::strlen(name);
  if (n == 0 || n > 18 || name[0] == '0') return 0;
  uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return v;
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open to fsync", errno);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, "fsync failed", err);
  }
  ::close(fd);
}

} // namespace

uint64_t latest_version(const std::string& root) {
  DIR* dir = ::opendir(root.c_str());
  if (!dir) {
    if (errno == ENOENT) return 0;
    fail(root, "cannot list the directory", errno);
  }
  uint64_t latest = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const uint64_t v = version_of(entry->d_name);
    struct stat st {};
    if (v > latest && ::fstatat(::dirfd(dir), entry->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode))
      latest = v;
  }
  ::closedir(dir);
  return latest;
}

uint64_t rename_to_free_version(const std::string& from, const std::string& root, uint64_t first) {
  for (uint64_t v = first;; ++v) {
    const std::string target = root + "/" + std::to_string(v);
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0)
      return v;
    if (errno == EEXIST) continue;  // taken meanwhile: the next number
    if (errno != EINVAL) fail(from, "cannot rename to " + target, errno);
    // A filesystem without RENAME_NOREPLACE: claim the number with mkdir (which fails when it
    // is taken), then rename onto that empty directory of ours.
    if (::mkdir(target.c_str(), 0755) != 0) {
      if (errno == EEXIST) continue;
      fail(target, "cannot create", errno);
    }
    if (::rename(from.c_str(), target.c_str()) == 0) return v;
    const int err = errno;
    ::rmdir(target.c_str());
    fail(from, "cannot rename to " + target, err);
  }
}

staged_version::staged_version(std::string root) : root_(std::move(root)) {
  std::error_code ec;
  std::filesystem::create_directories(root_, ec);
  if (ec) throw versioned_dir_error(root_ + ": cannot create the directory (" + ec.message() + ")");
  if (!std::filesystem::is_directory(root_, ec))
    throw versioned_dir_error(root_ + ": exists and is not a directory");
  const std::string base = root_ + "/.tmp-" + std::to_string(latest_version(root_) + 1) + "-"
                           + std::to_string(::getpid());
  for (int attempt = 0;; ++attempt) {  // a second staging in this process gets a suffix
    path_ = attempt == 0 ? base : base + "-" + std::to_string(attempt);
    if (::mkdir(path_.c_str(), 0755) == 0) break;
    if (errno != EEXIST || attempt == 1000)
      fail(path_, "cannot create a temporary directory in " + root_, errno);
  }
}

staged_version::~staged_version() {
  if (published_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);  // best effort: nothing half-written stays behind
}

void staged_version::write_file(const std::string& name, const std::string& bytes) {
  const std::string file = path_ + "/" + name;
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(file, "cannot create", errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail(file, "write failed", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(file, "fsync failed", err);
  }
  if (::close(fd) != 0) fail(file, "close failed", errno);
}

void staged_version::make_dir(const std::string& name) {
  const std::string dir = path_ + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0) fail(dir, "cannot create", errno);
  dirs_.push_back(name);
}

uint64_t staged_version::publish() {
  for (const auto& dir : dirs_) fsync_path(path_ + "/" + dir, O_RDONLY | O_DIRECTORY);
  fsync_path(path_, O_RDONLY | O_DIRECTORY);
  const uint64_t v = rename_to_free_version(path_, root_, latest_version(root_) + 1);
  published_ = true;
  path_ = root_ + "/" + std::to_string(v);
  fsync_path(root_, O_RDONLY | O_DIRECTORY);  // the rename itself reaches the disk
  return v;
}

} // namespace actorps
