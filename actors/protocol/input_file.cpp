#include "actors/protocol/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace actorps {

std::string file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

namespace {

input_file refused(const std::string& path, std::string reason) {
  input_file out;
  out.why = path + ": " + reason;
  out.reason = std::move(reason);
  return out;
}

} // namespace

input_file open_input_file(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer; a regular file ignores it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return refused(path, std::string("missing or unreadable (") + std::strerror(errno) + ")");
  struct stat st {};
  std::string reason;
  if (::fstat(fd, &st) != 0)
    reason = std::string("cannot stat (") + std::strerror(errno) + ")";
  else if (!S_ISREG(st.st_mode))
    reason = file_kind(st.st_mode) + ", not a regular file";
  else if (static_cast<uint64_t>(st.st_size) > max_bytes)
    reason = std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes)
             + " such a file may have";
  if (!reason.empty()) {
    ::close(fd);
    return refused(path, std::move(reason));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  input_file out;
  out.fd = fd;
  out.size = static_cast<uint64_t>(st.st_size);
  return out;
}

std::string read_input_file(const std::string& path, uint64_t max_bytes, std::string& out) {
  auto file = open_input_file(path, max_bytes);
  if (!file) return file.why;
  out.assign(static_cast<std::size_t>(file.size), '\0');
  std::size_t got = 0;
  std::string why;
  for (;;) {
    if (got == out.size()) {  // read on, by a byte, to see the end (or a file that grew)
      if (out.size() >= max_bytes) {
        char extra;
        const ssize_t n = ::read(file.fd, &extra, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) why = path + ": grew past the " + std::to_string(max_bytes)
                         + " bytes such a file may have while being read";
        else if (n < 0) why = path + ": read error (" + std::strerror(errno) + ")";
        break;
      }
      out.resize(std::min<uint64_t>(max_bytes, out.size() + 4096));
    }
    const ssize_t n = ::read(file.fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = path + ": read error (" + std::strerror(errno) + ")";
      break;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(file.fd);
  out.resize(got);
  return why;
}

} // namespace actorps
