// The optimizers against values worked out by hand for a few steps on a few elements.
#include "kernels/optimizer.hpp"

#include "kernels/math.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace actorps {
namespace {

/// Relative tolerance only (scale 0): float rounding over a few steps, nothing looser.
doctest::Approx near(double expected) { return doctest::Approx(expected).epsilon(2e-6).scale(0); }

/// A config whose own learning rate is absurd, so the tests prove `lr` is the one used.
optimizer_config config_for(optimizer_kind kind) {
  optimizer_config cfg;
  cfg.kind = kind;
  cfg.learning_rate = 999.0f;
  return cfg;
}

} // namespace

TEST_CASE("optimizer names round-trip and unknown names are rejected") {
  for (const auto& row : optimizer_traits_table) {
    const auto parsed = parse_optimizer_kind(to_string(row.kind));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == row.kind);
  }
  CHECK(optimizer_names() == "sgd, momentum, adam or adagrad");
  CHECK(std::string(to_string(optimizer_kind::adagrad)) == "adagrad");
  CHECK_FALSE(parse_optimizer_kind("rmsprop").has_value());
  CHECK_FALSE(parse_optimizer_kind("").has_value());
  CHECK_FALSE(parse_optimizer_kind("Adam").has_value());  // names are lower-case, exact
}

TEST_CASE("optimizer state slots, default rates and hyper-parameters") {
  CHECK(optimizer_state_slots(optimizer_kind::sgd) == 0);
  CHECK(optimizer_state_slots(optimizer_kind::momentum) == 1);
  CHECK(optimizer_state_slots(optimizer_kind::adam) == 2);
  CHECK(optimizer_state_slots(optimizer_kind::adagrad) == 1);
  CHECK(default_learning_rate(optimizer_kind::sgd) == 0.1f);
  CHECK(default_learning_rate(optimizer_kind::momentum) == 0.05f);
  CHECK(default_learning_rate(optimizer_kind::adam) == 0.001f);
  CHECK(default_learning_rate(optimizer_kind::adagrad) == 0.05f);
  CHECK(optimizer_hyper_parameters(optimizer_kind::sgd) == hyper_none);
  CHECK(optimizer_hyper_parameters(optimizer_kind::momentum) == hyper_momentum);
  CHECK(optimizer_hyper_parameters(optimizer_kind::adam) == (hyper_betas | hyper_epsilon));
  CHECK(optimizer_hyper_parameters(optimizer_kind::adagrad) == hyper_epsilon);
}

TEST_CASE("sgd: p -= lr g") {
  const auto cfg = config_for(optimizer_kind::sgd);
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  const std::vector<float> g1 = {0.5f, 0.25f, -1.0f}, g2 = {-0.5f, 1.0f, 2.0f};
  apply_update(cfg, 0.1f, 1, p.data(), g1.data(), nullptr, p.size());
  CHECK(p[0] == near(0.95));
  CHECK(p[1] == near(-2.025));
  CHECK(p[2] == near(0.6));
  apply_update(cfg, 0.1f, 2, p.data(), g2.data(), nullptr, p.size());
  CHECK(p[0] == near(1.0));
  CHECK(p[1] == near(-2.125));
  CHECK(p[2] == near(0.4));
}

TEST_CASE("momentum: v = mu v + g, then p -= lr v") {
  auto cfg = config_for(optimizer_kind::momentum);
  cfg.momentum = 0.9f;
  std::vector<float> p = {1.0f, -2.0f};
  std::vector<float> v(2, 0.0f);
  const std::vector<std::vector<float>> grads = {{0.5f, -0.25f}, {0.5f, 0.5f}, {-1.0f, 0.0f}};
  // element 0: v 0.5, 0.95, -0.145;   p 0.95, 0.855, 0.8695
  // element 1: v -0.25, 0.275, 0.2475; p -1.975, -2.0025, -2.02725
  const double v_expected[3][2] = {{0.5, -0.25}, {0.95, 0.275}, {-0.145, 0.2475}};
  const double p_expected[3][2] = {{0.95, -1.975}, {0.855, -2.0025}, {0.8695, -2.02725}};
  for (int step = 1; step <= 3; ++step) {
    CAPTURE(step);
    apply_update(cfg, 0.1f, step, p.data(), grads[step - 1].data(), v.data(), p.size());
    for (int i = 0; i < 2; ++i) {
      CHECK(v[i] == near(v_expected[step - 1][i]));
      CHECK(p[i] == near(p_expected[step - 1][i]));
    }
  }
}

TEST_CASE("adam with bias correction, state m (slot 0) then v (slot 1)") {
  auto cfg = config_for(optimizer_kind::adam);
  cfg.beta1 = 0.9f;
  cfg.beta2 = 0.999f;
  cfg.epsilon = 1e-8f;
  std::vector<float> p = {1.0f, -2.0f};
  std::vector<float> state(4, 0.0f);  // m0 m1 v0 v1
  const std::vector<std::vector<float>> grads = {{0.5f, -0.1f}, {-0.25f, -0.1f}, {0.5f, 0.3f}};
  // Step 1: m = 0.1 g, v = 0.001 g², m̂ = g, v̂ = g² → p -= 0.1 · sign(g).
  // Step 2, element 0: m = 0.045 − 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225,
  //   m̂ = 0.02 / 0.19, v̂ = 0.00031225 / 0.001999 → p = 0.9 − 0.1 · 0.10526 / 0.39523.
  // Element 1 sees a constant gradient, so every step moves it by exactly lr.
  const double p_expected[3][2] = {
      {0.9, -1.9}, {0.873366299, -1.8}, {0.815418232, -1.82485004}};
  const double m_expected[3][2] = {{0.05, -0.01}, {0.02, -0.019}, {0.068, 0.0129}};
  const double v_expected[3][2] = {
      {0.00025, 1e-05}, {0.00031225, 1.999e-05}, {0.00056193775, 0.00010997001}};
  for (int step = 1; step <= 3; ++step) {
    CAPTURE(step);
    apply_update(cfg, 0.1f, step, p.data(), grads[step - 1].data(), state.data(), p.size());
    for (int i = 0; i < 2; ++i) {
      CAPTURE(i);
      CHECK(p[i] == near(p_expected[step - 1][i]));
      CHECK(state[i] == near(m_expected[step - 1][i]));
      // 1 − 0.999f is 0.000999987 in float, so v sits ~1.3e-5 (relative) below the decimals.
      CHECK(state[2 + i] == doctest::Approx(v_expected[step - 1][i]).epsilon(3e-5).scale(0));
    }
  }
}

TEST_CASE("adam rejects step 0 (bias correction would divide by zero)") {
  const auto cfg = config_for(optimizer_kind::adam);
  float p = 1.0f, g = 1.0f;
  float state[2] = {0.0f, 0.0f};
  CHECK_THROWS_AS(apply_update(cfg, 0.1f, 0, &p, &g, state, 1), std::invalid_argument);
}

TEST_CASE("adagrad: acc += g squared, then p -= lr g / (sqrt(acc) + eps)") {
  auto cfg = config_for(optimizer_kind::adagrad);
  cfg.epsilon = 0.1f;  // large enough to matter in the expected values
  std::vector<float> p = {1.0f, 3.0f};
  std::vector<float> acc(2, 0.0f);
  const std::vector<std::vector<float>> grads = {{0.5f, -2.0f}, {0.5f, 1.0f}};
  // element 0: acc 0.25 → p = 1 − 0.05/0.6;  acc 0.5 → p −= 0.05/(0.70711 + 0.1)
  // element 1: acc 4 → p = 3 + 0.2/2.1;      acc 5 → p −= 0.1/(2.23607 + 0.1)
  const double acc_expected[2][2] = {{0.25, 4.0}, {0.5, 5.0}};
  const double p_expected[2][2] = {{0.916666667, 3.0952381}, {0.854716995, 3.05243112}};
  for (int step = 1; step <= 2; ++step) {
    CAPTURE(step);
    apply_update(cfg, 0.1f, step, p.data(), grads[step - 1].data(), acc.data(), p.size());
    for (int i = 0; i < 2; ++i) {
      CHECK(acc[i] == near(acc_expected[step - 1][i]));
      CHECK(p[i] == near(p_expected[step - 1][i]));
    }
  }
}

TEST_CASE("every optimizer loop is the per-element step bit for bit: in place, out of place, "
          "aliased and fused") {
  // The loops vectorise (and run an AVX2 clone here); each value must still be math::'s step
  // on that element, whatever the width, the tail or the aliasing. 1 003 elements: the vector
  // body and a tail.
  const std::size_t n = 1003;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f), positive(0.0f, 0.5f);
  for (const auto& row : optimizer_traits_table) {  // every optimizer, the switch says how
    const auto kind = row.kind;
    CAPTURE(to_string(kind));
    const auto cfg = config_for(kind);
    const float lr = 0.03f;
    const int64_t step = 5;
    const auto slots = optimizer_state_slots(kind);
    std::vector<float> p(n), g(n), s(slots * n);
    for (auto& x : p) x = value(rng);
    for (auto& x : g) x = value(rng);
    for (auto& x : s) x = kind == optimizer_kind::momentum ? value(rng) : positive(rng);

    std::vector<float> want_p = p, want_s = s;
    const float c1 = math::adam_bias_correction(cfg.beta1, step);
    const float c2 = math::adam_bias_correction(cfg.beta2, step);
    for (std::size_t i = 0; i < n; ++i) {
      switch (kind) {
        case optimizer_kind::sgd: math::sgd_step(want_p[i], g[i], lr); break;
        case optimizer_kind::momentum:
          math::momentum_step(want_p[i], want_s[i], g[i], lr, cfg.momentum);
          break;
        case optimizer_kind::adam:
          math::adam_step(want_p[i], want_s[i], want_s[n + i], g[i], lr, cfg.beta1, cfg.beta2,
                          cfg.epsilon, c1, c2);
          break;
        case optimizer_kind::adagrad:
          math::adagrad_step(want_p[i], want_s[i], g[i], lr, cfg.epsilon);
          break;
      }
    }
    auto same = [&](const std::vector<float>& got_p, const std::vector<float>& got_s) {
      CHECK(std::memcmp(got_p.data(), want_p.data(), n * sizeof(float)) == 0);
      CHECK(std::memcmp(got_s.data(), want_s.data(), s.size() * sizeof(float)) == 0);
    };
    auto in_place_p = p, in_place_s = s;
    apply_update(cfg, lr, step, in_place_p.data(), g.data(), in_place_s.data(), n);
    same(in_place_p, in_place_s);
    std::vector<float> out_p(n), out_s(s.size());
    REQUIRE(apply_update_checked(cfg, lr, step, p.data(), s.data(), g.data(), out_p.data(),
                                 out_s.data(), n, 100.0f));
    same(out_p, out_s);
    auto aliased_p = p, aliased_s = s;  // outputs on their inputs (optimizer.hpp allows it)
    REQUIRE(apply_update_checked(cfg, lr, step, aliased_p.data(), aliased_s.data(), g.data(),
                                 aliased_p.data(), aliased_s.data(), n, 100.0f));
    same(aliased_p, aliased_s);
    std::vector<float> fused_p(n), fused_s(s.size());
    REQUIRE(apply_pushed_update(cfg, lr, step, p.data(), s.data(), g.data(), fused_p.data(),
                                fused_s.data(), n, 100.0f, 10.0f) == update_check::applied);
    same(fused_p, fused_s);
  }
}

} // namespace actorps
