// The value bounds in the kernels: max_abs and all_within on the bits (NaN, inf, 3e38, −0), the
// checked dense update (bit for bit the plain one when it passes, refused when a parameter would
// overflow or leave the bound, for every optimizer), and a sparse row whose update would leave
// the bound keeping its values, state, step and touch count while the other rows apply.
#include "kernels/optimizer.hpp"
#include "kernels/sparse/sparse_table.hpp"
#include "kernels/value_bounds.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace actorps {
namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

} // namespace

TEST_CASE("max_abs and all_within see NaN, inf and 3e38 beyond any finite bound") {
  std::vector<float> v{0.5f, -2.0f, -0.0f, 1.5f};
  CHECK(max_abs(v.data(), v.size()) == 2.0f);
  CHECK(max_abs(v.data(), 0) == 0.0f);
  CHECK(all_within(v.data(), v.size(), 2.0f));
  CHECK_FALSE(all_within(v.data(), v.size(), 1.99f));
  CHECK(*first_outside(v.data(), v.size(), 1.99f) == 1);
  for (float bad : {std::nanf(""), -std::nanf(""), inf, -inf, 3e38f, -3e38f}) {
    auto w = v;
    w[2] = bad;
    CHECK_FALSE(all_within(w.data(), w.size(), default_max_gradient));
    // the widest bound still refuses NaN and inf, and lets 3e38 through
    CHECK(all_within(w.data(), w.size(), std::numeric_limits<float>::max())
          == std::isfinite(bad));
    CHECK(*first_outside(w.data(), w.size(), default_max_gradient) == 2);
  }
  CHECK(gradient_refusal(std::vector<float>{3e38f}.data(), 1, 1e6f, "block 4")
        == "gradient value 3e+38 of block 4 is beyond the bound ±1e+06");
  CHECK(invalid_bound(1e6f).empty());
  CHECK_FALSE(invalid_bound(0.0f).empty());
  CHECK_FALSE(invalid_bound(inf).empty());
  CHECK_FALSE(invalid_bound(std::nanf("")).empty());
}

TEST_CASE("a checked dense update equals the plain one bit for bit and refuses an overflow") {
  for (auto kind : {optimizer_kind::sgd, optimizer_kind::momentum, optimizer_kind::adam,
                    optimizer_kind::adagrad}) {
    CAPTURE(to_string(kind));
    optimizer_config cfg;
    cfg.kind = kind;
    const std::size_t n = 37, slots = optimizer_state_slots(kind);
    std::vector<float> p(n), g(n), s(slots * n, 0.25f);
    for (std::size_t i = 0; i < n; ++i) p[i] = 0.1f * float(i) - 1, g[i] = 0.03f * float(i % 7) - 0.1f;
    auto plain_p = p, plain_s = s;
    apply_update(cfg, 0.05f, 3, plain_p.data(), g.data(), plain_s.data(), n);
    std::vector<float> out_p(n), out_s(slots * n);
    CHECK(apply_update_checked(cfg, 0.05f, 3, p.data(), s.data(), g.data(), out_p.data(),
                               out_s.data(), n, default_max_parameter));
    CHECK(same_bits(out_p, plain_p));
    CHECK(same_bits(out_s, plain_s));
    // in place too
    auto in_p = p, in_s = s;
    CHECK(apply_update_checked(cfg, 0.05f, 3, in_p.data(), in_s.data(), g.data(), in_p.data(),
                               in_s.data(), n, default_max_parameter));
    CHECK(same_bits(in_p, plain_p));

    // A finite gradient times a huge rate overflows (sgd, momentum) or jumps past the bound
    // (adam, adagrad move a parameter by about lr): refused.
    std::vector<float> big(n, 1e6f);
    CHECK_FALSE(apply_update_checked(cfg, 3e38f, 3, p.data(), s.data(), big.data(), out_p.data(),
                                     out_s.data(), n, default_max_parameter));
    // A parameter already at the bound that a small step would push past it: refused.
    auto edge = p;
    edge[5] = default_max_parameter;
    std::vector<float> down(n, -1.0f), fresh_state(slots * n, 0.0f);
    CHECK_FALSE(apply_update_checked(cfg, 1.0f, 3, edge.data(), fresh_state.data(), down.data(),
                                     out_p.data(), out_s.data(), n, default_max_parameter));
  }
}

TEST_CASE("a sparse row whose update would leave the bound keeps its values, the rest apply") {
  for (auto kind : {row_optimizer_kind::sgd, row_optimizer_kind::adagrad,
                    row_optimizer_kind::adam, row_optimizer_kind::ftrl}) {
    CAPTURE(to_string(kind));
    sparse_table_config cfg;
    cfg.dim = 3;
    cfg.init = row_init::uniform;
    cfg.scale = 0.5f;
    cfg.optimizer.kind = kind;
    cfg.optimizer.learning_rate = 0.1f;
    sparse_table table(cfg, 7, 0);
    table.set_max_parameter(10.0f);
    std::vector<uint64_t> keys{11, 22, 33};
    std::vector<float> g{0.1f, 0.2f, 0.3f, -0.1f, 0.0f, 0.1f, 0.5f, 0.5f, 0.5f};
    CHECK(table.apply(keys.data(), keys.size(), g.data(), 1.0f) == 0);
    auto before = table.export_rows();

    // Key 11 takes a normal update; key 22 one at a huge rate, which would take its row far
    // past 10 (Adagrad, Adam and FTRL move a value by about the rate); key 44 is created.
    std::vector<uint64_t> push{11, 22, 44};
    std::vector<float> rows{0.1f, 0.1f, 0.1f, 1e6f, -1e6f, 1e6f, 0.2f, 0.2f, 0.2f};
    CHECK(table.apply(push.data(), 1, rows.data(), 1.0f) == 0);
    CHECK(table.apply(push.data() + 1, 1, rows.data() + 3, 1e30f) == 1);
    CHECK(table.apply(push.data() + 2, 1, rows.data() + 6, 1.0f) == 0);
    auto after = table.export_rows();
    REQUIRE(after.keys == std::vector<uint64_t>{11, 22, 33, 44});
    const std::size_t stride_state = before.state.size() / before.keys.size();
    // key 22 (row 1): values, state, touches and step exactly as before the refused update
    CHECK(std::memcmp(after.values.data() + 3, before.values.data() + 3, 3 * sizeof(float)) == 0);
    CHECK(std::memcmp(after.state.data() + stride_state, before.state.data() + stride_state,
                      stride_state * sizeof(float)) == 0);
    CHECK(after.touches[1] == before.touches[1]);
    if (kind == row_optimizer_kind::adam) CHECK(after.steps[1] == before.steps[1]);
    // key 11 (row 0) did take its update; every value stays within the bound
    CHECK(std::memcmp(after.values.data(), before.values.data(), 3 * sizeof(float)) != 0);
    CHECK(all_within(after.values.data(), after.values.size(), 10.0f));
  }
}

} // namespace actorps
