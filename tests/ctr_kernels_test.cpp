// The CPU backend's click-through-rate kernels (embedding gather and scatter-add, the DLRM dot
// interaction, sigmoid cross-entropy) against hand computations and central differences, then
// the whole DLRM: its layout, its gradients (dense and embedding rows) against central
// differences of an independent double-precision forward pass, predict, and a few dozen SGD
// steps on a planted problem.
#include "kernels/backend.hpp"
#include "kernels/ctr_math.hpp"
#include "kernels/dlrm.hpp"

#include "tests/backend_test_support.hpp"
#include "tests/ctr_bags_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {
namespace {

using namespace actorps::test;

/// Runs a kernel writing `out_size` floats on the CPU backend and returns them; `fill` is the
/// output's initial value (to catch a kernel that adds instead of overwriting).
template <class Op>
std::vector<float> cpu_out(backend& be, std::size_t out_size, Op op, float fill = 99.0f) {
  auto out = to_device(be, std::vector<float>(out_size, fill));
  op(out.get());
  return to_host(be, out);
}

} // namespace

TEST_CASE("ctr kernels: interaction pairs run (1,0), (2,0), (2,1), (3,0), ... and invert") {
  CHECK(math::interaction_pairs(1) == 0);
  CHECK(math::interaction_pairs(2) == 1);
  CHECK(math::interaction_pairs(27) == 351);
  int p = 0;
  for (int i = 1; i < 60; ++i) {
    for (int j = 0; j < i; ++j, ++p) {
      CAPTURE(p);
      CHECK(math::interaction_pair_index(i, j) == p);
      int gi = -1, gj = -1;
      math::interaction_pair(p, &gi, &gj);
      CHECK(gi == i);
      CHECK(gj == j);
    }
  }
}

TEST_CASE("ctr kernels: embedding_gather copies the indexed rows and rejects bad indexes") {
  auto be = make_cpu_backend();
  const std::vector<float> rows = {0, 1, 10, 11, 20, 21};  // u = 3, dim = 2
  const std::vector<int32_t> index = {2, 0, 2, 1};
  auto d_rows = to_device(*be, rows);
  auto d_index = to_device(*be, index);
  const auto out = cpu_out(*be, 8, [&](float* o) {
    be->embedding_gather(d_rows.get(), 3, 2, d_index.get(), 4, o);
  });
  CHECK(out == std::vector<float>{20, 21, 0, 1, 20, 21, 10, 11});

  for (int32_t bad : {-1, 3}) {
    auto d_bad = to_device(*be, std::vector<int32_t>{0, bad});
    std::vector<float> o(4);
    try {
      be->embedding_gather(d_rows.get(), 3, 2, d_bad.get(), 2, o.data());
      FAIL("no exception");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()) == "embedding_gather: index " + std::to_string(bad) +
                                       " of row 1 is not in [0, 3)");
    }
  }
}

TEST_CASE("ctr kernels: embedding_scatter_add zeroes the rows, then sums repeats in order") {
  auto be = make_cpu_backend();
  const std::vector<float> dout = {1, 2, 3, 4, 5, 6, 7, 8};  // n = 4, dim = 2
  const std::vector<int32_t> index = {2, 0, 2, 2};            // row 1 never hit
  auto d_dout = to_device(*be, dout);
  auto d_index = to_device(*be, index);
  const auto grad = cpu_out(*be, 6, [&](float* g) {
    be->embedding_scatter_add(d_dout.get(), d_index.get(), 4, 2, g, 3);
  });
  CHECK(grad == std::vector<float>{3, 4, 0, 0, 1 + 5 + 7, 2 + 6 + 8});

  auto d_bad = to_device(*be, std::vector<int32_t>{0, 3});
  std::vector<float> g(6);
  CHECK_THROWS_AS(be->embedding_scatter_add(d_dout.get(), d_bad.get(), 2, 2, g.data(), 3),
                  std::invalid_argument);
}

TEST_CASE("ctr kernels: dot_interaction_forward by hand") {
  auto be = make_cpu_backend();
  // n = 2 samples of t = 3 vectors of dim = 2.
  const std::vector<float> v = {1, 2,  3, 4,  5, 6,     // sample 0: a, b, c
                                -1, 0, 2, 1,  0, 3};    // sample 1
  auto d_v = to_device(*be, v);
  const auto out = cpu_out(*be, 6, [&](float* o) {
    be->dot_interaction_forward(d_v.get(), 2, 3, 2, o);
  });
  // pairs (1,0), (2,0), (2,1): b·a, c·a, c·b
  CHECK(out == std::vector<float>{3 + 8, 5 + 12, 15 + 24, -2 + 0, 0 + 0, 0 + 3});
}

TEST_CASE("ctr kernels: dot_interaction_backward by hand and against central differences") {
  auto be = make_cpu_backend();
  {
    const std::vector<float> v = {1, 2, 3, 4, 5, 6};  // one sample: a, b, c
    const std::vector<float> dout = {1, 10, 100};     // weights of b·a, c·a, c·b
    auto d_v = to_device(*be, v);
    auto d_dout = to_device(*be, dout);
    const auto dv = cpu_out(*be, 6, [&](float* g) {
      be->dot_interaction_backward(d_v.get(), d_dout.get(), 1, 3, 2, g);
    });
    // da = 1·b + 10·c, db = 1·a + 100·c, dc = 10·a + 100·b
    CHECK(dv == std::vector<float>{3 + 50, 4 + 60, 1 + 500, 2 + 600, 10 + 300, 20 + 400});
  }

  // L(v) = Σ dout ⊙ dots(v) is quadratic in v, so central differences are exact up to rounding.
  const int n = 3, t = 5, dim = 4, pairs = math::interaction_pairs(t);
  std::mt19937 rng(11);
  auto v = random_floats(rng, static_cast<std::size_t>(n) * t * dim, -1, 1);
  const auto dout = random_floats(rng, static_cast<std::size_t>(n) * pairs, -1, 1);
  auto d_dout = to_device(*be, dout);
  const auto loss = [&](const std::vector<float>& at) {
    auto d_at = to_device(*be, at);
    const auto dots = cpu_out(*be, dout.size(), [&](float* o) {
      be->dot_interaction_forward(d_at.get(), n, t, dim, o);
    });
    double sum = 0;
    for (std::size_t i = 0; i < dots.size(); ++i) sum += static_cast<double>(dout[i]) * dots[i];
    return sum;
  };
  auto d_v = to_device(*be, v);
  const auto dv = cpu_out(*be, v.size(), [&](float* g) {
    be->dot_interaction_backward(d_v.get(), d_dout.get(), n, t, dim, g);
  });
  std::vector<double> numeric(v.size());
  const float h = 1.0f / 64;  // exact in float: v ± h rounds the same way on both sides
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float saved = v[i];
    v[i] = saved + h;
    const double plus = loss(v);
    v[i] = saved - h;
    const double minus = loss(v);
    v[i] = saved;
    numeric[i] = (plus - minus) / (static_cast<double>(saved + h) - (saved - h));
  }
  check_close(dv, numeric, 1e-4, 1e-4, "dot_interaction_backward");
}

TEST_CASE("ctr kernels: the CPU interaction is bit for bit the per-element formulas the CUDA "
          "kernels run") {
  // The CPU loops run along contiguous memory to vectorise; every value must still be the sum
  // math::interaction_pair_dot / interaction_vector_grad form, in their order (so a CPU run and
  // the CUDA parity references agree exactly). Odd sizes: tails after a vector's width, t = 1
  // (no pair) and t = 2, and the DLRM shape (26 tables + the bottom MLP, dim 16).
  auto be = make_cpu_backend();
  std::mt19937 rng(23);
  for (auto [n, t, dim] : {std::array<int, 3>{3, 1, 4}, {2, 2, 1}, {5, 7, 3}, {4, 9, 13},
                           {3, 27, 16}, {2, 40, 33}}) {
    CAPTURE(n);
    CAPTURE(t);
    CAPTURE(dim);
    const int pairs = math::interaction_pairs(t);
    const auto v = random_floats(rng, static_cast<std::size_t>(n) * t * dim, -2, 2);
    const auto dout = random_floats(rng, static_cast<std::size_t>(n) * pairs, -2, 2);
    auto d_v = to_device(*be, v);
    auto d_dout = to_device(*be, dout);
    const auto dots = cpu_out(*be, static_cast<std::size_t>(n) * pairs, [&](float* o) {
      be->dot_interaction_forward(d_v.get(), n, t, dim, o);
    });
    const auto dv = cpu_out(*be, v.size(), [&](float* g) {
      be->dot_interaction_backward(d_v.get(), d_dout.get(), n, t, dim, g);
    });
    std::vector<float> want_dots(dots.size()), want_dv(dv.size());
    for (int r = 0; r < n; ++r) {
      const float* sample = v.data() + static_cast<std::size_t>(r) * t * dim;
      for (int p = 0; p < pairs; ++p)
        want_dots[static_cast<std::size_t>(r) * pairs + p] =
          math::interaction_pair_dot(sample, dim, p);
      for (int i = 0; i < t; ++i)
        for (int d = 0; d < dim; ++d)
          want_dv[(static_cast<std::size_t>(r) * t + i) * dim + d] = math::interaction_vector_grad(
            sample, dout.data() + static_cast<std::size_t>(r) * pairs, t, dim, i, d);
    }
    CHECK(std::memcmp(dots.data(), want_dots.data(), dots.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(dv.data(), want_dv.data(), dv.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("ctr kernels: sigmoid_cross_entropy by hand, at extreme logits, and its gradient") {
  auto be = make_cpu_backend();
  const std::vector<float> z = {0, 2, -3, 100, -100, 1000, -1000, 0.5f};
  const std::vector<float> y = {1, 0, 1, 0, 0, 1, 1, 0};
  auto d_z = to_device(*be, z);
  auto d_y = to_device(*be, y);
  const int n = static_cast<int>(z.size());
  device_buffer<float> dlogits(*be, z.size()), probs(*be, z.size());
  const binary_loss_stats stats =
    be->sigmoid_cross_entropy(d_z.get(), d_y.get(), n, dlogits.get(), 0.5f, probs.get());
  CHECK(stats.rows == n);
  std::vector<double> want_dlogits, want_prob;
  double want_sum = 0;
  for (int i = 0; i < n; ++i) {
    const double zi = z[i];
    // −[y ln p + (1−y) ln(1−p)] written the unstable way, where it is finite in double
    const double p = 1 / (1 + std::exp(-zi));
    const double loss = std::fabs(zi) < 50 ? -(y[i] * std::log(p) + (1 - y[i]) * std::log1p(-p))
                                           : (y[i] == 1 ? std::max(-zi, 0.0) : std::max(zi, 0.0));
    want_sum += loss;
    want_prob.push_back(p);
    want_dlogits.push_back((p - y[i]) * 0.5);
  }
  CHECK(stats.loss_sum == doctest::Approx(want_sum).epsilon(1e-6));
  CHECK(std::isfinite(stats.loss_sum));
  check_close(to_host(*be, probs), want_prob, 1e-7, 1e-6, "probs");
  check_close(to_host(*be, dlogits), want_dlogits, 1e-7, 1e-6, "dlogits");

  // Without the optional outputs: the same sum.
  CHECK(be->sigmoid_cross_entropy(d_z.get(), d_y.get(), n, nullptr, 0.5f, nullptr).loss_sum ==
        stats.loss_sum);

  // The gradient against central differences of the kernel's own loss, over moderate logits.
  std::mt19937 rng(2);
  auto zs = random_floats(rng, 50, -6, 6);
  std::vector<float> ys(zs.size());
  for (auto& label : ys) label = static_cast<float>(rng() % 2);
  auto d_ys = to_device(*be, ys);
  const auto loss = [&](const std::vector<float>& at) {
    auto d_at = to_device(*be, at);
    return be->sigmoid_cross_entropy(d_at.get(), d_ys.get(), 50, nullptr, 1.0f, nullptr).loss_sum;
  };
  auto d_zs = to_device(*be, zs);
  device_buffer<float> grad(*be, zs.size());
  be->sigmoid_cross_entropy(d_zs.get(), d_ys.get(), 50, grad.get(), 1.0f, nullptr);
  std::vector<double> numeric(zs.size());
  const float h = 1.0f / 256;
  for (std::size_t i = 0; i < zs.size(); ++i) {
    const float saved = zs[i];
    zs[i] = saved + h;
    const double plus = loss(zs);
    zs[i] = saved - h;
    const double minus = loss(zs);
    zs[i] = saved;
    numeric[i] = (plus - minus) / (2.0 * h);
  }
  check_close(to_host(*be, grad), numeric, 2e-4, 1e-3, "sigmoid_cross_entropy gradient");
}

TEST_CASE("ctr kernels: sigmoid probabilities, in place, without overflow") {
  auto be = make_cpu_backend();
  const std::vector<float> z = {0, 1, -1, 88, -88, 1000, -1000};
  const auto p = cpu_out(*be, z.size(), [&](float* out) {
    be->copy_to_device(out, z.data(), z.size() * sizeof(float));
    be->sigmoid(out, static_cast<int>(z.size()), out);
  });
  std::vector<double> want;
  for (float v : z) want.push_back(1 / (1 + std::exp(-static_cast<double>(v))));
  check_close(p, want, 1e-30, 1e-6, "sigmoid");
  CHECK(p[5] == 1.0f);
  CHECK(p[6] == 0.0f);
}

// ------------------------------------------------------------------------------------------
// DLRM

namespace {

/// One forward pass in double, written from the layout and definition in dlrm.hpp
/// independently of dlrm.cpp (its own pair loop, its own offsets).
struct reference_pass {
  double mean_loss = 0;
  std::vector<double> probs;
  double min_abs_relu_z = INFINITY;  // distance of the nearest ReLU from its kink
};

struct ctr_problem {
  dlrm_shape shape;
  int n = 0, u = 0;
  std::vector<float> params, dense, labels, rows;
  std::vector<int32_t> index;  // n×fields, in [0, u)
};

/// a (in) through the MLP with the given widths, its tensors from p[offset] (advanced); ReLU on
/// hidden layers, and on the last too if relu_last.
std::vector<double> reference_mlp(const std::vector<int>& widths, const std::vector<double>& p,
                                  std::size_t& offset, std::vector<double> a, bool relu_last,
                                  double& min_abs_relu_z) {
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const int in = widths[l], out = widths[l + 1];
    const double* w = p.data() + offset;
    const double* b = w + static_cast<std::size_t>(in) * out;
    offset += static_cast<std::size_t>(in) * out + out;
    std::vector<double> z(b, b + out);
    for (int i = 0; i < in; ++i) {
      for (int j = 0; j < out; ++j) z[j] += a[i] * w[i * out + j];
    }
    if (relu_last || l + 2 < widths.size()) {
      for (double& v : z) {
        min_abs_relu_z = std::min(min_abs_relu_z, std::fabs(v));
        v = std::max(v, 0.0);
      }
    }
    a = std::move(z);
  }
  return a;
}

reference_pass reference_forward(const ctr_problem& pr, const std::vector<double>& p,
                                 const std::vector<double>& rows) {
  const dlrm_shape& s = pr.shape;
  std::vector<int> bottom{s.dense_in}, top{s.dim + (s.fields + 1) * s.fields / 2};
  bottom.insert(bottom.end(), s.bottom.begin(), s.bottom.end());
  bottom.push_back(s.dim);
  top.insert(top.end(), s.top.begin(), s.top.end());
  top.push_back(1);
  reference_pass pass;
  double loss_sum = 0;
  for (int r = 0; r < pr.n; ++r) {
    std::size_t offset = 0;
    const float* x = pr.dense.data() + static_cast<std::size_t>(r) * s.dense_in;
    const auto x0 = reference_mlp(bottom, p, offset, std::vector<double>(x, x + s.dense_in), true,
                                  pass.min_abs_relu_z);
    std::vector<std::vector<double>> v{x0};
    for (int f = 0; f < s.fields; ++f) {
      const double* e = rows.data() + static_cast<std::size_t>(pr.index[r * s.fields + f]) * s.dim;
      v.emplace_back(e, e + s.dim);
    }
    std::vector<double> top_in = x0;
    for (std::size_t i = 1; i < v.size(); ++i) {  // the lower triangle, row by row
      for (std::size_t j = 0; j < i; ++j) {
        double dot = 0;
        for (int d = 0; d < s.dim; ++d) dot += v[i][d] * v[j][d];
        top_in.push_back(dot);
      }
    }
    const double z =
      reference_mlp(top, p, offset, top_in, false, pass.min_abs_relu_z).at(0);
    const double y = pr.labels[r];
    loss_sum += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::fabs(z)));
    pass.probs.push_back(1 / (1 + std::exp(-z)));
  }
  pass.mean_loss = loss_sum / pr.n;
  return pass;
}

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

/// A small seeded problem with non-zero biases, rows used several times each (and row u − 1
/// never, when spare_row), whose ReLU pre-activations all stay at least `margin` from the kink.
ctr_problem make_problem(const dlrm_shape& shape, int n, int u, bool spare_row, double margin) {
  for (unsigned seed = 1; seed < 2000; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    ctr_problem pr;
    pr.shape = shape;
    pr.n = n;
    pr.u = u;
    pr.params = dlrm_initial_parameters(shape, seed);
    for (float& v : pr.params) {
      if (v == 0.0f) v = 0.5f * unit(rng);  // the biases
    }
    pr.dense = random_floats(rng, static_cast<std::size_t>(n) * shape.dense_in, -1, 1);
    pr.rows = random_floats(rng, static_cast<std::size_t>(u) * shape.dim, -1, 1);
    pr.labels.resize(n);
    for (auto& y : pr.labels) y = static_cast<float>(rng() % 2);
    const int used = spare_row ? u - 1 : u;
    pr.index.resize(static_cast<std::size_t>(n) * shape.fields);
    for (std::size_t i = 0; i < pr.index.size(); ++i) {
      pr.index[i] = static_cast<int32_t>(i < static_cast<std::size_t>(used) ? i : rng() % used);
    }
    if (reference_forward(pr, as_double(pr.params), as_double(pr.rows)).min_abs_relu_z > margin) {
      return pr;
    }
  }
  FAIL("no seed below 2000 keeps the pre-activations away from the ReLU kink");
  return {};
}

dlrm_shape small_shape() {
  dlrm_shape s;
  s.dense_in = 3;
  s.fields = 3;
  s.dim = 4;
  s.bottom = {5};
  s.top = {6};
  return s;
}

/// v followed by a second copy of itself.
template <class T>
std::vector<T> twice(const std::vector<T>& v) {
  std::vector<T> both = v;
  both.insert(both.end(), v.begin(), v.end());
  return both;
}

struct gradient_report {
  std::size_t bad = 0;
  std::ostringstream first;
  void compare(const char* what, std::size_t i, double numeric, double analytic, double tol,
               double rel) {
    if (!(std::fabs(numeric - analytic) <= tol + rel * std::fabs(analytic))) {
      if (bad < 5) {
        first << "  " << what << "[" << i << "] numeric " << numeric << ", analytic " << analytic
              << "\n";
      }
      ++bad;
    }
  }
};

} // namespace

TEST_CASE("dlrm: parameter count, tensor names and shapes in layout order, validation") {
  const dlrm_shape s = small_shape();  // t = 4, pairs = 6
  CHECK(s.vectors() == 4);
  CHECK(s.pairs() == 6);
  CHECK(s.bottom_layers() == std::vector<int>{3, 5, 4});
  CHECK(s.top_layers() == std::vector<int>{10, 6, 1});
  // bottom 3·5+5 + 5·4+4, top 10·6+6 + 6·1+1
  CHECK(dlrm_parameter_count(s) == 20 + 24 + 66 + 7);
  using tensor = std::pair<std::string, std::vector<int64_t>>;
  const std::vector<tensor> want = {
    {"bottom0/kernel", {3, 5}}, {"bottom0/bias", {5}}, {"bottom1/kernel", {5, 4}},
    {"bottom1/bias", {4}},      {"top0/kernel", {10, 6}}, {"top0/bias", {6}},
    {"top1/kernel", {6, 1}},    {"top1/bias", {1}}};
  CHECK(dlrm_tensors(s) == want);

  const dlrm_shape criteo;  // the defaults: 13 dense, 26 fields of 16, 64-32 / 64-32
  CHECK(criteo.pairs() == 351);
  CHECK(dlrm_parameter_count(criteo) ==
        (13 * 64 + 64) + (64 * 32 + 32) + (32 * 16 + 16) + (367 * 64 + 64) + (64 * 32 + 32) +
          (32 * 1 + 1));
  dlrm_shape flat = s;  // no hidden layers at all
  flat.bottom.clear();
  flat.top.clear();
  CHECK(dlrm_parameter_count(flat) == (3 * 4 + 4) + (10 * 1 + 1));

  auto be = make_cpu_backend();
  for (auto broken : {&dlrm_shape::dense_in, &dlrm_shape::fields, &dlrm_shape::dim}) {
    dlrm_shape bad = s;
    bad.*broken = 0;
    CHECK_THROWS_AS(dlrm_parameter_count(bad), std::invalid_argument);
    CHECK_THROWS_AS(dlrm(*be, bad, 4), std::invalid_argument);
  }
  dlrm_shape bad_hidden = s;
  bad_hidden.top = {6, -1};
  CHECK_THROWS_AS(dlrm_tensors(bad_hidden), std::invalid_argument);
  CHECK_THROWS_AS(dlrm(*be, s, 0), std::invalid_argument);
}

TEST_CASE("dlrm_initial_parameters: seeded, He-uniform kernels, zero biases") {
  const dlrm_shape s = small_shape();
  const auto a = dlrm_initial_parameters(s, 7);
  REQUIRE(a.size() == dlrm_parameter_count(s));
  CHECK(a == dlrm_initial_parameters(s, 7));
  CHECK(a != dlrm_initial_parameters(s, 8));
  std::size_t offset = 0;
  for (const auto& [name, dims] : dlrm_tensors(s)) {
    CAPTURE(name);
    const std::size_t size = dims.size() == 2 ? dims[0] * dims[1] : dims[0];
    const auto begin = a.begin() + offset, end = begin + size;
    if (dims.size() == 1) {
      CHECK(std::all_of(begin, end, [](float v) { return v == 0.0f; }));
    } else {
      const float limit = static_cast<float>(std::sqrt(6.0 / dims[0]));
      CHECK(std::all_of(begin, end, [&](float v) { return std::fabs(v) <= limit; }));
      CHECK(std::any_of(begin, end, [](float v) { return v != 0.0f; }));
    }
    offset += size;
  }
}

TEST_CASE("dlrm gradient (dense and rows) matches central differences in double") {
  // u = 5 rows for 7·3 = 21 lookups: rows repeat, so the scatter must sum; row 4 is unused.
  const ctr_problem pr = make_problem(small_shape(), 7, 5, true, 0.02);
  auto be = make_cpu_backend();
  dlrm net(*be, pr.shape, pr.n);
  REQUIRE(net.parameter_count() == pr.params.size());
  net.set_parameters(pr.params.data());
  std::vector<float> grad(net.parameter_count(), NAN), row_grad(pr.rows.size(), NAN);
  const binary_loss_stats stats =
    net.train_step(pr.dense.data(), pr.labels.data(), pr.rows.data(), pr.u, pr.index.data(),
                   pr.n, grad.data(), row_grad.data());

  std::vector<double> p = as_double(pr.params), rows = as_double(pr.rows);
  const reference_pass base = reference_forward(pr, p, rows);
  CHECK(stats.rows == pr.n);
  CHECK(stats.loss_sum / pr.n == doctest::Approx(base.mean_loss).epsilon(1e-5));

  const double h = 1e-5;  // moves no pre-activation by more than ~h·10, below the margin
  gradient_report report;
  const auto differentiate = [&](const char* what, std::vector<double>& x,
                                 const std::vector<float>& analytic) {
    double max_abs = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double saved = x[i];
      x[i] = saved + h;
      const double plus = reference_forward(pr, p, rows).mean_loss;
      x[i] = saved - h;
      const double minus = reference_forward(pr, p, rows).mean_loss;
      x[i] = saved;
      report.compare(what, i, (plus - minus) / (2 * h), analytic[i], 1e-6, 5e-5);
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(analytic[i])));
    }
    return max_abs;
  };
  const double max_grad = differentiate("param", p, grad);
  const double max_row_grad = differentiate("row", rows, row_grad);
  INFO(report.bad << " gradients off\n" << report.first.str());
  CHECK(report.bad == 0);
  CHECK(max_grad > 1e-2);  // the comparisons are not between near-zero vectors
  CHECK(max_row_grad > 1e-2);
  const int dim = pr.shape.dim;
  CHECK(std::all_of(row_grad.end() - dim, row_grad.end(), [](float g) { return g == 0.0f; }));
}

TEST_CASE("dlrm gradient of the mean loss: a duplicated batch gives the same gradients") {
  const ctr_problem pr = make_problem(small_shape(), 7, 5, false, 0.0);
  auto be = make_cpu_backend();
  dlrm net(*be, pr.shape, 14);
  net.set_parameters(pr.params.data());
  std::vector<float> g1(net.parameter_count()), g2(g1.size());
  std::vector<float> r1(pr.rows.size()), r2(r1.size());
  const auto once = net.train_step(pr.dense.data(), pr.labels.data(), pr.rows.data(), pr.u,
                                   pr.index.data(), 7, g1.data(), r1.data());
  const auto both = net.train_step(twice(pr.dense).data(), twice(pr.labels).data(),
                                   pr.rows.data(), pr.u, twice(pr.index).data(), 14, g2.data(),
                                   r2.data());
  CHECK(both.rows == 14);
  CHECK(both.loss_sum == doctest::Approx(2 * once.loss_sum).epsilon(1e-6));
  check_close(g2, g1, 1e-6, 1e-5, "dense gradient");
  check_close(r2, r1, 1e-6, 1e-5, "row gradient");
}

TEST_CASE("dlrm on the CPU backend works in the caller's buffers: parameters in place, every "
          "gradient value written") {
  const ctr_problem pr = make_problem(small_shape(), 7, 5, false, 0.0);
  auto be = make_cpu_backend();
  REQUIRE(be->computes_in_host_memory());
  dlrm net(*be, pr.shape, 7);
  std::vector<float> probs(7);
  CHECK_THROWS_AS(net.predict(pr.dense.data(), pr.rows.data(), pr.u, pr.index.data(), 7,
                              probs.data()),
                  std::logic_error);
  std::vector<float> params = pr.params;
  net.set_parameters(params.data());
  std::vector<float> clean(net.parameter_count(), 0.0f), dirty(clean.size(), std::nanf(""));
  std::vector<float> rows_clean(pr.rows.size()), rows_dirty(pr.rows.size(), std::nanf(""));
  const auto a = net.train_step(pr.dense.data(), pr.labels.data(), pr.rows.data(), pr.u,
                                pr.index.data(), 7, clean.data(), rows_clean.data());
  const auto b = net.train_step(pr.dense.data(), pr.labels.data(), pr.rows.data(), pr.u,
                                pr.index.data(), 7, dirty.data(), rows_dirty.data());
  CHECK(a.loss_sum == b.loss_sum);
  CHECK(std::memcmp(clean.data(), dirty.data(), clean.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(rows_clean.data(), rows_dirty.data(), rows_clean.size() * sizeof(float)) == 0);
  // Read in place: a change to the caller's parameters is what the next call runs on.
  for (float& v : params) v *= 2.0f;
  const auto doubled = net.train_step(pr.dense.data(), pr.labels.data(), pr.rows.data(), pr.u,
                                      pr.index.data(), 7, dirty.data(), rows_dirty.data());
  const double want =
    reference_forward(pr, as_double(params), as_double(pr.rows)).mean_loss * 7;
  CHECK(doubled.loss_sum != a.loss_sum);
  CHECK(doubled.loss_sum == doctest::Approx(want).epsilon(1e-5));
}

TEST_CASE("dlrm predict matches the reference, in chunks, with rows shared across chunks") {
  // 23 samples in chunks of 4; u = 30 exceeds one chunk's 4·3 lookups, so the table grows.
  const ctr_problem pr = make_problem(small_shape(), 23, 30, false, 0.0);
  auto be = make_cpu_backend();
  dlrm net(*be, pr.shape, 4);
  net.set_parameters(pr.params.data());
  std::vector<float> probs(pr.n, -1.0f);
  net.predict(pr.dense.data(), pr.rows.data(), pr.u, pr.index.data(), pr.n, probs.data());
  const reference_pass ref = reference_forward(pr, as_double(pr.params), as_double(pr.rows));
  check_close(probs, ref.probs, 1e-6, 1e-5, "dlrm predict");

  // A train_step afterwards on 4 of the samples gives the same loss as their probabilities.
  std::vector<float> grad(net.parameter_count()), row_grad(pr.rows.size());
  const auto stats = net.train_step(pr.dense.data(), pr.labels.data(), pr.rows.data(), pr.u,
                                    pr.index.data(), 4, grad.data(), row_grad.data());
  double want = 0;
  for (int r = 0; r < 4; ++r) {
    want -= pr.labels[r] == 1 ? std::log(ref.probs[r]) : std::log1p(-ref.probs[r]);
  }
  CHECK(stats.loss_sum == doctest::Approx(want).epsilon(1e-5));
  net.predict(pr.dense.data(), pr.rows.data(), pr.u, pr.index.data(), 0, probs.data());
}

TEST_CASE("dlrm validates batch sizes and indexes before computing") {
  const ctr_problem pr = make_problem(small_shape(), 7, 5, false, 0.0);
  auto be = make_cpu_backend();
  dlrm net(*be, pr.shape, 7);
  net.set_parameters(pr.params.data());
  std::vector<float> grad(net.parameter_count()), row_grad(pr.rows.size()), probs(pr.n);
  const auto step = [&](const std::vector<int32_t>& index, int n) {
    net.train_step(pr.dense.data(), pr.labels.data(), pr.rows.data(), pr.u, index.data(), n,
                   grad.data(), row_grad.data());
  };
  CHECK_THROWS_AS(step(pr.index, 0), std::invalid_argument);
  CHECK_THROWS_AS(step(pr.index, 8), std::invalid_argument);
  auto bad = pr.index;
  bad[3 * 3 + 2] = 5;  // sample 3, field 2
  try {
    step(bad, 7);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "dlrm: index 5 of sample 3, field 2 is not in [0, 5)");
  }
  bad[3 * 3 + 2] = -1;
  CHECK_THROWS_AS(step(bad, 7), std::invalid_argument);
  CHECK_THROWS_AS(net.predict(pr.dense.data(), pr.rows.data(), pr.u, bad.data(), 7, probs.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(net.predict(pr.dense.data(), pr.rows.data(), pr.u, pr.index.data(), -1,
                              probs.data()),
                  std::invalid_argument);
  CHECK_NOTHROW(step(pr.index, 7));
}

TEST_CASE("dlrm: SGD on dense parameters and rows lowers the loss on a planted problem") {
  // Labels from a planted rule: a linear score of the dense features plus one planted score
  // per categorical value; 3 fields of 4 values each = 12 embedding rows, all in every batch.
  dlrm_shape s;
  s.dense_in = 4;
  s.fields = 3;
  s.dim = 4;
  s.bottom = {8};
  s.top = {8};
  const int n = 64, values = 4, u = s.fields * values;
  std::mt19937 rng(17);
  const auto w = random_floats(rng, s.dense_in, -2, 2);
  const auto value_score = random_floats(rng, u, -2, 2);
  const auto dense = random_floats(rng, static_cast<std::size_t>(n) * s.dense_in, -1, 1);
  std::vector<int32_t> index(static_cast<std::size_t>(n) * s.fields);
  std::vector<float> labels(n);
  for (int r = 0; r < n; ++r) {
    double score = 0;
    for (int i = 0; i < s.dense_in; ++i) score += w[i] * dense[r * s.dense_in + i];
    for (int f = 0; f < s.fields; ++f) {
      index[r * s.fields + f] = static_cast<int32_t>(f * values + rng() % values);
      score += value_score[index[r * s.fields + f]];
    }
    labels[r] = score > 0 ? 1.0f : 0.0f;
  }
  auto params = dlrm_initial_parameters(s, 3);
  auto rows = random_floats(rng, static_cast<std::size_t>(u) * s.dim, -0.5f, 0.5f);

  auto be = make_cpu_backend();
  dlrm net(*be, s, n);
  std::vector<float> grad(net.parameter_count()), row_grad(rows.size());
  const float lr = 0.5f;
  std::vector<double> losses;
  for (int step = 0; step < 40; ++step) {
    net.set_parameters(params.data());
    const auto stats = net.train_step(dense.data(), labels.data(), rows.data(), u, index.data(),
                                      n, grad.data(), row_grad.data());
    losses.push_back(stats.loss_sum / n);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] -= lr * grad[i];
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] -= lr * row_grad[i];
  }
  INFO("loss " << losses.front() << " → " << losses.back());
  CHECK(losses.back() < 0.6 * losses.front());
  CHECK(losses.back() < losses[losses.size() / 2]);
}

// ------------------------------------------------------------------------------------------
// Multi-hot bags and sample weights

TEST_CASE("ctr kernels: embedding_bag_pool sums or averages each bag, empty bags give zeros") {
  auto be = make_cpu_backend();
  const std::vector<float> rows = {1, 2, 10, 20, 100, 200};  // u = 3, dim 2
  const std::vector<int32_t> index = {0, 2, 1, 1, 2};
  const std::vector<int32_t> offsets = {0, 2, 2, 5};        // bags {0, 2}, {}, {1, 1, 2}
  const std::vector<float> scale = {1.0f, 0.0f, 1.0f / 3};
  std::vector<float> out(6, 99.0f);
  be->embedding_bag_pool(rows.data(), 3, 2, index.data(), offsets.data(), scale.data(), 3,
                         out.data());
  CHECK(out == std::vector<float>{101, 202, 0, 0, 120.0f / 3, 240.0f / 3});
  // The adjoint before the scatter: each key of bag b gets scale[b]·dout[b].
  const std::vector<float> dout = {1, -1, 5, 5, 3, 6};
  std::vector<float> dkeys(10, 99.0f);
  be->embedding_bag_expand(dout.data(), offsets.data(), scale.data(), 3, 2, dkeys.data());
  CHECK(dkeys == std::vector<float>{1, -1, 1, -1, 1, 2, 1, 2, 1, 2});
  std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> w = {2, 0.5f};
  be->scale_rows(x.data(), w.data(), 2, 2);
  CHECK(x == std::vector<float>{2, 4, 1.5f, 2});
  const std::vector<int32_t> bad = {0, 3, 1, 1, 2};
  CHECK_THROWS_WITH_AS(be->embedding_bag_pool(rows.data(), 3, 2, bad.data(), offsets.data(),
                                              scale.data(), 3, out.data()),
                       doctest::Contains("is not in [0, 3)"), std::invalid_argument);
  std::vector<float> s;
  ctr_bag_scales(offsets.data(), 1, 3, {0, 1, 1}, s);
  CHECK(s == std::vector<float>{1.0f, 0.0f, 1.0f / 3});
}

TEST_CASE("dlrm pooled gradient (one-hot and multi-hot bags, sum and mean, sample weights) "
          "matches central differences in double") {
  struct bag_case {
    const char* name;
    std::vector<int> lengths;
    std::vector<uint8_t> mean;
    bool weighted;
  };
  const std::vector<bag_case> cases = {
    {"one-hot, mixed pooling, weights", {1}, {1, 0, 1}, true},
    {"multi-hot sum, empty bags", {2, 0, 3, 1}, {0, 0, 0}, false},
    {"multi-hot mean, empty bags, weights", {3, 1, 0, 2, 4}, {1, 1, 1}, true},
  };
  for (const auto& c : cases) {
    INFO(std::string(c.name));
    const int n = 7, u = 6;
    const ctr_problem base = make_problem(small_shape(), n, u, true, 0.02);  // bottom MLP's margin
    const auto bags = test::make_test_bags(n, base.shape.fields, c.lengths, c.mean);
    std::mt19937 rng(11);
    std::vector<float> weights(n, 1.0f);
    if (c.weighted)
      for (auto& w : weights) w = 0.5f + static_cast<float>(rng() % 4) * 0.5f;
    ctr_problem pooled = base;  // one row per bag, read in order
    pooled.u = n * base.shape.fields;
    pooled.index.resize(static_cast<std::size_t>(pooled.u));
    for (int i = 0; i < pooled.u; ++i) pooled.index[i] = i;
    std::vector<int32_t> index;
    const auto loss = [&](const std::vector<double>& p, const std::vector<double>& rows,
                          double* margin) {
      const auto pass =
        reference_forward(pooled, p, test::pool_in_double(bags, index, rows, base.shape.dim));
      if (margin) *margin = pass.min_abs_relu_z;
      double sum = 0;
      for (int r = 0; r < n; ++r) {
        const double q = pass.probs[r], y = base.labels[r];
        sum += weights[r] * -(y * std::log(q) + (1 - y) * std::log(1 - q));
      }
      return sum / n;
    };
    double margin = 0;
    for (int tries = 0; tries < 200 && margin <= 0.02; ++tries) {
      index = test::random_bag_index(rng, bags, u - 1);  // row u − 1: never used
      loss(as_double(base.params), as_double(base.rows), &margin);
    }
    REQUIRE(margin > 0.02);

    auto be = make_cpu_backend();
    dlrm net(*be, base.shape, n);
    net.set_parameters(base.params.data());
    std::vector<float> grad(net.parameter_count(), NAN), row_grad(base.rows.size(), NAN);
    const ctr_bags view = bags.view();
    const auto stats =
      net.train_step(base.dense.data(), base.labels.data(), base.rows.data(), u, index.data(), n,
                     grad.data(), row_grad.data(), &view, c.weighted ? weights.data() : nullptr);
    std::vector<double> p = as_double(base.params), rows = as_double(base.rows);
    CHECK(stats.loss_sum / n == doctest::Approx(loss(p, rows, nullptr)).epsilon(1e-5));

    const double h = 1e-5;
    gradient_report report;
    const auto differentiate = [&](const char* what, std::vector<double>& x,
                                   const std::vector<float>& analytic) {
      double max_abs = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + h;
        const double plus = loss(p, rows, nullptr);
        x[i] = saved - h;
        const double minus = loss(p, rows, nullptr);
        x[i] = saved;
        report.compare(what, i, (plus - minus) / (2 * h), analytic[i], 1e-6, 5e-5);
        max_abs = std::max(max_abs, std::fabs(static_cast<double>(analytic[i])));
      }
      return max_abs;
    };
    const double max_grad = differentiate("param", p, grad);
    const double max_row_grad = differentiate("row", rows, row_grad);
    INFO(report.bad << " gradients off\n" << report.first.str());
    CHECK(report.bad == 0);
    CHECK(max_grad > 1e-2);
    CHECK(max_row_grad > 1e-3);
    const int dim = base.shape.dim;
    CHECK(std::all_of(row_grad.end() - dim, row_grad.end(), [](float g) { return g == 0.0f; }));
  }
}

TEST_CASE("dlrm predict with bags: the same logits whole and in chunks, as train_step's loss") {
  const int n = 9, u = 6;
  const ctr_problem base = make_problem(small_shape(), n, u, false, 0.0);
  const auto bags = test::make_test_bags(n, base.shape.fields, {2, 0, 1, 3}, {1, 0, 1});
  std::mt19937 rng(5);
  const auto index = test::random_bag_index(rng, bags, u);
  const ctr_bags view = bags.view();
  auto be = make_cpu_backend();
  dlrm whole(*be, base.shape, n), chunks(*be, base.shape, 4);
  whole.set_parameters(base.params.data());
  chunks.set_parameters(base.params.data());
  std::vector<float> a(n), b(n);
  whole.predict_logits(base.dense.data(), base.rows.data(), u, index.data(), n, a.data(), &view);
  chunks.predict_logits(base.dense.data(), base.rows.data(), u, index.data(), n, b.data(), &view);
  check_close(b, a, 1e-6, 1e-5, "chunked bag logits");
  double loss = 0;
  for (int r = 0; r < n; ++r)
    loss += math::sigmoid_cross_entropy(a[r], base.labels[r], 0.0f, nullptr, nullptr);
  std::vector<float> grad(whole.parameter_count()), row_grad(base.rows.size());
  const auto stats = whole.train_step(base.dense.data(), base.labels.data(), base.rows.data(), u,
                                      index.data(), n, grad.data(), row_grad.data(), &view);
  CHECK(stats.loss_sum == doctest::Approx(loss).epsilon(1e-6));
}

} // namespace actorps
