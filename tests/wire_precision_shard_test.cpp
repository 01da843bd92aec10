// A shard taking bf16 pushes (--wire-precision bf16): a malformed bf16 block is counted and
// dropped like any malformed push, NaN and beyond-bound values still refuse the push, sync
// stays exact against a plain loop applying the mean of the rounded gradients, and a standby
// fed its primary's bf16 pushes ends bit-identical to it.
#include "actors/protocol/bf16.hpp"
#include "actors/ps/lr_schedule.hpp"
#include "kernels/optimizer.hpp"
#include "tests/crafted_push.hpp"
#include "tests/dropped_pushes.hpp"
#include "tests/shard_fixture.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace actorps;
using test::shard_fixture;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// A bf16 push (or one of another precision value) of raw block bytes.
wire_buffer craft_raw_push(int32_t worker, int64_t clock, uint16_t precision,
                           const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& blocks) {
  return test::craft_push_bytes(worker, clock, 0, blocks, precision);
}

/// Every block of the shard as bf16 bytes of `value`.
std::vector<std::pair<uint32_t, std::vector<uint8_t>>> bf16_blocks(const block_layout& layout,
                                                                   float value) {
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> out;
  for (auto id : layout.shard_blocks(0)) {
    std::vector<uint16_t> h(layout.blocks()[id].size, to_bf16(value));
    std::vector<uint8_t> bytes(h.size() * 2);
    std::memcpy(bytes.data(), h.data(), bytes.size());
    out.push_back({id, bytes});
  }
  return out;
}

/// Worker w's gradient of clock c: values bf16 cannot hold exactly, different per worker.
std::vector<float> gradient(std::size_t n, int w, int64_t c) {
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i)
    g[i] = 0.1f * std::sin(0.37f * float(i) + 1.3f * float(w) + 0.7f * float(c)) + 0.0123f;
  return g;
}

wire_buffer bf16_push(shard_fixture& f, int32_t w, int64_t c, const std::vector<float>& g) {
  return encode_push(w, c, 0, f.layout, g.data(), 0, {}, {}, wire_precision::bf16);
}

/// Sends the pushes of one sync clock and waits for every worker's reply.
void sync_clock(shard_fixture& f, const std::vector<wire_buffer>& pushes) {
  for (const auto& p : pushes) (*f.self)->send(f.shard, push_pull_atom::value, push_request{p});
  for (std::size_t i = 0; i < pushes.size(); ++i)
    (*f.self)->receive([](const wire_buffer&) {}, [](caf::error& e) { FAIL(describe(e)); },
                       caf::after(test::timeout) >> [] { FAIL("no reply"); });
}

} // namespace

TEST_CASE("a shard drops a malformed bf16 push, counts it and keeps its state") {
  shard_fixture f(test::tiny_spec(consistency::async, 2));
  auto before = f.snapshot();
  auto blocks = bf16_blocks(f.layout, 0.5f);
  auto odd = blocks;
  odd[1].second.pop_back();  // 7 bytes: not a whole number of bf16 values
  auto short_block = blocks;
  short_block[2].second.resize(short_block[2].second.size() - 2);  // one value short
  auto fp32_sized = blocks;  // the bytes of fp32 values, labelled bf16: twice the values
  fp32_sized[0].second.resize(fp32_sized[0].second.size() * 2);
  auto nan = blocks;
  nan[3].second[1] = 0x7f, nan[3].second[0] = 0xc0;  // bf16 0x7fc0, a NaN
  auto huge = blocks;
  huge[4].second[1] = 0x7f, huge[4].second[0] = 0x00;  // bf16 0x7f00: 1.7e38

  std::vector<test::bad_push> cases{
    {"odd byte count", craft_raw_push(0, 0, 1, odd), errc::malformed_message},
    {"unknown precision", craft_raw_push(0, 0, 7, blocks), errc::malformed_message},
    {"one value short", craft_raw_push(0, 0, 1, short_block), errc::wrong_element_count},
    {"fp32 bytes as bf16", craft_raw_push(0, 0, 1, fp32_sized), errc::wrong_element_count},
    {"NaN", craft_raw_push(0, 0, 1, nan), errc::non_finite_value},
    {"beyond --max-gradient", craft_raw_push(0, 0, 1, huge), errc::value_out_of_bounds},
  };
  test::check_each_dropped(f, cases, before);
  CHECK(f.stats().updates == 0);
  CHECK(f.stats().pushed_bytes == 0);
  // the well-formed one is applied: async, lr 1, 2 workers: every value moves by -0.5 / 2
  auto good = craft_raw_push(0, 0, 1, blocks);
  auto after = f.push_pull(good);
  REQUIRE(after);
  for (std::size_t i = 0; i < after->size(); ++i) CHECK((*after)[i] == f.initial[i] - 0.25f);
  CHECK(f.stats().updates == 1);
  CHECK(f.stats().pushed_bytes == good.size_bytes());
}

TEST_CASE("sync: bf16 pushes end bit for bit as a plain loop applying the mean of the rounded gradients") {
  constexpr int workers = 3;
  constexpr int64_t clocks = 6;
  auto spec = test::tiny_spec(consistency::sync, workers);
  spec.optimizer.kind = optimizer_kind::momentum;
  spec.optimizer.learning_rate = 0.05f;
  spec.optimizer.momentum = 0.9f;
  shard_fixture f(spec);
  shard_fixture fp32(spec);  // the same gradients pushed as float32
  const auto n = f.layout.total_floats();

  auto params = f.initial;
  std::vector<float> state(n, 0.0f), sum(n);
  uint64_t bf16_bytes = 0, fp32_bytes = 0;
  for (int64_t c = 0; c < clocks; ++c) {
    std::vector<wire_buffer> pushes, fp32_pushes;
    for (int w = 0; w < workers; ++w) {
      auto g = gradient(n, w, c);
      pushes.push_back(bf16_push(f, w, c, g));
      fp32_pushes.push_back(encode_push(w, c, 0, fp32.layout, g.data()));
      bf16_bytes += pushes.back().size_bytes();
      fp32_bytes += fp32_pushes.back().size_bytes();
      // the reference: the shard's mean (sum in worker order, times 1 / W) of what arrives
      for (std::size_t i = 0; i < n; ++i) {
        auto v = on_the_wire(g[i], wire_precision::bf16);
        sum[i] = w == 0 ? v : sum[i] + v;
      }
    }
    for (auto& v : sum) v *= 1.0f / float(workers);
    auto lr = scheduled_learning_rate(spec.schedule, spec.optimizer.learning_rate, c,
                                      spec.total_clocks);
    apply_update(spec.optimizer, lr, c + 1, params.data(), sum.data(), state.data(), n);
    sync_clock(f, pushes);
    sync_clock(fp32, fp32_pushes);
  }
  auto got = f.snapshot();
  CHECK(same_bits(got, params));
  auto unrounded = fp32.snapshot();
  CHECK_FALSE(same_bits(got, unrounded));  // the rounding did change the model
  double max_diff = 0;
  for (std::size_t i = 0; i < n; ++i)
    max_diff = std::max(max_diff, double(std::fabs(got[i] - unrounded[i])));
  MESSAGE("max |bf16 - fp32| after " << clocks << " clocks = " << max_diff);
  CHECK(max_diff < 1e-3);
  auto stats = f.stats();
  CHECK(stats.updates == uint64_t(clocks));
  CHECK(stats.pushes == uint64_t(workers * clocks));
  CHECK(stats.pushed_bytes == bf16_bytes);  // the counter the benchmark reads
  CHECK(fp32.stats().pushed_bytes == fp32_bytes);
  CHECK(bf16_bytes < fp32_bytes);
}

TEST_CASE("a standby applies its primary's bf16 pushes as they came and ends bit-identical") {
  for (auto mode : {consistency::sync, consistency::async}) {
    CAPTURE(static_cast<int>(mode));
    auto spec = test::tiny_spec(mode, 2);
    spec.optimizer.kind = optimizer_kind::adam;
    spec.optimizer.learning_rate = 0.01f;
    shard_fixture f(spec);
    auto standby = spawn_ps_shard(*f.sys, 0);
    auto backed = f.back_up(standby);
    REQUIRE_MESSAGE(backed, "backup failed: " << describe(backed.error()));
    const auto n = f.layout.total_floats();
    for (int64_t c = 0; c < 4; ++c) {
      std::vector<wire_buffer> pushes;
      for (int w = 0; w < 2; ++w) pushes.push_back(bf16_push(f, w, c, gradient(n, w, c)));
      sync_clock(f, pushes);
    }
    auto primary = f.snapshot();
    CHECK(primary != f.initial);
    std::vector<float> copy;
    (*f.self)->request(standby, test::timeout, snapshot_atom::value)
      .receive([&](const wire_buffer& snap) { copy = f.parameters_of(snap); },
               [&](caf::error& err) { FAIL("snapshot failed: " << describe(err)); });
    CHECK(same_bits(copy, primary));
    shard_stats s;
    (*f.self)->request(standby, test::timeout, stats_atom::value)
      .receive([&](shard_stats& got) { s = got; }, [&](caf::error&) {});
    CHECK(s.pushes == 8);
    CHECK(f.stats().replicated_bytes > 0);
    (*f.self)->send_exit(standby, caf::exit_reason::user_shutdown);
  }
}
