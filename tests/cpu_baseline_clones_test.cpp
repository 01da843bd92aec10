// The loops cloned for AVX2 (kernels/cpu_clones.hpp) run their AVX2 clone on this machine and in
// CI; the baseline x86-64 clone, what an older CPU runs, is built a second time for the tests
// (baseline_twins/) and must give the same bits on the same inputs: the same IEEE operations
// on every element, in the same order, whatever the vector width.
#include "kernels/cpu_interaction.hpp"
#include "kernels/optimizer.hpp"
#include "tests/baseline_twins/baseline_twins.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace actorps;

namespace {

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

std::vector<float> uniform(std::size_t n, std::mt19937& rng, float low, float high) {
  std::uniform_real_distribution<float> value(low, high);
  std::vector<float> out(n);
  for (auto& x : out) x = value(rng);
  return out;
}

optimizer_config config_for(optimizer_kind kind) {
  optimizer_config cfg;
  cfg.kind = kind;
  cfg.momentum = 0.9f;
  cfg.beta1 = 0.9f;
  cfg.beta2 = 0.999f;
  cfg.epsilon = 1e-8f;
  return cfg;
}

baseline_twins::optimizer twin_of(const optimizer_config& cfg) {
  return {static_cast<int>(cfg.kind), cfg.momentum, cfg.beta1, cfg.beta2, cfg.epsilon};
}

} // namespace

TEST_CASE("the baseline clone of the CPU interaction gives the dispatched clone's bits") {
  std::mt19937 rng(11);
  // t: one vector (no pairs), odd and even counts, DLRM's 27; dim: below, at and past 8 and 16
  // (the vector widths), with tails.
  for (int t : {1, 2, 3, 6, 27}) {
    for (int dim : {1, 3, 8, 13, 16, 33}) {
      CAPTURE(t);
      CAPTURE(dim);
      const int n = 3, pairs = t * (t - 1) / 2;
      const auto vectors = uniform(std::size_t(n) * t * dim, rng, -1.0f, 1.0f);
      const auto dout = uniform(std::size_t(n) * pairs, rng, -1.0f, 1.0f);
      std::vector<float> scratch(cpu_interaction_scratch(t, dim));
      std::vector<float> twin_scratch(baseline_twins::interaction_scratch(t, dim));
      REQUIRE(scratch.size() == twin_scratch.size());

      std::vector<float> out(std::size_t(n) * pairs, -7.0f), twin_out(out);
      cpu_interaction_forward(vectors.data(), n, t, dim, out.data(), scratch.data());
      baseline_twins::interaction_forward(vectors.data(), n, t, dim, twin_out.data(),
                                          twin_scratch.data());
      CHECK(same_bits(out, twin_out));

      std::vector<float> grad(vectors.size(), -7.0f), twin_grad(grad);
      cpu_interaction_backward(vectors.data(), dout.data(), n, t, dim, grad.data(), scratch.data());
      baseline_twins::interaction_backward(vectors.data(), dout.data(), n, t, dim,
                                           twin_grad.data(), twin_scratch.data());
      CHECK(same_bits(grad, twin_grad));
    }
  }
}

TEST_CASE("the baseline clones of the checked optimizer updates give the dispatched clones' bits, "
          "and find the same bounds crossed") {
  // 1 003 elements: the vector body and a tail at either width.
  const std::size_t n = 1003;
  std::mt19937 rng(5);
  for (auto kind : {optimizer_kind::sgd, optimizer_kind::momentum, optimizer_kind::adam,
                    optimizer_kind::adagrad}) {
    CAPTURE(to_string(kind));
    const auto cfg = config_for(kind);
    const auto twin = twin_of(cfg);
    const float lr = 0.03f;
    const int64_t step = 5;
    const auto slots = optimizer_state_slots(kind);
    const auto p = uniform(n, rng, -1.0f, 1.0f);
    auto g = uniform(n, rng, -1.0f, 1.0f);
    const auto s = kind == optimizer_kind::momentum ? uniform(slots * n, rng, -1.0f, 1.0f)
                                                    : uniform(slots * n, rng, 0.0f, 0.5f);

    std::vector<float> out_p(n), out_s(s.size()), twin_p(n), twin_s(s.size());
    REQUIRE(apply_update_checked(cfg, lr, step, p.data(), s.data(), g.data(), out_p.data(),
                                 out_s.data(), n, 100.0f));
    REQUIRE(baseline_twins::apply_update_checked(twin, lr, step, p.data(), s.data(), g.data(),
                                                 twin_p.data(), twin_s.data(), n, 100.0f));
    CHECK(same_bits(out_p, twin_p));
    CHECK(same_bits(out_s, twin_s));

    REQUIRE(apply_pushed_update(cfg, lr, step, p.data(), s.data(), g.data(), out_p.data(),
                                out_s.data(), n, 100.0f, 10.0f) == update_check::applied);
    REQUIRE(baseline_twins::apply_pushed_update(twin, lr, step, p.data(), s.data(), g.data(),
                                                twin_p.data(), twin_s.data(), n, 100.0f, 10.0f)
            == static_cast<int>(update_check::applied));
    CHECK(same_bits(out_p, twin_p));
    CHECK(same_bits(out_s, twin_s));

    // The bounds: updates past a tight parameter bound, then one gradient value (NaN, in the
    // vector body) beyond its own; both clones must see each.
    CHECK_FALSE(baseline_twins::apply_update_checked(twin, lr, step, p.data(), s.data(), g.data(),
                                                     twin_p.data(), twin_s.data(), n, 1e-3f));
    CHECK_FALSE(apply_update_checked(cfg, lr, step, p.data(), s.data(), g.data(), out_p.data(),
                                     out_s.data(), n, 1e-3f));
    g[17] = std::numeric_limits<float>::quiet_NaN();
    CHECK(apply_pushed_update(cfg, lr, step, p.data(), s.data(), g.data(), out_p.data(),
                              out_s.data(), n, 100.0f, 10.0f) == update_check::gradient_beyond);
    CHECK(baseline_twins::apply_pushed_update(twin, lr, step, p.data(), s.data(), g.data(),
                                              twin_p.data(), twin_s.data(), n, 100.0f, 10.0f)
          == static_cast<int>(update_check::gradient_beyond));
  }
}
