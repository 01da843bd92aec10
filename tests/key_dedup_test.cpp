// Worker-side de-duplication of a batch's keys: distinct ascending keys plus the inverse index.
#include "kernels/sparse/key_dedup.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <vector>

namespace actorps {

TEST_CASE("dedup_keys gives sorted distinct keys and an inverse index back to every input") {
  const std::vector<uint64_t> keys = {42, 7, 42, ~0ull, 7, 0, 42};
  std::vector<uint64_t> unique = {99, 98};  // replaced, not appended to
  std::vector<uint32_t> inverse;
  dedup_keys(keys.data(), keys.size(), unique, inverse);
  CHECK(unique == std::vector<uint64_t>{0, 7, 42, ~0ull});
  CHECK(inverse == std::vector<uint32_t>{2, 1, 2, 3, 1, 0, 2});
  dedup_keys(keys.data(), 0, unique, inverse);
  CHECK(unique.empty());
  CHECK(inverse.empty());
}

TEST_CASE("dedup_keys agrees with a map on hashed, small, equal and single keys") {
  // The radix sort's cases: every digit varying (hashed keys), high digits all equal (small
  // keys: those passes skipped), only one digit varying (every other pass skipped), one
  // distinct key (every pass skipped), one key, and a batch the size of a Criteo one (26 fields
  // x 256 rows).
  std::mt19937_64 rng(5);
  auto check = [](const std::vector<uint64_t>& keys) {
    std::map<uint64_t, uint32_t> index;
    for (auto k : keys) index.emplace(k, 0);
    std::vector<uint64_t> want_unique;
    for (auto& [k, i] : index) {
      i = static_cast<uint32_t>(want_unique.size());
      want_unique.push_back(k);
    }
    std::vector<uint64_t> unique;
    std::vector<uint32_t> inverse;
    dedup_keys(keys.data(), keys.size(), unique, inverse);
    CHECK(unique == want_unique);
    REQUIRE(inverse.size() == keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) CHECK(inverse[i] == index.at(keys[i]));
  };
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(300), std::size_t(6656)}) {
    CAPTURE(n);
    std::vector<uint64_t> hashed(n), small(n), pool(n);
    for (std::size_t i = 0; i < n; ++i) pool[i] = rng();
    for (std::size_t i = 0; i < n; ++i) {
      hashed[i] = pool[rng() % (n / 2 + 1)];  // about half distinct
      small[i] = rng() % 1000;
    }
    check(hashed);
    check(small);
    for (int d = 0; d < 8; ++d) {  // keys that differ in one 8-bit digit only, each in turn
      std::vector<uint64_t> one_digit(n);
      for (auto& k : one_digit) k = 0x0123456789abcdefull ^ ((rng() % 256) << (8 * d));
      check(one_digit);
    }
    check(std::vector<uint64_t>(n, 0x0123456789abcdefull));
    check(std::vector<uint64_t>(n, ~0ull));
  }
}

} // namespace actorps
