// Worker-side de-duplication of a batch's keys: distinct ascending keys plus the inverse index.
#include "kernels/sparse/key_dedup.hpp"

#include <doctest/doctest.h>

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

} // namespace actorps
