#include "apps/export/file_bytes.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace actorps {

std::string read_file_bytes(const std::string& path) {
  auto fail = [&](const std::string& why) { return file_read_error(path + ": " + why); };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw fail(std::string("missing or unreadable (") + std::strerror(errno) + ")");
  std::string bytes;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw fail(std::string("cannot stat (") + std::strerror(err) + ")");
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw fail("is a directory, not a file");
  }
  bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      throw fail(err ? std::string("read error (") + std::strerror(err) + ")"
                     : "shrank while being read");
    }
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return bytes;
}

} // namespace actorps
