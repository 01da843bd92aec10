// The arena of buffers a shared-memory link sends by reference (actors/protocol/link_memory.hpp):
// which buffers lie in it, what happens when it is full, and that freed ranges are taken again.
// Each test case runs in a process of its own, so the arena made here is the process's only one.
#include "actors/protocol/link_memory.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

using namespace actorps;

TEST_CASE("link memory: buffers of 64 KiB and more lie in the arena, smaller ones and those it has no room for on the heap, and freed ranges join and are taken again") {
  float_buffer before(1 << 16);  // before the arena: on the heap
  CHECK(link_memory_offset(before.data(), before.size() * 4) == -1);
  REQUIRE(enable_link_memory(std::size_t(1) << 20).empty());
  REQUIRE(enable_link_memory(std::size_t(1) << 30).empty());  // the first arena stays
  CHECK(link_memory_bytes() == (std::size_t(1) << 20));
  // A sealed memfd of that size, which a peer can map but not shrink.
  struct stat st {};
  REQUIRE(::fstat(link_memory_fd(), &st) == 0);
  CHECK(st.st_size == (1 << 20));
  CHECK((::fcntl(link_memory_fd(), F_GET_SEALS) & F_SEAL_SHRINK) != 0);

  float_buffer small(1000);
  CHECK(link_memory_offset(small.data(), small.size() * 4) == -1);
  const std::size_t quarter = (256 * 1024) / 4;  // floats in 256 KiB
  float_buffer a(quarter), b(quarter), c(quarter);
  CHECK(link_memory_offset(a.data(), quarter * 4) == 0);  // first fit, page-aligned
  CHECK(link_memory_offset(b.data(), quarter * 4) == 256 * 1024);
  CHECK(link_memory_offset(c.data(), quarter * 4) == 512 * 1024);
  CHECK(link_memory_in_use() == 768 * 1024);
  // A range that runs past the arena's end is not in it, even if it starts inside.
  CHECK(link_memory_offset(c.data(), 600 * 1024) == -1);
  {
    float_buffer too_big(2 * quarter);  // 512 KiB with 256 KiB left: the heap
    CHECK(link_memory_offset(too_big.data(), 2 * quarter * 4) == -1);
    too_big[0] = 1.0f;  // usable all the same
  }
  // a and b freed: one range of 512 KiB at 0, which a buffer of that size then takes.
  a = float_buffer{};
  b = float_buffer{};
  CHECK(link_memory_in_use() == 256 * 1024);
  float_buffer joined(2 * quarter);
  CHECK(link_memory_offset(joined.data(), 2 * quarter * 4) == 0);
  // Moving a buffer keeps its memory where messages point (buffer_lease.hpp relies on it).
  const float* where = joined.data();
  float_buffer moved = std::move(joined);
  CHECK(moved.data() == where);
}

TEST_CASE("link memory: a child forked without exec starts with no arena of its own, may make one, and leaves the parent's buffers alone") {
  REQUIRE(enable_link_memory(std::size_t(1) << 20).empty());
  const std::size_t quarter = (256 * 1024) / 4;
  float_buffer parents(quarter, 7.0f);
  REQUIRE(link_memory_offset(parents.data(), quarter * 4) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // no doctest here: exit codes say what failed
    if (link_memory_fd() != -1 || link_memory_bytes() != 0) ::_exit(10);
    {
      float_buffer heap(quarter, 1.0f);  // before: from the arena's range, not mapped here
      if (link_memory_offset(heap.data(), quarter * 4) != -1 || heap[quarter - 1] != 1.0f)
        ::_exit(11);
    }
    if (!enable_link_memory(std::size_t(1) << 20).empty()) ::_exit(12);
    float_buffer own(quarter, 2.0f);
    if (link_memory_offset(own.data(), quarter * 4) != 0 || own[0] != 2.0f) ::_exit(13);
    parents = float_buffer{};  // the parent's range: neither the heap's nor this arena's
    if (link_memory_in_use() != 256 * 1024) ::_exit(14);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_MESSAGE(WIFEXITED(status), "the child ended by signal " << WTERMSIG(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The parent's arena and buffer are as they were.
  CHECK(link_memory_bytes() == (std::size_t(1) << 20));
  CHECK(link_memory_in_use() == 256 * 1024);
  CHECK(parents[quarter - 1] == 7.0f);
}

namespace {

/// Bytes of this process's address space mapped from its arena's memfd, as the kernel lists
/// them (/proc/self/maps), not as the arena's own bookkeeping says.
std::size_t arena_bytes_in_maps() {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return 0;
  std::size_t total = 0;
  char line[512];
  while (std::fgets(line, sizeof line, maps))
    if (std::strstr(line, "/memfd:actorps-arena")) {
      unsigned long from = 0, to = 0;
      if (std::sscanf(line, "%lx-%lx", &from, &to) == 2) total += to - from;
    }
  std::fclose(maps);
  return total;
}

} // namespace

TEST_CASE("link memory: a 16 GiB arena holds address space in proportion to its buffers: 64 MiB for the first, then as much again as is mapped") {
  REQUIRE(enable_link_memory().empty());
  CHECK(link_memory_bytes() == default_link_memory_bytes);
  CHECK(arena_bytes_in_maps() == 0);  // nothing mapped before the first buffer
  const std::size_t mib = std::size_t(1) << 20;
  float_buffer one(mib / 4, 1.0f);
  CHECK(link_memory_offset(one.data(), mib) == 0);
  CHECK(link_memory_mapped() == 64 * mib);
  CHECK(arena_bytes_in_maps() == 64 * mib);
  // 100 MiB more does not fit in what is left: the next stretch maps as much again as is
  // mapped or the buffer, whichever is more, next to the first when the address space allows.
  float_buffer large(100 * mib / 4, 2.0f);
  auto at = link_memory_offset(large.data(), 100 * mib);
  REQUIRE(at >= 0);
  CHECK(link_memory_mapped() == 164 * mib);
  CHECK(arena_bytes_in_maps() == 164 * mib);
  CHECK(large[100 * mib / 4 - 1] == 2.0f);
  CHECK(one[0] == 1.0f);
  // Freed and taken again: no more address space.
  large = float_buffer{};
  float_buffer again(100 * mib / 4, 3.0f);
  CHECK(link_memory_offset(again.data(), 100 * mib) == at);
  CHECK(link_memory_mapped() == 164 * mib);
  CHECK(link_memory_in_use() == 101 * mib);
}
