// Bad pushes sent to a shard one by one: each must be refused with its own error, counted in
// `dropped`, and leave the shard's values as they were, bit for bit.
#pragma once

#include "tests/shard_fixture.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

namespace actorps::test {

struct bad_push {
  const char* name;
  wire_buffer payload;
  errc expected;
};

/// Sends each of `cases` to f's shard, whose values were `before` and whose dropped count was 0.
inline void check_each_dropped(shard_fixture& f, const std::vector<bad_push>& cases,
                               const std::vector<float>& before) {
  uint64_t dropped = 0;
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto result = f.push_pull(c.payload);
    REQUIRE_FALSE(result);
    CHECK(result.error().category() == error_category);
    CHECK(static_cast<errc>(result.error().code()) == c.expected);
    CHECK(f.stats().dropped == ++dropped);
    auto now = f.snapshot();
    CHECK((now.size() == before.size()
           && std::memcmp(now.data(), before.data(), now.size() * sizeof(float)) == 0));
  }
}

} // namespace actorps::test
