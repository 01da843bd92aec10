// The row optimizers against values worked out step by step by an independent reference (the
// formulas in double precision, in Python), on rows of two or three values.
#include "kernels/math.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace actorps {
namespace {

/// Within 1e-6, absolute for values below 1 and relative above: float rounding over a few
/// steps, nothing looser.
doctest::Approx near(double expected) { return doctest::Approx(expected).epsilon(1e-6).scale(1); }

/// A config whose learning rate times the lr_scale of 0.25 the tests pass is 0.1 (exactly
/// 0.1f), so the tests prove both are used.
row_optimizer_config config_for(row_optimizer_kind kind) {
  row_optimizer_config cfg;
  cfg.kind = kind;
  cfg.learning_rate = 0.4f;
  return cfg;
}
constexpr float lr_scale = 0.25f;

/// FTRL-proximal with these alpha (the learning rate), beta, l1 and l2.
row_optimizer_config ftrl(float alpha, float beta, float l1, float l2) {
  row_optimizer_config cfg;
  cfg.kind = row_optimizer_kind::ftrl;
  cfg.learning_rate = alpha;
  cfg.ftrl_beta = beta;
  cfg.l1 = l1;
  cfg.l2 = l2;
  return cfg;
}

} // namespace

TEST_CASE("row optimizer names round-trip, unknown names are rejected, slots, steps and rates") {
  for (const auto& row : row_optimizer_traits_table) {
    const auto parsed = parse_row_optimizer_kind(to_string(row.kind));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == row.kind);
    CHECK(default_row_learning_rate(row.kind) == 0.05f);
  }
  CHECK(row_optimizer_names() == "sgd, adagrad, adam or ftrl");
  CHECK_FALSE(parse_row_optimizer_kind("momentum").has_value());  // dense only
  CHECK_FALSE(parse_row_optimizer_kind("FTRL").has_value());
  CHECK(row_state_slots(row_optimizer_kind::sgd) == 0);
  CHECK(row_state_slots(row_optimizer_kind::adagrad) == 1);
  CHECK(row_state_slots(row_optimizer_kind::adam) == 2);
  CHECK(row_state_slots(row_optimizer_kind::ftrl) == 2);
  // Only Adam's bias correction needs each row's own count of updates.
  CHECK_FALSE(row_counts_steps(row_optimizer_kind::sgd));
  CHECK_FALSE(row_counts_steps(row_optimizer_kind::adagrad));
  CHECK(row_counts_steps(row_optimizer_kind::adam));
  CHECK_FALSE(row_counts_steps(row_optimizer_kind::ftrl));
}

TEST_CASE("row optimizer settings out of range are refused by name") {
  auto refused = [](row_optimizer_kind kind, auto&& edit, const char* field) {
    row_optimizer_config cfg;
    cfg.kind = kind;
    edit(cfg);
    CAPTURE(field);
    CHECK_THROWS_WITH_AS(validate_row_optimizer(cfg), doctest::Contains(field),
                         std::invalid_argument);
  };
  using k = row_optimizer_kind;
  refused(k::sgd, [](auto& c) { c.learning_rate = 0; }, "learning_rate");
  refused(k::sgd, [](auto& c) { c.learning_rate = NAN; }, "learning_rate");
  refused(k::adagrad, [](auto& c) { c.epsilon = -1; }, "epsilon");
  refused(k::adagrad, [](auto& c) { c.initial_accumulator = -0.1f; }, "initial_accumulator");
  refused(k::adagrad, [](auto& c) { c.initial_accumulator = 0; c.epsilon = 0; },
          "initial_accumulator");
  refused(k::adam, [](auto& c) { c.beta1 = 1; }, "beta1");
  refused(k::adam, [](auto& c) { c.beta2 = -0.5f; }, "beta2");
  refused(k::ftrl, [](auto& c) { c.l1 = -1; }, "l1");
  refused(k::ftrl, [](auto& c) { c.l2 = INFINITY; }, "l2");
  refused(k::ftrl, [](auto& c) { c.ftrl_beta = 0; c.l2 = 0; }, "ftrl_beta");
  for (auto kind : {k::sgd, k::adagrad, k::adam, k::ftrl}) {
    row_optimizer_config defaults;
    defaults.kind = kind;
    CHECK_NOTHROW(validate_row_optimizer(defaults));
  }
}

TEST_CASE("row optimizer sgd: p -= lr g") {
  const auto cfg = config_for(row_optimizer_kind::sgd);
  std::vector<float> p = {1.0f, -2.0f};
  const std::vector<std::vector<float>> grads = {{0.5f, 0.25f}, {-0.5f, 1.0f}, {2.0f, -4.0f}};
  const double expected[3][2] = {{0.95, -2.025}, {1.0, -2.125}, {0.8, -1.725}};
  for (int s = 0; s < 3; ++s) {
    CAPTURE(s);
    apply_row_update(cfg, lr_scale, s + 1, p.data(), grads[s].data(), nullptr, 2);
    CHECK(p[0] == near(expected[s][0]));
    CHECK(p[1] == near(expected[s][1]));
  }
}

TEST_CASE("row optimizer adagrad: the accumulator starts at initial_accumulator") {
  auto cfg = config_for(row_optimizer_kind::adagrad);
  cfg.initial_accumulator = 0.1f;
  std::vector<float> p = {1.0f, 3.0f};
  std::vector<float> acc(2, -1.0f);
  init_row_state(cfg, p.data(), acc.data(), 2);
  CHECK(acc == std::vector<float>{0.1f, 0.1f});
  // acc 0.35 → p = 1 − 0.05/√0.35;  a zero gradient (element 1, step 3) moves nothing.
  const std::vector<std::vector<float>> grads = {{0.5f, -2.0f}, {0.5f, 1.0f}, {-1.0f, 0.0f}};
  const double acc_expected[3][2] = {{0.35, 4.1}, {0.6, 5.1}, {1.6, 5.1}};
  const double p_expected[3][2] = {{0.915484576, 3.098772959},
                                   {0.850934854, 3.054492215},
                                   {0.929991795, 3.054492215}};
  for (int s = 0; s < 3; ++s) {
    CAPTURE(s);
    apply_row_update(cfg, lr_scale, s + 1, p.data(), grads[s].data(), acc.data(), 2);
    for (int i = 0; i < 2; ++i) {
      CHECK(acc[i] == near(acc_expected[s][i]));
      CHECK(p[i] == near(p_expected[s][i]));
    }
  }
}

TEST_CASE("row optimizer adam: bias correction from the row's own step, m then v") {
  auto cfg = config_for(row_optimizer_kind::adam);
  cfg.beta1 = 0.5f;  // exact in float, so the reference's decimals apply as they are
  cfg.beta2 = 0.75f;
  cfg.epsilon = 1e-8f;
  std::vector<float> p = {1.0f, -2.0f};
  std::vector<float> state(4, 7.0f);  // m0 m1 v0 v1
  init_row_state(cfg, p.data(), state.data(), 2);
  CHECK(state == std::vector<float>(4, 0.0f));
  const std::vector<std::vector<float>> grads = {{0.5f, -0.1f}, {-0.25f, -0.1f}, {0.5f, 0.3f}};
  // Step 1 moves each value by lr·sign(g); at step 2 element 0's m is exactly 0 (no move).
  const double p_expected[3][2] = {
      {0.9, -1.9}, {0.9, -1.8}, {0.834312343, -1.860884043}};
  const double m_expected[3][2] = {{0.25, -0.05}, {0.0, -0.075}, {0.25, 0.1125}};
  const double v_expected[3][2] = {{0.0625, 0.0025}, {0.0625, 0.004375}, {0.109375, 0.02578125}};
  for (uint32_t step = 1; step <= 3; ++step) {
    CAPTURE(step);
    apply_row_update(cfg, lr_scale, step, p.data(), grads[step - 1].data(), state.data(), 2);
    for (int i = 0; i < 2; ++i) {
      CHECK(p[i] == near(p_expected[step - 1][i]));
      CHECK(state[i] == near(m_expected[step - 1][i]));
      CHECK(state[2 + i] == near(v_expected[step - 1][i]));
    }
  }

  SUBCASE("a row first updated at its 4th step is corrected for t = 4, not 1") {
    std::vector<float> q = {1.0f, -2.0f}, fresh(4, 0.0f);
    apply_row_update(cfg, lr_scale, 4, q.data(), grads[0].data(), fresh.data(), 2);
    CHECK(q[0] == near(0.911808293));
    CHECK(q[1] == near(-1.911808304));
  }
  SUBCASE("step 0 is refused") {
    CHECK_THROWS_AS(apply_row_update(cfg, lr_scale, 0, p.data(), grads[0].data(), state.data(), 2),
                    std::invalid_argument);
  }
}

TEST_CASE("row optimizer ftrl: McMahan et al. 2013 from zero weights, l1 gives exact zeros") {
  const auto cfg = ftrl(0.5f, 1.0f, 0.2f, 0.1f);  // alpha, beta, l1, l2
  std::vector<float> w(3, 0.0f), state(6, 9.0f);  // z0 z1 z2 n0 n1 n2
  init_row_state(cfg, w.data(), state.data(), 3);
  CHECK(state == std::vector<float>(6, 0.0f));
  // Element 0's z never leaves [−l1, l1]: its weight stays exactly 0 while z and n move.
  const std::vector<std::vector<float>> grads = {
      {0.05f, 1.0f, -0.6f}, {-0.1f, 0.5f, -0.4f}, {0.08f, -0.3f, 0.9f}, {0.02f, 0.7f, 0.1f}};
  const double w_expected[4][3] = {{0.0, -0.195121951, 0.121212121},
                                   {0.0, -0.310433797, 0.234135639},
                                   {0.0, -0.242486203, 0.029892488},
                                   {0.0, -0.388151115, 0.007243290}};
  const double z_expected[4][3] = {{0.05, 1.0, -0.6},
                                   {-0.05, 1.546062044, -1.029360062},
                                   {0.03, 1.270617172, -0.331721623},
                                   {0.05, 2.065279535, -0.231980339}};
  const double n_expected[4][3] = {
      {0.0025, 1.0, 0.36}, {0.0125, 1.25, 0.52}, {0.0189, 1.34, 1.33}, {0.0193, 1.83, 1.34}};
  for (int s = 0; s < 4; ++s) {
    CAPTURE(s);
    apply_row_update(cfg, 1.0f, s + 1, w.data(), grads[s].data(), state.data(), 3);
    CHECK(w[0] == 0.0f);  // exactly, not approximately
    for (int i = 0; i < 3; ++i) {
      CAPTURE(i);
      CHECK(w[i] == near(w_expected[s][i]));
      CHECK(state[i] == near(z_expected[s][i]));
      CHECK(state[3 + i] == near(n_expected[s][i]));
    }
  }
}

TEST_CASE("row optimizer ftrl: a push's share scales its gradient, not the weight") {
  // ssp and async apply each push with lr_scale = 1 / live workers. alpha divides FTRL's whole
  // weight, so a share taken as alpha made a row's weight follow its last push's share: pushed
  // at 1/3 many times, then once at 1 (the other workers done), it jumped to about 3 times.
  const auto cfg = ftrl(0.2f, 1.0f, 0.0f, 0.0f);  // alpha, beta, l1, l2
  std::vector<float> w(2, 0.0f), state(4, 0.0f), scaled_w(2, 0.0f), scaled_state(4, 0.0f);
  const std::vector<float> g = {0.4f, -0.3f};
  const std::vector<float> g_third = {0.4f / 3, -0.3f / 3};
  for (int k = 0; k < 50; ++k) {
    apply_row_update(cfg, 1.0f / 3, 0, w.data(), g.data(), state.data(), 2);
    apply_row_update(cfg, 1.0f, 0, scaled_w.data(), g_third.data(), scaled_state.data(), 2);
  }
  for (int i = 0; i < 2; ++i) {  // a share is the gradient times it
    CHECK(w[i] == near(scaled_w[i]));
    CHECK(state[i] == near(scaled_state[i]));
  }
  const std::vector<float> tiny = {1e-6f, -1e-6f};
  const auto before = w;
  apply_row_update(cfg, 1.0f, 0, w.data(), tiny.data(), state.data(), 2);
  for (int i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(std::abs(before[i]) > 0.1f);
    CHECK(std::abs(w[i] - before[i]) < 1e-3f * std::abs(before[i]));
  }
}

TEST_CASE("row optimizer ftrl: z starts where the weight formula gives back the initial values") {
  const auto cfg = ftrl(0.5f, 1.0f, 0.2f, 0.1f);  // alpha, beta, l1, l2
  std::vector<float> w = {0.3f, -0.7f, 0.0f}, state(6, 9.0f);
  init_row_state(cfg, w.data(), state.data(), 3);
  // z = −w·(beta/alpha + l2) − sign(w)·l1, n = 0.
  CHECK(state[0] == near(-0.83));
  CHECK(state[1] == near(1.67));
  CHECK(state[2] == 0.0f);
  for (int i = 0; i < 3; ++i) {
    CHECK(state[3 + i] == 0.0f);
    CHECK(math::ftrl_weight(state[i], 0.0f, 0.5f, 1.0f, 0.2f, 0.1f) == near(w[i]));
  }
  // One step from there matches the paper's update with w = the initial values.
  const std::vector<float> g = {0.5f, -0.25f, 0.0f};
  apply_row_update(cfg, 1.0f, 1, w.data(), g.data(), state.data(), 3);
  CHECK(w[0] == near(0.138709677));
  CHECK(w[1] == near(-0.603846154));
  CHECK(w[2] == 0.0f);
  CHECK(state[0] == near(-0.63));
  CHECK(state[1] == near(1.77));
}

} // namespace actorps
