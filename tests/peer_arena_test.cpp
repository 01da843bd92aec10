// A peer's arena as a shard or worker maps it (actors/link/peer_arena.hpp): windows where the
// pieces lie, not the whole 16 GiB file; what is read there is what the peer wrote; a range
// outside the arena is refused.
#include "actors/link/peer_arena.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

using namespace actorps;

namespace {

/// A sealed memfd of `bytes` as a peer's arena is; -1 on failure.
int sealed_memfd(std::size_t bytes) {
  int fd = ::memfd_create("peer-arena-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0
      || ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void write_at(int fd, uint64_t offset, const std::vector<uint8_t>& bytes) {
  REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset))
          == static_cast<ssize_t>(bytes.size()));
}

} // namespace

TEST_CASE("peer arena: a 16 GiB arena is mapped a 64 MiB window at a time where pieces lie, and reads what the peer wrote") {
  const uint64_t gib = uint64_t(1) << 30, mib = uint64_t(1) << 20;
  int fd = sealed_memfd(16 * gib);
  REQUIRE(fd >= 0);
  std::vector<uint8_t> a(4096, 0xab), b(4096, 0xcd);
  write_at(fd, 8 * gib + 5 * mib, a);
  write_at(fd, 8 * gib + 64 * mib - 2048, b);  // straddles two granules
  auto arena = peer_arena::open(fd);
  REQUIRE(arena);
  ::close(fd);  // the arena keeps a descriptor of its own
  auto& peer = **arena;
  CHECK(peer.size() == 16 * gib);
  CHECK(peer.mapped_bytes() == 0);

  const uint8_t* at = peer.at(8 * gib + 5 * mib, a.size());
  REQUIRE(at != nullptr);
  CHECK(std::memcmp(at, a.data(), a.size()) == 0);
  CHECK(peer.mapped_bytes() == peer_arena_window_bytes);
  // Another piece in the same granule: the same window.
  CHECK(peer.at(8 * gib + 6 * mib, 64) == at + mib);
  CHECK(peer.mapped_bytes() == peer_arena_window_bytes);
  // A piece across two granules: one window of both, in which it is whole.
  const uint8_t* across = peer.at(8 * gib + 64 * mib - 2048, b.size());
  REQUIRE(across != nullptr);
  CHECK(std::memcmp(across, b.data(), b.size()) == 0);
  CHECK(peer.mapped_bytes() == 3 * peer_arena_window_bytes);
  // The earlier window still serves what it held (messages read in place point into it).
  CHECK(peer.at(8 * gib + 5 * mib, a.size()) != nullptr);
  CHECK(std::memcmp(peer.at(8 * gib + 5 * mib, a.size()), a.data(), a.size()) == 0);
  // Outside the arena, or running past its end: refused, nothing mapped.
  CHECK(peer.at(16 * gib, 8) == nullptr);
  CHECK(peer.at(16 * gib - 8, 16) == nullptr);
  CHECK(peer.at(~uint64_t(0) - 4, 8) == nullptr);
  CHECK(peer.mapped_bytes() == 3 * peer_arena_window_bytes);
}

TEST_CASE("peer arena: a descriptor that is not a sealed memory file is refused") {
  int unsealed = ::memfd_create("peer-arena-test", MFD_CLOEXEC);
  REQUIRE(unsealed >= 0);
  REQUIRE(::ftruncate(unsealed, 1 << 20) == 0);
  auto refused = peer_arena::open(unsealed);
  CHECK(!refused);
  ::close(unsealed);
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  CHECK(!peer_arena::open(pipe_fds[0]));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}
