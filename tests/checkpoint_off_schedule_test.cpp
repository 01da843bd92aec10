// A checkpoint off the every-N schedule (the chief's answer to SIGTERM, interrupt.cpp): asked
// before the shard reaches its clock, the shard keeps that clock's state when it gets there and
// writes it; asked once the shard has passed it, it is refused as checkpoint_clock_passed (the
// chief asks again further ahead), which is not a failed checkpoint.
#include "actors/storage/checkpoint_store.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shard_fixture.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <iterator>

using namespace actorps;
using actorps::test::shard_fixture;
using actorps::test::timeout;
namespace fs = std::filesystem;

namespace {

wire_buffer push_at(const block_layout& layout, int64_t clock) {
  std::vector<float> grad(layout.total_floats());
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = std::cos(float(clock * 7 + i)) * 0.1f;
  return encode_push(0, clock, 0, layout, grad.data());
}

wire_buffer read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return wire_buffer::from_bytes(bytes.data(), bytes.size());
}

} // namespace

TEST_CASE("a checkpoint asked for a clock off the schedule is kept when the shard reaches it") {
  auto spec = actorps::test::tiny_spec(consistency::sync, 1);
  spec.total_clocks = 100;
  spec.checkpoint_every = 50;  // 7 is not a checkpoint clock
  actorps::test::scratch_dir tmp("actorps_off_schedule");
  shard_fixture f(spec, shard_config{tmp.path, {}});  // its checkpoint root
  for (int64_t c = 0; c < 3; ++c) REQUIRE(f.push_pull(push_at(f.layout, c)));

  // asked at clock 3 for clock 7: held until the shard's min clock reaches 7
  auto asked = (*f.self)->request(f.shard, timeout, checkpoint_atom::value, tmp.path, int64_t{7});
  std::vector<float> at_7;
  for (int64_t c = 3; c < 7; ++c) {
    auto params = f.push_pull(push_at(f.layout, c));
    REQUIRE(params);
    at_7 = *params;
  }
  for (int64_t c = 7; c < 9; ++c) REQUIRE(f.push_pull(push_at(f.layout, c)));  // moves on
  caf::error err;
  asked.receive([](file_record&) {}, [&](caf::error& e) { err = e; });
  REQUIRE_MESSAGE(err == caf::none, describe(err));
  auto bytes = read_bytes(fs::path(tmp.path) / shard_file_name(0));
  auto view = decode_shard_checkpoint(bytes);  // points into bytes
  REQUIRE(view);
  CHECK(view->clock == 7);
  CHECK(view->optimizer_step == 7u);  // the state after clock 6's update, not after clock 8's
  std::vector<float> saved;
  for (const auto& b : view->blocks) saved.insert(saved.end(), b.values, b.values + b.count);
  std::vector<float> expected(f.layout.shard_floats(0));
  f.layout.gather(0, at_7.data(), expected.data());
  CHECK(saved == expected);
}

TEST_CASE("a clock off the schedule the shard has passed is refused as checkpoint_clock_passed") {
  auto spec = actorps::test::tiny_spec(consistency::sync, 1);
  spec.total_clocks = 100;
  spec.checkpoint_every = 50;
  actorps::test::scratch_dir tmp("actorps_off_schedule_passed");
  shard_fixture f(spec, shard_config{tmp.path, {}});  // its checkpoint root
  for (int64_t c = 0; c < 5; ++c) REQUIRE(f.push_pull(push_at(f.layout, c)));
  caf::error err;
  (*f.self)->request(f.shard, timeout, checkpoint_atom::value, tmp.path, int64_t{3})
    .receive([](file_record&) {}, [&](caf::error& e) { err = e; });
  CHECK(err.category() == error_category);
  CHECK(err.code() == static_cast<uint8_t>(errc::checkpoint_clock_passed));
  CHECK_FALSE(fs::exists(fs::path(tmp.path) / shard_file_name(0)));
  // the chief's bytes form (--checkpoint-writer chief) says the same
  err = caf::none;
  (*f.self)->request(f.shard, timeout, checkpoint_atom::value, int64_t{4})
    .receive([](wire_buffer&) {}, [&](caf::error& e) { err = e; });
  CHECK(err.code() == static_cast<uint8_t>(errc::checkpoint_clock_passed));
}
