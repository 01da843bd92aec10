// Spare buffers given back (buffer_lease.hpp): a buffer handed over to the messages that hold
// it comes back to its owner's pool when the last of them lets go, and the shard's next update
// writes into it instead of a fresh allocation.
#include "link_fixture.hpp"

#include "actors/protocol/buffer_lease.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <vector>

using namespace actorps;
using namespace actorps::test;

namespace {

/// Where the first block of a shard's reply points (a reply built by reference: into the
/// shard's parameter buffer).
const float* first_block_of(const wire_buffer& reply) {
  auto view = decode_shard_parameters(reply);
  REQUIRE(view);
  REQUIRE_FALSE(view->blocks.empty());
  return view->blocks[0].values;
}

} // namespace

TEST_CASE("buffer pool: a buffer given back is taken again as it is, up to the number kept") {
  buffer_pool pool(2);
  float_buffer a(1000, 3.0f), b(1000), c(1000);
  const float* at_a = a.data();
  pool.give(std::move(a));
  pool.give(std::move(b));
  pool.give(std::move(c));  // over the bound: freed
  CHECK(pool.kept() == 2);
  auto first = pool.take(1000);
  auto second = pool.take(1000);
  CHECK(pool.kept() == 0);
  CHECK((first.data() == at_a || second.data() == at_a));
  auto& kept_a = first.data() == at_a ? first : second;
  CHECK(kept_a[999] == 3.0f);  // taken as it was: no zeroing pass
  auto fresh = pool.take(1000);  // none kept: a new one, of zeros
  CHECK(fresh.size() == 1000);
  CHECK(fresh[0] == 0.0f);
}

TEST_CASE("buffer pool: a buffer of another size is not handed out, and is dropped") {
  buffer_pool pool;
  pool.give(float_buffer(64, 1.0f));
  auto other = pool.take(128);
  CHECK(other.size() == 128);
  CHECK(other[127] == 0.0f);
  CHECK(pool.kept() == 0);
}

TEST_CASE("buffer lease: an orphaned buffer goes back to the pool when the last message lets go") {
  auto pool = std::make_shared<buffer_pool>();
  float_buffer buffer(256, 2.0f);
  const float* at = buffer.data();
  auto lease = std::make_shared<buffer_lease>(pool);
  auto held_by_message = lease;  // a message built on the buffer keeps this
  CHECK(release_for_writing(buffer, lease));
  CHECK(buffer.empty());
  CHECK(pool.use_count() == 2);  // the lease keeps the pool alive
  CHECK(pool->kept() == 0);      // the message still reads the buffer
  held_by_message.reset();
  REQUIRE(pool->kept() == 1);
  CHECK(pool->take(256).data() == at);
}

TEST_CASE("ps_shard: a buffer a held reply kept comes back for a later update, which writes every value") {
  shard_fixture f{word_aligned_spec()};
  auto ask = [&](auto... xs) {
    wire_buffer out;
    (*f.self)->request(f.shard, timeout, xs...)
      .receive([&](const wire_buffer& reply) { out = reply; },
               [&](caf::error& err) { FAIL(describe(err)); });
    return out;
  };
  // A snapshot held, as an evaluator holds one while it evaluates: it keeps buffer A.
  auto held = ask(snapshot_atom::value);
  const float* a = first_block_of(held);
  // Two updates: the second cannot write into A (held) and takes another buffer.
  int64_t clock = 0;
  float applied = 0;
  auto update = [&](float g) {
    auto reply = ask(push_pull_atom::value, push_request{f.push_of(0, clock++, g)});
    applied += g;
    return reply;
  };
  update(1.0f);
  update(2.0f);
  held = wire_buffer{};  // A goes back to the shard's pool
  // Memory of A's size allocated now would take A, were it freed.
  std::vector<float> churn(f.initial.size(), 1e30f);
  REQUIRE(churn.data() != a);  // A is kept, not free
  // Hold the newest reply across the next two updates: the second finds its spare held and
  // takes one from the pool, which is A.
  update(4.0f);
  auto kept = update(8.0f);
  update(16.0f);
  auto latest = update(32.0f);
  CHECK(first_block_of(latest) == a);
  // Every value of the update written into A is the shard's (SGD, rate 1): nothing of what A
  // held before survives.
  auto values = f.parameters_of(latest);
  REQUIRE(values.size() == f.initial.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    CHECK(values[i] == doctest::Approx(f.initial[i] - applied));
}
