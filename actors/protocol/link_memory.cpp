#include "actors/protocol/link_memory.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace actorps {

namespace {

constexpr std::size_t page = 4096;

std::size_t whole_pages(std::size_t n) { return (n + page - 1) / page * page; }

/// The process's arena: its mapping and the free ranges in it (offset → length), first fit.
struct arena {
  std::mutex mutex;
  int fd = -1;
  uint8_t* base = nullptr;
  std::size_t bytes = 0;
  // base, published after base and bytes are set: link_memory_offset reads it without the lock
  // (every send asks it), and may run while another thread enables the arena.
  std::atomic<uint8_t*> published{nullptr};
  std::size_t in_use = 0;
  std::map<std::size_t, std::size_t> free;

  bool owns(const void* p) const {
    auto* b = static_cast<const uint8_t*>(p);
    return base != nullptr && b >= base && b < base + bytes;
  }

  void* take(std::size_t n) {
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < n) continue;
      auto at = it->first;
      auto left = it->second - n;
      free.erase(it);
      if (left > 0) free.emplace(at + n, left);
      in_use += n;
      return base + at;
    }
    return nullptr;
  }

  void give_back(std::size_t at, std::size_t n) {
    in_use -= n;
    auto next = free.lower_bound(at);
    if (next != free.end() && at + n == next->first) {  // joins the range after it
      n += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {  // and the one before it
      auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        prev->second += n;
        return;
      }
    }
    free.emplace(at, n);
  }
};

arena& the_arena() {
  static arena a;  // never destroyed before the buffers in it: lives as long as the process
  return a;
}

/// The arena a forked child inherited the bookkeeping of but not the pages (MADV_DONTFORK,
/// below): its buffers, freed in the child, are the parent's to free, not the heap's.
struct inherited_range {
  const uint8_t* base = nullptr;
  std::size_t bytes = 0;
  bool holds(const void* p) const {
    auto* b = static_cast<const uint8_t*>(p);
    return base != nullptr && b >= base && b < base + bytes;
  }
} inherited;

/// A child forked without exec starts with no arena, as a fresh process does, and may enable
/// its own; before, its first large buffer came from the arena's range, which is not mapped in
/// the child (SIGSEGV). The lock is held across the fork, so the child's copy is consistent.
void lock_for_fork() { the_arena().mutex.lock(); }
void unlock_after_fork() { the_arena().mutex.unlock(); }
void forget_arena_in_child() {
  auto& a = the_arena();
  if (a.fd >= 0) ::close(a.fd);
  // The range stays reserved (no access, no memory): an arena the child makes cannot land on
  // it, so a pointer into it is always the parent's.
  if (a.base != nullptr)
    ::mmap(a.base, a.bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
           -1, 0);
  inherited = {a.base, a.bytes};
  a.fd = -1;
  a.base = nullptr;
  a.bytes = 0;
  a.in_use = 0;
  a.free.clear();
  a.published.store(nullptr, std::memory_order_release);
  a.mutex.unlock();
}

} // namespace

std::string enable_link_memory(std::size_t bytes) {
  auto& a = the_arena();
  std::lock_guard<std::mutex> guard{a.mutex};
  if (a.base) return {};
  bytes = whole_pages(bytes);
  int fd = ::memfd_create("actorps-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return std::string("memfd_create: ") + std::strerror(errno);
  // Sealed so that no peer can shrink it under this process's mapping (its reads would SIGBUS).
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0
      || ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    std::string why = std::string("sizing the arena: ") + std::strerror(errno);
    ::close(fd);
    return why;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    std::string why = std::string("mapping the arena: ") + std::strerror(errno);
    ::close(fd);
    return why;
  }
  // A child forked without exec must not share the buffers (both would write the same pages):
  // it does not inherit the arena at all, pages or bookkeeping.
  ::madvise(p, bytes, MADV_DONTFORK);
  static const int registered = ::pthread_atfork(lock_for_fork, unlock_after_fork,
                                                 forget_arena_in_child);
  (void)registered;
  a.fd = fd;
  a.base = static_cast<uint8_t*>(p);
  a.bytes = bytes;
  a.free.emplace(0, bytes);
  a.published.store(a.base, std::memory_order_release);
  return {};
}

int link_memory_fd() {
  auto& a = the_arena();
  std::lock_guard<std::mutex> guard{a.mutex};
  return a.fd;
}

std::size_t link_memory_bytes() {
  auto& a = the_arena();
  std::lock_guard<std::mutex> guard{a.mutex};
  return a.bytes;
}

std::size_t link_memory_in_use() {
  auto& a = the_arena();
  std::lock_guard<std::mutex> guard{a.mutex};
  return a.in_use;
}

int64_t link_memory_offset(const void* p, std::size_t n) {
  auto& a = the_arena();
  const uint8_t* base = a.published.load(std::memory_order_acquire);  // bytes is set before it
  auto* b = static_cast<const uint8_t*>(p);
  if (base == nullptr || b < base || b >= base + a.bytes
      || n > a.bytes - static_cast<std::size_t>(b - base))
    return -1;
  return b - base;
}

void* link_memory_allocate(std::size_t bytes) {
  if (bytes >= link_memory_min_bytes) {
    auto& a = the_arena();
    std::lock_guard<std::mutex> guard{a.mutex};
    if (a.base)
      if (void* p = a.take(whole_pages(bytes))) return p;
  }
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc{};
}

void link_memory_free(void* p, std::size_t bytes) {
  if (!p) return;
  auto& a = the_arena();
  {
    std::lock_guard<std::mutex> guard{a.mutex};
    if (inherited.holds(p)) return;  // the parent's, in a forked child
    if (a.owns(p)) {
      a.give_back(static_cast<std::size_t>(static_cast<uint8_t*>(p) - a.base), whole_pages(bytes));
      return;
    }
  }
  std::free(p);
}

} // namespace actorps
