// parallel_parts: every position of [0, n) in exactly one piece, pieces contiguous and in order,
// each piece run even when another throws, and the parts a request of n keys gets.
#include "kernels/sparse/parallel_parts.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace actorps {

TEST_CASE("run_in_parts covers every position once, in contiguous pieces in order") {
  for (const std::size_t n : {0, 1, 2, 5, 7, 100, 1001}) {
    for (const std::size_t parts : {0, 1, 2, 3, 7, 8}) {
      CAPTURE(n);
      CAPTURE(parts);
      const std::size_t pieces = parts == 0 ? 1 : parts;
      std::vector<int> seen(n, 0);
      std::vector<std::size_t> begins(pieces, SIZE_MAX), ends(pieces, SIZE_MAX);
      std::vector<std::thread::id> ran_on(pieces);
      run_in_parts(n, parts, [&](std::size_t part, std::size_t begin, std::size_t end) {
        begins[part] = begin;
        ends[part] = end;
        ran_on[part] = std::this_thread::get_id();
        for (std::size_t i = begin; i < end; ++i) ++seen[i];
      });
      CHECK(seen == std::vector<int>(n, 1));
      CHECK(begins[0] == 0);
      CHECK(ends[pieces - 1] == n);
      for (std::size_t p = 1; p < pieces; ++p) CHECK(begins[p] == ends[p - 1]);
      for (std::size_t p = 0; p < pieces; ++p) CHECK(ends[p] - begins[p] <= n / pieces + 1);
      const auto mine = std::this_thread::get_id();  // thread ids compared, never printed
      const bool first_is_mine = ran_on[0] == mine;
      CHECK(first_is_mine);
      for (std::size_t p = 1; p < pieces; ++p) {
        const bool elsewhere = ran_on[p] != mine;
        CHECK(elsewhere);
      }
    }
  }
}

TEST_CASE("run_in_parts runs every piece, then rethrows the first piece's exception") {
  std::atomic<int> ran{0};
  const auto work = [&](std::size_t part, std::size_t, std::size_t) {
    ++ran;
    if (part == 2) throw std::runtime_error("piece 2");
    if (part == 3) throw std::logic_error("piece 3");
  };
  CHECK_THROWS_WITH_AS(run_in_parts(40, 4, work), "piece 2", std::runtime_error);
  CHECK(ran == 4);
  ran = 0;
  CHECK_THROWS_WITH_AS(run_in_parts(40, 4, [&](std::size_t part, std::size_t b, std::size_t e) {
                         if (part == 0) throw std::length_error("piece 0");
                         work(part, b, e);
                       }),
                       "piece 0", std::length_error);
  CHECK(ran == 3);  // pieces 1, 2 and 3 ran all the same
}

TEST_CASE("parts_for: one part per 64 Ki keys, at most the machine's threads and the bound") {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  CHECK(parts_for(0) == 1);
  CHECK(parts_for(min_keys_per_part - 1) == 1);
  CHECK(parts_for(2 * min_keys_per_part) == std::min<std::size_t>(2, cores));
  CHECK(parts_for(1000 * min_keys_per_part) == cores);
  CHECK(parts_for(1000 * min_keys_per_part, 1) == 1);
  CHECK(parts_for(1000 * min_keys_per_part, 3) == std::min<std::size_t>(3, cores));
}

} // namespace actorps
