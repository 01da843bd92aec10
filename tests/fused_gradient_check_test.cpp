// A pushed gradient read once: its bound checked inside the optimizer's loop
// (apply_pushed_update) or inside the sync slot's copy (copy_within), and still refused whole
// with nothing changed when any value, in the last block too, is beyond --max-gradient.
// A shard samples every 16th push's largest value with a pass of its own (its first push
// among them): the pushes below that are refused come later, so only the fused check sees them.
#include "kernels/optimizer.hpp"
#include "kernels/value_bounds.hpp"
#include "tests/shard_fixture.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace actorps {

namespace {

using test::shard_fixture;
using test::timeout;

constexpr float nan_value = std::numeric_limits<float>::quiet_NaN();

/// A gradient of `value` everywhere but its last float, `last`.
wire_buffer push_with_last(shard_fixture& f, int32_t worker, int64_t clock, float value,
                           float last) {
  std::vector<float> grad(f.layout.total_floats(), value);
  grad.back() = last;
  return encode_push(worker, clock, 0, f.layout, grad.data());
}

} // namespace

TEST_CASE("apply_pushed_update equals the checked update and refuses a bad gradient value anywhere") {
  const std::size_t n = 37;
  for (auto kind : {optimizer_kind::sgd, optimizer_kind::momentum, optimizer_kind::adam,
                    optimizer_kind::adagrad}) {
    CAPTURE(to_string(kind));
    optimizer_config cfg;
    cfg.kind = kind;
    const auto slots = optimizer_state_slots(kind);
    std::vector<float> p(n), s(slots * n, 0.25f), g(n);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = 0.1f * float(i) - 1.0f;
      g[i] = 0.01f * float(int(i % 7) - 3);
    }
    std::vector<float> want_p(n), want_s(slots * n), got_p(n), got_s(slots * n);
    REQUIRE(apply_update_checked(cfg, 0.05f, 3, p.data(), s.data(), g.data(), want_p.data(),
                                 want_s.data(), n, 100.0f));
    CHECK(apply_pushed_update(cfg, 0.05f, 3, p.data(), s.data(), g.data(), got_p.data(),
                              got_s.data(), n, 100.0f, 1.0f) == update_check::applied);
    CHECK(std::memcmp(got_p.data(), want_p.data(), n * sizeof(float)) == 0);
    CHECK(std::memcmp(got_s.data(), want_s.data(), slots * n * sizeof(float)) == 0);

    // a value exactly at the bound passes; beyond it, NaN or ±inf at the very end does not
    auto at_end = [&](float last, float bound) {
      auto bad = g;
      bad.back() = last;
      return apply_pushed_update(cfg, 0.05f, 3, p.data(), s.data(), bad.data(), got_p.data(),
                                 got_s.data(), n, 100.0f, bound);
    };
    CHECK(at_end(-1.0f, 1.0f) == update_check::applied);
    CHECK(at_end(1.0001f, 1.0f) == update_check::gradient_beyond);
    CHECK(at_end(nan_value, 1e6f) == update_check::gradient_beyond);
    CHECK(at_end(-std::numeric_limits<float>::infinity(), 1e6f) == update_check::gradient_beyond);
    // +inf as the bound lets every finite value through and still stops NaN
    CHECK(at_end(3e38f, std::numeric_limits<float>::infinity()) != update_check::gradient_beyond);
    CHECK(at_end(nan_value, std::numeric_limits<float>::infinity()) == update_check::gradient_beyond);

    // an update that overflows at the first element and a bad gradient at the last: the gradient
    // wins (the push is refused, not counted as an update refused)
    auto big = g;
    big.front() = 1000.0f;
    CHECK(apply_pushed_update(cfg, 3e38f, 3, p.data(), s.data(), big.data(), got_p.data(),
                              got_s.data(), n, 100.0f, 1e6f) == update_check::update_beyond);
    big.back() = nan_value;
    CHECK(apply_pushed_update(cfg, 3e38f, 3, p.data(), s.data(), big.data(), got_p.data(),
                              got_s.data(), n, 100.0f, 1e6f) == update_check::gradient_beyond);
  }
}

TEST_CASE("copy_within copies every value and says whether all were within the bound") {
  std::vector<float> from{1.0f, -2.0f, 0.5f, -0.0f}, to(4, 9.0f);
  CHECK(copy_within(to.data(), from.data(), from.size(), 2.0f));
  CHECK(to == from);
  from[3] = nan_value;
  CHECK_FALSE(copy_within(to.data(), from.data(), from.size(), 2.0f));
  from[3] = -2.5f;
  CHECK_FALSE(copy_within(to.data(), from.data(), from.size(), 2.0f));
  CHECK(to[3] == -2.5f);  // copied all the same: the caller drops what it copied
  CHECK(copy_within(to.data(), from.data(), 0, 2.0f));
}

TEST_CASE("an async push with NaN or 3e38 in its last block only is refused whole, nothing changed") {
  shard_fixture f(test::tiny_spec(consistency::async, 1));
  auto first = f.push_pull(f.push_of(0, 0, 0.5f));  // the sampled push: checked apart
  REQUIRE(first);
  for (float bad : {nan_value, 3e38f, -std::numeric_limits<float>::infinity()}) {
    CAPTURE(bad);
    auto refused = f.push_pull(push_with_last(f, 0, 1, 0.25f, bad));
    REQUIRE_FALSE(refused);
    CHECK(is_error(refused.error(), std::isfinite(bad) ? errc::value_out_of_bounds
                                                       : errc::non_finite_value));
    CHECK(f.snapshot() == *first);
  }
  auto stats = f.stats();
  CHECK(stats.gradients_refused == 3);
  CHECK(stats.pushes == 1);
  CHECK(stats.updates == 1);
  CHECK(stats.min_clock == 1);
  // the same clock with a good value applies: the refusals took nothing
  auto applied = f.push_pull(push_with_last(f, 0, 1, 0.25f, 0.5f));
  REQUIRE(applied);
  CHECK((*applied)[0] == (*first)[0] - 0.25f);
  CHECK(applied->back() == first->back() - 0.5f);
}

TEST_CASE("a bad last value refuses the push even when an earlier block's update overflows") {
  auto spec = test::tiny_spec(consistency::async, 1);
  spec.optimizer.kind = optimizer_kind::momentum;
  spec.optimizer.learning_rate = 3e38f;  // lr × 1000 is not a float
  spec.schedule = lr_schedule::constant;
  shard_fixture f(spec);
  REQUIRE(f.push_pull(f.push_of(0, 0, 0.0f)));  // sampled; changes nothing (zero gradient)
  auto refused = f.push_pull(push_with_last(f, 0, 1, 1000.0f, nan_value));
  REQUIRE_FALSE(refused);
  CHECK(is_error(refused.error(), errc::non_finite_value));
  auto stats = f.stats();
  CHECK(stats.gradients_refused == 1);
  CHECK(stats.updates_refused == 0);
  CHECK(stats.pushes == 1);
  CHECK(f.snapshot() == f.initial);
  // the same push without the NaN is valid: its update is refused, its clock counts
  REQUIRE(f.push_pull(push_with_last(f, 0, 1, 1000.0f, 1000.0f)));
  CHECK(f.stats().updates_refused == 1);
  CHECK(f.stats().min_clock == 2);
}

TEST_CASE("sync: a bad push checked as it is copied leaves the clock's mean bit for bit as without") {
  // Per clock: worker 0 pushes; with `attack`, worker 1 then pushes a gradient whose last value
  // is 3e38 (copied into its slot and refused), and worker 0 pushes the next clock with a NaN at
  // the end while its slot still holds this clock's gradient (refused before it is copied); then
  // worker 1's real push completes the clock.
  auto run = [](bool attack) {
    auto spec = test::tiny_spec(consistency::sync, 2);
    spec.optimizer.kind = optimizer_kind::momentum;
    spec.optimizer.learning_rate = 0.01f;
    shard_fixture f(spec);
    for (int64_t c = 0; c < 4; ++c) {
      (*f.self)->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, c, 0.1f - 0.02f * float(c))});
      if (attack) {
        auto refused = f.push_pull(push_with_last(f, 1, c, 0.3f, 3e38f));
        REQUIRE_FALSE(refused);
        CHECK(is_error(refused.error(), errc::value_out_of_bounds));
        // worker 0's next clock: its slot is still this clock's (a pull would not be answered)
        bool answered = false;
        (*f.self)->request(f.shard, timeout, push_pull_atom::value,
                           push_request{push_with_last(f, 0, c + 1, 0.7f, nan_value)})
          .receive([&](const wire_buffer&) { answered = true; },
                   [&](caf::error& e) { CHECK(is_error(e, errc::non_finite_value)); });
        CHECK_FALSE(answered);
      }
      (*f.self)->send(f.shard, push_pull_atom::value, push_request{f.push_of(1, c, 0.2f + 0.01f * float(c))});
      for (int i = 0; i < 2; ++i)
        (*f.self)->receive([](const wire_buffer&) {}, [](caf::error& e) { FAIL(describe(e)); },
                           caf::after(timeout) >> [] { FAIL("no reply"); });
    }
    return std::make_pair(f.snapshot(), f.stats());
  };
  auto [clean, clean_stats] = run(false);
  auto [attacked, attacked_stats] = run(true);
  CHECK(attacked == clean);
  CHECK(clean_stats.updates == 4);
  CHECK(attacked_stats.updates == 4);
  CHECK(attacked_stats.gradients_refused == 8);
  CHECK(attacked_stats.pushes == 8);
}

} // namespace actorps
