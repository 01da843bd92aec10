#include "actors/link/peer_arena.hpp"

#include "actors/protocol/errors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace actorps {

caf::expected<std::shared_ptr<peer_arena>> peer_arena::open(int fd) {
  auto refuse = [](const std::string& why) {
    return make_error(errc::malformed_message, "a peer's arena: " + why);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return refuse(std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return refuse("not a memory file");
  if (st.st_size <= 0 || static_cast<uint64_t>(st.st_size) > max_peer_arena_bytes)
    return refuse("an arena of " + std::to_string(st.st_size) + " bytes");
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) return refuse("its size is not sealed");
  int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return refuse(std::string("dup: ") + std::strerror(errno));
  return std::shared_ptr<peer_arena>(new peer_arena(own, static_cast<std::size_t>(st.st_size)));
}

peer_arena::~peer_arena() {
  for (const auto& [file, window] : windows_)
    ::munmap(const_cast<uint8_t*>(window.first), window.second);
  for (const auto& window : retired_) ::munmap(const_cast<uint8_t*>(window.first), window.second);
  ::close(fd_);
}

const uint8_t* peer_arena::at(uint64_t offset, uint64_t bytes) {
  if (offset > size_ || bytes > size_ - offset) return nullptr;
  std::lock_guard<std::mutex> guard{mutex_};
  // A window that holds the whole range: usually the one that starts nearest before it.
  for (auto it = windows_.upper_bound(offset); it != windows_.begin();) {
    --it;
    const auto& [where, length] = it->second;
    if (offset + bytes <= it->first + length) return where + (offset - it->first);
  }
  // A new one: the granules the range touches.
  const uint64_t from = offset / peer_arena_window_bytes * peer_arena_window_bytes;
  const uint64_t to = std::min<uint64_t>(
    (offset + bytes + peer_arena_window_bytes - 1) / peer_arena_window_bytes
      * peer_arena_window_bytes, size_);
  void* p = ::mmap(nullptr, to - from, PROT_READ, MAP_SHARED | MAP_NORESERVE, fd_,
                   static_cast<off_t>(from));
  if (p == MAP_FAILED) return nullptr;
  auto* where = static_cast<const uint8_t*>(p);
  auto& slot = windows_[from];
  if (slot.first != nullptr) retired_.push_back(slot);  // smaller, and messages may point into it
  slot = {where, std::size_t(to - from)};
  mapped_ += to - from;
  return where + (offset - from);
}

std::size_t peer_arena::mapped_bytes() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return mapped_;
}

} // namespace actorps
