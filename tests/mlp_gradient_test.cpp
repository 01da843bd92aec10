// The MLP's analytic gradient against central finite differences, checked two ways: on an
// independent double-precision forward pass (tight bound), and on the MLP's own float forward
// through evaluate() (float bound). Plus the MLP's bookkeeping and the parameter initialiser.
#include "kernels/mlp.hpp"
#include "kernels/parameter_init.hpp"

#include "tests/mlp_reference.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace actorps {
namespace {

/// One forward pass in double, written from the layout in mlp.hpp independently of mlp.cpp.
struct reference_pass {
  double mean_loss = 0;
  double min_abs_hidden_z = INFINITY;  // distance of the nearest ReLU from its kink
  std::vector<bool> active;            // which hidden units fired, row by row
};

reference_pass reference_forward(const std::vector<int>& layers, const std::vector<double>& p,
                                 const std::vector<float>& x, const std::vector<int32_t>& y,
                                 int n) {
  reference_pass pass;
  double loss_sum = 0;
  for (int r = 0; r < n; ++r) {
    const auto logits =
      test::reference_logits(layers, p, x.data() + r * layers[0], [&](double z) {
        pass.min_abs_hidden_z = std::min(pass.min_abs_hidden_z, std::fabs(z));
        pass.active.push_back(z > 0);
      });
    loss_sum += test::reference_log_sum_exp(logits) - logits[y[r]];
  }
  pass.mean_loss = loss_sum / n;
  return pass;
}

struct problem {
  std::vector<int> layers;
  std::vector<float> params;
  std::vector<float> x;
  std::vector<int32_t> y;
  int n = 0;
};

/// A small seeded problem with random (non-zero) biases whose hidden pre-activations all stay
/// at least `margin` away from the ReLU kink, so finite differences never straddle one.
problem make_problem(const std::vector<int>& layers, int n, double margin) {
  for (unsigned seed = 1; seed < 1000; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    problem pr;
    pr.layers = layers;
    pr.n = n;
    pr.params = initial_parameters(layers, seed);
    for (float& v : pr.params) {
      if (v == 0.0f) v = 0.5f * unit(rng);  // the biases
    }
    pr.x.resize(static_cast<std::size_t>(n) * layers[0]);
    for (float& v : pr.x) v = unit(rng);
    pr.y.resize(n);
    for (auto& label : pr.y) label = static_cast<int32_t>(rng() % layers.back());
    const std::vector<double> p(pr.params.begin(), pr.params.end());
    if (reference_forward(layers, p, pr.x, pr.y, n).min_abs_hidden_z > margin) return pr;
  }
  FAIL("no seed below 1000 keeps the pre-activations away from the ReLU kink");
  return {};
}

struct gradient_report {
  std::size_t bad = 0;
  std::ostringstream first;
  void compare(std::size_t i, double numeric, double analytic, double tol, double rel) {
    if (!(std::fabs(numeric - analytic) <= tol + rel * std::fabs(analytic))) {
      if (bad < 5) first << "  [" << i << "] numeric " << numeric << ", analytic " << analytic << "\n";
      ++bad;
    }
  }
};

} // namespace

TEST_CASE("mlp gradient matches central differences of a double-precision forward pass") {
  const problem pr = make_problem({7, 5, 4, 3}, 4, 0.05);
  auto be = make_cpu_backend();
  mlp net(*be, pr.layers, pr.n);
  REQUIRE(net.parameter_count() == 79);  // 7·5+5 + 5·4+4 + 4·3+3
  net.set_parameters(pr.params.data());
  std::vector<float> grad(net.parameter_count(), NAN);
  const loss_stats stats = net.train_step(pr.x.data(), pr.y.data(), pr.n, grad.data());

  std::vector<double> p(pr.params.begin(), pr.params.end());
  const reference_pass base = reference_forward(pr.layers, p, pr.x, pr.y, pr.n);
  CHECK(stats.rows == pr.n);
  CHECK(stats.loss_sum / pr.n == doctest::Approx(base.mean_loss).epsilon(1e-5));

  // h moves no pre-activation by more than ~h·10, far below the 0.05 margin.
  const double h = 1e-5;
  gradient_report report;
  double max_abs_grad = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double saved = p[i];
    p[i] = saved + h;
    const double plus = reference_forward(pr.layers, p, pr.x, pr.y, pr.n).mean_loss;
    p[i] = saved - h;
    const double minus = reference_forward(pr.layers, p, pr.x, pr.y, pr.n).mean_loss;
    p[i] = saved;
    report.compare(i, (plus - minus) / (2 * h), grad[i], 1e-6, 2e-5);
    max_abs_grad = std::max(max_abs_grad, std::fabs(static_cast<double>(grad[i])));
  }
  INFO(report.bad << " of " << p.size() << " gradients off\n" << report.first.str());
  CHECK(report.bad == 0);
  CHECK(max_abs_grad > 1e-2);  // the comparison is not between two near-zero vectors
}

TEST_CASE("mlp gradient matches central differences of its own float loss") {
  const problem pr = make_problem({7, 5, 4, 3}, 4, 0.05);
  auto be = make_cpu_backend();
  mlp net(*be, pr.layers, pr.n);
  std::vector<float> params = pr.params;
  net.set_parameters(params.data());
  std::vector<float> grad(net.parameter_count());
  net.train_step(pr.x.data(), pr.y.data(), pr.n, grad.data());
  const std::vector<double> base_p(params.begin(), params.end());
  const auto base_active = reference_forward(pr.layers, base_p, pr.x, pr.y, pr.n).active;

  gradient_report report;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const float saved = params[i];
    const float up = saved + 1e-3f, down = saved - 1e-3f;
    for (float v : {up, down}) {  // the double pass confirms no ReLU changed state
      std::vector<double> q = base_p;
      q[i] = v;
      REQUIRE(reference_forward(pr.layers, q, pr.x, pr.y, pr.n).active == base_active);
    }
    params[i] = up;
    net.set_parameters(params.data());
    const double plus = net.evaluate(pr.x.data(), pr.y.data(), pr.n).loss_sum / pr.n;
    params[i] = down;
    net.set_parameters(params.data());
    const double minus = net.evaluate(pr.x.data(), pr.y.data(), pr.n).loss_sum / pr.n;
    params[i] = saved;
    report.compare(i, (plus - minus) / (static_cast<double>(up) - down), grad[i], 2e-3, 2e-2);
  }
  INFO(report.bad << " of " << params.size() << " gradients off\n" << report.first.str());
  CHECK(report.bad == 0);
}

TEST_CASE("mlp evaluate agrees with train_step and chunks by max_batch") {
  const problem pr = make_problem({7, 5, 4, 3}, 10, 0.0);
  auto be = make_cpu_backend();
  mlp whole(*be, pr.layers, 10);
  mlp chunked(*be, pr.layers, 3);  // 10 rows → chunks of 3, 3, 3, 1
  whole.set_parameters(pr.params.data());
  chunked.set_parameters(pr.params.data());

  std::vector<float> grad(whole.parameter_count());
  const loss_stats trained = whole.train_step(pr.x.data(), pr.y.data(), pr.n, grad.data());
  const loss_stats evaluated = whole.evaluate(pr.x.data(), pr.y.data(), pr.n);
  CHECK(evaluated.loss_sum == trained.loss_sum);
  CHECK(evaluated.correct == trained.correct);
  CHECK(evaluated.rows == 10);

  const loss_stats in_chunks = chunked.evaluate(pr.x.data(), pr.y.data(), pr.n);
  CHECK(in_chunks.rows == 10);
  CHECK(in_chunks.correct == evaluated.correct);
  CHECK(in_chunks.loss_sum == doctest::Approx(evaluated.loss_sum).epsilon(1e-6));
  const std::vector<double> p(pr.params.begin(), pr.params.end());
  CHECK(in_chunks.loss_sum / 10 ==
        doctest::Approx(reference_forward(pr.layers, p, pr.x, pr.y, 10).mean_loss).epsilon(1e-5));

  const loss_stats none = chunked.evaluate(pr.x.data(), pr.y.data(), 0);
  CHECK(none.rows == 0);
  CHECK(none.loss_sum == 0.0);
}

TEST_CASE("mlp gradient is of the mean loss: a duplicated batch gives the same gradient") {
  const problem pr = make_problem({7, 5, 4, 3}, 4, 0.0);
  auto be = make_cpu_backend();
  mlp net(*be, pr.layers, 8);
  net.set_parameters(pr.params.data());
  std::vector<float> x2 = pr.x, grad(net.parameter_count()), grad2(net.parameter_count());
  x2.insert(x2.end(), pr.x.begin(), pr.x.end());
  std::vector<int32_t> y2 = pr.y;
  y2.insert(y2.end(), pr.y.begin(), pr.y.end());
  const loss_stats once = net.train_step(pr.x.data(), pr.y.data(), 4, grad.data());
  const loss_stats twice = net.train_step(x2.data(), y2.data(), 8, grad2.data());
  CHECK(twice.loss_sum == doctest::Approx(2 * once.loss_sum).epsilon(1e-6));
  for (std::size_t i = 0; i < grad.size(); ++i) {
    CAPTURE(i);
    CHECK(grad2[i] == doctest::Approx(grad[i]).epsilon(1e-5).scale(1e-6));
  }
}

TEST_CASE("mlp on the CPU backend works in the caller's buffers: no copy of the parameters, "
          "every gradient value written") {
  const problem pr = make_problem({7, 5, 4, 3}, 4, 0.0);
  auto be = make_cpu_backend();
  REQUIRE(be->computes_in_host_memory());
  mlp net(*be, pr.layers, 4);
  CHECK_THROWS_AS(net.evaluate(pr.x.data(), pr.y.data(), pr.n), std::logic_error);
  std::vector<float> params = pr.params;
  net.set_parameters(params.data());
  const double before = net.evaluate(pr.x.data(), pr.y.data(), pr.n).loss_sum;
  // Read in place: a change to the caller's buffer is what the next call runs on (a copying
  // backend would still run on the copy it took).
  for (std::size_t i = 0; i < params.size(); ++i) params[i] *= 2.0f;
  const double doubled = net.evaluate(pr.x.data(), pr.y.data(), pr.n).loss_sum;
  const std::vector<double> p2(params.begin(), params.end());
  CHECK(doubled != before);
  CHECK(doubled / pr.n ==
        doctest::Approx(reference_forward(pr.layers, p2, pr.x, pr.y, pr.n).mean_loss).epsilon(1e-5));

  // The gradient goes straight into the caller's buffer: whatever it held is overwritten, NaN
  // included (BLAS with beta 0 and the bias sums must not read it).
  std::vector<float> clean(net.parameter_count(), 0.0f);
  std::vector<float> dirty(net.parameter_count(), std::nanf(""));
  net.train_step(pr.x.data(), pr.y.data(), pr.n, clean.data());
  net.train_step(pr.x.data(), pr.y.data(), pr.n, dirty.data());
  CHECK(std::memcmp(clean.data(), dirty.data(), clean.size() * sizeof(float)) == 0);
}

TEST_CASE("mlp validates its arguments") {
  auto be = make_cpu_backend();
  CHECK_THROWS_AS(mlp(*be, {7}, 4), std::invalid_argument);
  CHECK_THROWS_AS(mlp(*be, {}, 4), std::invalid_argument);
  CHECK_THROWS_AS(mlp(*be, {7, 0, 3}, 4), std::invalid_argument);
  CHECK_THROWS_AS(mlp(*be, {7, -5, 3}, 4), std::invalid_argument);
  CHECK_THROWS_AS(mlp(*be, {7, 3}, 0), std::invalid_argument);
  mlp net(*be, {2, 3}, 2);
  std::vector<float> params(net.parameter_count(), 0.1f), grad(net.parameter_count());
  net.set_parameters(params.data());
  const std::vector<float> x(6, 0.5f);
  const std::vector<int32_t> y(3, 1);
  CHECK_THROWS_AS(net.train_step(x.data(), y.data(), 3, grad.data()), std::invalid_argument);
  CHECK_THROWS_AS(net.train_step(x.data(), y.data(), 0, grad.data()), std::invalid_argument);
  CHECK_NOTHROW(net.train_step(x.data(), y.data(), 2, grad.data()));
}

TEST_CASE("mlp_parameter_count") {
  CHECK(mlp_parameter_count({784, 256, 128, 10}) == 235146);
  CHECK(mlp_parameter_count({7, 5, 4, 3}) == 79);
  CHECK(mlp_parameter_count({3, 2}) == 8);
}

TEST_CASE("initial_parameters: seeded He-uniform kernels, zero biases") {
  const std::vector<int> layers = {784, 256, 128, 10};
  const auto a = initial_parameters(layers, 42);
  const auto b = initial_parameters(layers, 42);
  const auto c = initial_parameters(layers, 43);
  REQUIRE(a.size() == mlp_parameter_count(layers));
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  CHECK(a != c);

  std::size_t offset = 0;
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    CAPTURE(l);
    const std::size_t in = layers[l], out = layers[l + 1];
    const float limit = static_cast<float>(std::sqrt(6.0 / in));
    double sum = 0, max_abs = 0;
    std::size_t out_of_range = 0;
    for (std::size_t i = 0; i < in * out; ++i) {
      const float v = a[offset + i];
      out_of_range += !(std::fabs(v) <= limit);
      sum += v;
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(v)));
    }
    CHECK(out_of_range == 0);
    CHECK(max_abs > 0.95 * limit);                        // spans the range...
    CHECK(std::fabs(sum / (in * out)) < 0.05 * limit);    // ...around zero
    offset += in * out;
    const bool biases_zero = std::all_of(a.begin() + offset, a.begin() + offset + out,
                                         [](float v) { return v == 0.0f; });
    CHECK(biases_zero);
    offset += out;
  }
}

TEST_CASE("initial_parameters: pinned bits (same on every platform)") {
  // splitmix64(seed 1), top 24 bits → (2u − 1)·sqrt(6/2), worked out outside C++; a change
  // here changes every run's starting point.
  const auto p = initial_parameters({2, 2}, 1);
  REQUIRE(p.size() == 6);
  uint32_t bits[4];
  std::memcpy(bits, p.data(), sizeof(bits));
  CHECK(bits[0] == 0x3e6c1c15u);
  CHECK(bits[1] == 0x3f59f631u);
  CHECK(bits[2] == 0x3fd0d84fu);
  CHECK(bits[3] == 0xbe455f10u);
  CHECK(p[4] == 0.0f);
  CHECK(p[5] == 0.0f);
}

} // namespace actorps
