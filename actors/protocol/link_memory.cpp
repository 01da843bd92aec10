#include "actors/protocol/link_memory.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace actorps {

namespace {

constexpr std::size_t page = 4096;
/// The first stretch of the arena mapped (or the whole arena, when smaller); each later one
/// maps as much again as is mapped, so the address space held stays within twice the peak use.
constexpr std::size_t first_extent_bytes = std::size_t(64) << 20;
/// Stretches of the arena mapped at most (the doubling reaches 16 GiB in 9; past this, heap).
constexpr int max_extents = 64;

std::size_t whole_pages(std::size_t n) { return (n + page - 1) / page * page; }

/// One stretch of the arena's file mapped into this process: [file, file + bytes) at `base`.
/// Published once (base last), then only `bytes` grows, when the next stretch lands right after
/// it; link_memory_offset reads them without the lock.
struct extent {
  std::atomic<uint8_t*> base{nullptr};
  std::atomic<std::size_t> bytes{0};
  std::size_t file = 0;
};

/// The process's arena: a memfd of its full (virtual) size, mapped a stretch at a time as
/// buffers need it, and the free ranges of the mapped stretches (file offset → length), first
/// fit. A range never spans two stretches (they need not be adjacent in this process).
struct arena {
  std::mutex mutex;
  int fd = -1;
  std::size_t bytes = 0;   // the file's size: what a peer may map
  std::size_t mapped = 0;  // of it, mapped here (the file's first `mapped` bytes)
  extent extents[max_extents];
  std::atomic<int> count{0};  // extents published
  std::size_t in_use = 0;
  std::map<std::size_t, std::size_t> free;

  /// The extent holding file offset `at` (one that is mapped).
  const extent& extent_of(std::size_t at) const {
    int i = count.load(std::memory_order_relaxed) - 1;
    while (i > 0 && extents[i].file > at) --i;
    return extents[i];
  }

  uint8_t* address_of(std::size_t at) const {
    const auto& e = extent_of(at);
    return e.base.load(std::memory_order_relaxed) + (at - e.file);
  }

  /// The file offset of p when a mapped extent holds it, else -1.
  int64_t file_offset(const void* p) const {
    auto* b = static_cast<const uint8_t*>(p);
    for (int i = 0, n = count.load(std::memory_order_acquire); i < n; ++i) {
      auto* base = extents[i].base.load(std::memory_order_acquire);
      if (b >= base && b < base + extents[i].bytes.load(std::memory_order_acquire))
        return static_cast<int64_t>(extents[i].file + std::size_t(b - base));
    }
    return -1;
  }

  void* take(std::size_t n) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      for (auto it = free.begin(); it != free.end(); ++it) {
        if (it->second < n) continue;
        auto at = it->first;
        auto left = it->second - n;
        free.erase(it);
        if (left > 0) free.emplace(at + n, left);
        in_use += n;
        return address_of(at);
      }
      if (!grow(n)) return nullptr;
    }
    return nullptr;
  }

  /// Maps the next stretch of the file, large enough for a buffer of n bytes: right after the
  /// last one where the address space there is free (it then extends that extent), else
  /// wherever the kernel puts it. False when the arena (or the table of extents) is full.
  bool grow(std::size_t n) {
    const std::size_t left = bytes - mapped;
    std::size_t want = std::max({n, std::min(first_extent_bytes, bytes), mapped});
    want = std::min(whole_pages(want), left);
    if (want < n || want == 0) return false;
    int i = count.load(std::memory_order_relaxed);
    uint8_t* after = nullptr;
    if (i > 0) after = extents[i - 1].base.load() + extents[i - 1].bytes.load();
    void* p = MAP_FAILED;
    if (after != nullptr)  // EEXIST when something lies there (an old kernel takes it as a hint)
      p = ::mmap(after, want, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE
                   | MAP_FIXED_NOREPLACE, fd, static_cast<off_t>(mapped));
    if (p != MAP_FAILED && p != after) {
      ::munmap(p, want);
      p = MAP_FAILED;
    }
    const bool adjacent = p != MAP_FAILED;
    if (!adjacent) {
      if (i == max_extents) return false;
      p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
                 static_cast<off_t>(mapped));
      if (p == MAP_FAILED) return false;
    }
    // A child forked without exec must not share the buffers (both would write the same
    // pages): it inherits no stretch of the arena, pages or bookkeeping.
    ::madvise(p, want, MADV_DONTFORK);
    if (adjacent) {
      auto& last = extents[i - 1];
      last.bytes.store(last.bytes.load() + want, std::memory_order_release);
    } else {
      auto& e = extents[i];
      e.file = mapped;
      e.bytes.store(want, std::memory_order_relaxed);
      e.base.store(static_cast<uint8_t*>(p), std::memory_order_release);
      count.store(i + 1, std::memory_order_release);
    }
    give_back(mapped, want, /*was_in_use=*/false);
    mapped += want;
    return true;
  }

  void give_back(std::size_t at, std::size_t n, bool was_in_use = true) {
    if (was_in_use) in_use -= n;
    const auto* home = &extent_of(at);
    auto next = free.lower_bound(at);
    if (next != free.end() && at + n == next->first && &extent_of(next->first) == home) {
      n += next->second;  // joins the range after it
      next = free.erase(next);
    }
    if (next != free.begin()) {  // and the one before it
      auto prev = std::prev(next);
      if (prev->first + prev->second == at && &extent_of(prev->first) == home) {
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

/// The stretches a forked child inherited the bookkeeping of but not the pages (MADV_DONTFORK,
/// above): its buffers, freed in the child, are the parent's to free, not the heap's.
struct inherited_ranges {
  std::vector<std::pair<const uint8_t*, std::size_t>> ranges;
  bool holds(const void* p) const {
    auto* b = static_cast<const uint8_t*>(p);
    for (const auto& [base, bytes] : ranges)
      if (b >= base && b < base + bytes) return true;
    return false;
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
  // The ranges stay reserved (no access, no memory): an arena the child makes cannot land on
  // them, so a pointer into them is always the parent's.
  for (int i = 0, n = a.count.load(); i < n; ++i) {
    auto* base = a.extents[i].base.load();
    auto bytes = a.extents[i].bytes.load();
    ::mmap(base, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    inherited.ranges.emplace_back(base, bytes);
    a.extents[i].base.store(nullptr);
    a.extents[i].bytes.store(0);
  }
  a.count.store(0, std::memory_order_release);
  a.fd = -1;
  a.bytes = 0;
  a.mapped = 0;
  a.in_use = 0;
  a.free.clear();
  a.mutex.unlock();
}

} // namespace

std::string enable_link_memory(std::size_t bytes) {
  auto& a = the_arena();
  std::lock_guard<std::mutex> guard{a.mutex};
  if (a.fd >= 0) return {};
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
  static const int registered = ::pthread_atfork(lock_for_fork, unlock_after_fork,
                                                 forget_arena_in_child);
  (void)registered;
  a.fd = fd;
  a.bytes = bytes;
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

std::size_t link_memory_mapped() {
  auto& a = the_arena();
  std::lock_guard<std::mutex> guard{a.mutex};
  return a.mapped;
}

std::size_t link_memory_in_use() {
  auto& a = the_arena();
  std::lock_guard<std::mutex> guard{a.mutex};
  return a.in_use;
}

int64_t link_memory_offset(const void* p, std::size_t n) {
  auto& a = the_arena();
  auto at = a.file_offset(p);
  if (at < 0) return -1;
  // Wholly inside the extent that holds p (an extent only grows at its end).
  auto* b = static_cast<const uint8_t*>(p);
  const auto& e = a.extent_of(static_cast<std::size_t>(at));
  auto* end = e.base.load(std::memory_order_acquire) + e.bytes.load(std::memory_order_acquire);
  return n <= static_cast<std::size_t>(end - b) ? at : -1;
}

void* link_memory_allocate(std::size_t bytes) {
  if (bytes >= link_memory_min_bytes) {
    auto& a = the_arena();
    std::lock_guard<std::mutex> guard{a.mutex};
    if (a.fd >= 0)
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
    if (auto at = a.file_offset(p); at >= 0) {
      a.give_back(static_cast<std::size_t>(at), whole_pages(bytes));
      return;
    }
  }
  std::free(p);
}

} // namespace actorps
