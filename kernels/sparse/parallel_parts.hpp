// Splitting one large request's rows over the machine's cores: a push or pull of millions of
// keys is one cache and TLB miss after another, and a second thread keeps a second stream of
// misses in flight (sparse_link.sh on 2 cores, M keys/s: 10 M keys pulled 16.1 -> 21.6-23.7,
// their rows updated 11.3-11.5 -> 18.4-18.5). Small requests stay on the caller's thread: a
// thread costs tens of microseconds to start.
#pragma once

#include <cstddef>
#include <functional>

namespace actorps {

/// Below this many keys in a part a request is not split.
inline constexpr std::size_t min_keys_per_part = std::size_t(1) << 16;

/// Parts for a request of n keys: one per min_keys_per_part keys, at most the machine's
/// hardware threads and at most `most` (0: no bound of the caller's), at least 1.
std::size_t parts_for(std::size_t n, std::size_t most = 0);

/// Runs work(part, begin, end) on `parts` contiguous pieces of [0, n), piece p before piece
/// p + 1 in [0, n): piece 0 on the calling thread, each other on a thread of its own (on the
/// calling thread after piece 0 if no thread can be started); returns once every piece is
/// done. A piece may be empty (n < parts). Every piece runs; then the exception of the first
/// piece that threw is rethrown. parts 0 is taken as 1.
using part_work = std::function<void(std::size_t part, std::size_t begin, std::size_t end)>;
void run_in_parts(std::size_t n, std::size_t parts, const part_work& work);

} // namespace actorps
