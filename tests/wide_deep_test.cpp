// Wide & Deep and DeepFM (kernels/wide_deep.hpp) on the CPU backend: the layout, the FM
// kernels against the sum of DLRM's pairwise dots, the gradients (dense and both tables)
// against central differences of a double-precision reference, and chunked prediction.
#include "kernels/backend.hpp"
#include "kernels/ctr_math.hpp"
#include "kernels/wide_deep.hpp"

#include "tests/backend_test_support.hpp"
#include "tests/ctr_bags_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <vector>

namespace actorps {
namespace {

using namespace actorps::test;

struct wd_problem {
  wide_deep_shape shape;
  int n = 0, u = 0, uw = 0;
  std::vector<float> params, dense, labels, rows, weights;
  std::vector<int32_t> index, windex;  // n×fields each
};

struct wd_reference {
  double mean_loss = 0;
  std::vector<double> logits;
  double min_abs_relu_z = INFINITY;  // distance of the nearest ReLU from its kink
};

/// The model in double, written from the formulas of kernels/wide_deep.hpp, pair by pair.
wd_reference reference_forward(const wd_problem& pr, const std::vector<double>& p,
                               const std::vector<double>& rows,
                               const std::vector<double>& weights) {
  const wide_deep_shape& s = pr.shape;
  const auto widths = s.deep_layers();
  wd_reference ref;
  double loss_sum = 0;
  for (int r = 0; r < pr.n; ++r) {
    const float* x = pr.dense.data() + static_cast<std::size_t>(r) * s.dense_in;
    std::vector<std::vector<double>> e;
    std::vector<double> a;
    double z = 0;
    for (int f = 0; f < s.fields; ++f) {
      const double* row = rows.data() + static_cast<std::size_t>(pr.index[r * s.fields + f]) * s.dim;
      e.emplace_back(row, row + s.dim);
      a.insert(a.end(), row, row + s.dim);
      z += weights[pr.windex[r * s.fields + f]];
    }
    for (int j = 0; j < s.dense_in; ++j) {
      a.push_back(x[j]);
      z += p[j] * x[j];  // linear/kernel
    }
    if (s.fm) {
      for (int i = 1; i < s.fields; ++i)
        for (int j = 0; j < i; ++j)
          for (int d = 0; d < s.dim; ++d) z += e[i][d] * e[j][d];
    }
    std::size_t offset = static_cast<std::size_t>(s.dense_in);
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      const int in = widths[l], out = widths[l + 1];
      const double* w = p.data() + offset;
      const double* b = w + static_cast<std::size_t>(in) * out;
      offset += static_cast<std::size_t>(in) * out + out;
      std::vector<double> next(b, b + out);
      for (int i = 0; i < in; ++i)
        for (int j = 0; j < out; ++j) next[j] += a[i] * w[i * out + j];
      if (l + 2 < widths.size()) {
        for (double& v : next) {
          ref.min_abs_relu_z = std::min(ref.min_abs_relu_z, std::fabs(v));
          v = std::max(v, 0.0);
        }
      }
      a = std::move(next);
    }
    z += a.at(0);
    const double y = pr.labels[r];
    loss_sum += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::fabs(z)));
    ref.logits.push_back(z);
  }
  ref.mean_loss = loss_sum / pr.n;
  return ref;
}

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

wide_deep_shape small_shape(bool fm) {
  wide_deep_shape s;
  s.dense_in = 3;
  s.fields = 4;
  s.dim = 3;
  s.hidden = {6, 5};
  s.fm = fm;
  return s;
}

/// A seeded problem: every parameter non-zero, rows of both tables used several times (the
/// last of each never), ReLU pre-activations at least `margin` from the kink.
wd_problem make_problem(const wide_deep_shape& shape, int n, int u, int uw, double margin) {
  for (unsigned seed = 1; seed < 2000; ++seed) {
    std::mt19937 rng(seed);
    wd_problem pr;
    pr.shape = shape;
    pr.n = n;
    pr.u = u;
    pr.uw = uw;
    pr.params = random_floats(rng, wide_deep_parameter_count(shape), -0.6f, 0.6f);
    pr.dense = random_floats(rng, static_cast<std::size_t>(n) * shape.dense_in, -1, 1);
    pr.rows = random_floats(rng, static_cast<std::size_t>(u) * shape.dim, -1, 1);
    pr.weights = random_floats(rng, static_cast<std::size_t>(uw), -1, 1);
    pr.labels.resize(n);
    for (auto& y : pr.labels) y = static_cast<float>(rng() % 2);
    const std::size_t lookups = static_cast<std::size_t>(n) * shape.fields;
    pr.index.resize(lookups);
    pr.windex.resize(lookups);
    for (std::size_t i = 0; i < lookups; ++i) {
      pr.index[i] = static_cast<int32_t>(i < std::size_t(u - 1) ? i : rng() % (u - 1));
      pr.windex[i] = static_cast<int32_t>(rng() % (uw - 1));
    }
    const auto ref =
      reference_forward(pr, as_double(pr.params), as_double(pr.rows), as_double(pr.weights));
    if (ref.min_abs_relu_z > margin) return pr;
  }
  FAIL("no seed below 2000 keeps the pre-activations away from the ReLU kink");
  return {};
}

ctr_rows embeddings_of(const wd_problem& pr) { return {pr.rows.data(), pr.u, pr.index.data()}; }
ctr_rows weights_of(const wd_problem& pr) { return {pr.weights.data(), pr.uw, pr.windex.data()}; }

} // namespace

TEST_CASE("wide_deep: parameter count, tensor names and shapes in layout order, validation") {
  const wide_deep_shape s = small_shape(false);
  CHECK(s.deep_layers() == std::vector<int>{15, 6, 5, 1});
  CHECK(wide_deep_parameter_count(s) == 3 + (15 * 6 + 6) + (6 * 5 + 5) + (5 * 1 + 1));
  using tensor = std::pair<std::string, std::vector<int64_t>>;
  const std::vector<tensor> want = {{"linear/kernel", {3, 1}}, {"deep0/kernel", {15, 6}},
                                    {"deep0/bias", {6}},       {"deep1/kernel", {6, 5}},
                                    {"deep1/bias", {5}},       {"deep2/kernel", {5, 1}},
                                    {"deep2/bias", {1}}};
  CHECK(wide_deep_tensors(s) == want);
  wide_deep_shape flat = s;
  flat.hidden.clear();
  CHECK(wide_deep_parameter_count(flat) == 3 + 15 + 1);
  auto be = make_cpu_backend();
  for (auto broken : {&wide_deep_shape::dense_in, &wide_deep_shape::fields, &wide_deep_shape::dim}) {
    wide_deep_shape bad = s;
    bad.*broken = 0;
    CHECK_THROWS_AS(wide_deep_parameter_count(bad), std::invalid_argument);
    CHECK_THROWS_AS(wide_deep(*be, bad, 4), std::invalid_argument);
  }
  wide_deep_shape bad_hidden = s;
  bad_hidden.hidden = {6, 0};
  CHECK_THROWS_AS(wide_deep_tensors(bad_hidden), std::invalid_argument);
  CHECK_THROWS_AS(wide_deep(*be, s, 0), std::invalid_argument);
}

TEST_CASE("ctr kernels: the FM term is the sum of the pairwise dots, its gradient theirs") {
  auto be = make_cpu_backend();
  struct shape { int n, t, dim; };
  for (shape s : {shape{1, 2, 1}, shape{7, 26, 16}, shape{5, 3, 9}}) {
    CAPTURE(s.t); CAPTURE(s.dim);
    std::mt19937 rng(static_cast<unsigned>(s.t * 31 + s.dim));
    const int pairs = math::interaction_pairs(s.t);
    const auto vectors = random_floats(rng, static_cast<std::size_t>(s.n) * s.t * s.dim, -1, 1);
    const auto dout = random_floats(rng, static_cast<std::size_t>(s.n), -1, 1);
    std::vector<float> dots(static_cast<std::size_t>(s.n) * pairs), fm(s.n, 99.0f);
    be->dot_interaction_forward(vectors.data(), s.n, s.t, s.dim, dots.data());
    be->fm_interaction_forward(vectors.data(), s.n, s.t, s.dim, fm.data());
    // The pairs' gradient is dout for every pair of the sample: dot_interaction_backward then
    // gives what the FM's backward must.
    std::vector<float> ddots(dots.size()), want_grad(vectors.size()), grad(vectors.size(), 99.0f);
    std::vector<double> want(s.n, 0.0);
    for (int r = 0; r < s.n; ++r) {
      for (int p = 0; p < pairs; ++p) {
        want[r] += dots[static_cast<std::size_t>(r) * pairs + p];
        ddots[static_cast<std::size_t>(r) * pairs + p] = dout[r];
      }
    }
    be->dot_interaction_backward(vectors.data(), ddots.data(), s.n, s.t, s.dim,
                                 want_grad.data());
    be->fm_interaction_backward(vectors.data(), dout.data(), s.n, s.t, s.dim, grad.data());
    check_close(fm, want, 1e-5 * s.t * s.dim, 1e-5, "fm_interaction_forward");
    check_close(grad, want_grad, 1e-5 * s.t, 1e-5, "fm_interaction_backward");
  }
}

TEST_CASE("wide_deep gradient (dense, embeddings, wide weights) matches central differences") {
  for (bool fm : {false, true}) {
    CAPTURE(fm);
    // 7·4 = 28 lookups of 6 embedding rows and 5 weights: rows repeat, so the scatters must
    // sum; the last row of each table is never used.
    const wd_problem pr = make_problem(small_shape(fm), 7, 6, 5, 0.02);
    auto be = make_cpu_backend();
    wide_deep net(*be, pr.shape, pr.n);
    REQUIRE(net.parameter_count() == pr.params.size());
    net.set_parameters(pr.params.data());
    std::vector<float> grad(net.parameter_count(), NAN), row_grad(pr.rows.size(), NAN),
      weight_grad(pr.weights.size(), NAN);
    const binary_loss_stats stats =
      net.train_step(pr.dense.data(), pr.labels.data(), embeddings_of(pr), weights_of(pr), pr.n,
                     grad.data(), row_grad.data(), weight_grad.data());

    std::vector<double> p = as_double(pr.params), rows = as_double(pr.rows),
                        weights = as_double(pr.weights);
    const wd_reference base = reference_forward(pr, p, rows, weights);
    CHECK(stats.rows == pr.n);
    CHECK(stats.loss_sum / pr.n == doctest::Approx(base.mean_loss).epsilon(1e-5));

    const double h = 1e-5;
    std::size_t bad = 0;
    std::ostringstream first;
    const auto differentiate = [&](const char* what, std::vector<double>& x,
                                   const std::vector<float>& analytic) {
      double max_abs = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + h;
        const double plus = reference_forward(pr, p, rows, weights).mean_loss;
        x[i] = saved - h;
        const double minus = reference_forward(pr, p, rows, weights).mean_loss;
        x[i] = saved;
        const double numeric = (plus - minus) / (2 * h);
        if (!(std::fabs(numeric - analytic[i]) <= 1e-6 + 5e-5 * std::fabs(analytic[i]))) {
          if (bad++ < 5) first << "  " << what << "[" << i << "] numeric " << numeric
                               << ", analytic " << analytic[i] << "\n";
        }
        max_abs = std::max(max_abs, std::fabs(static_cast<double>(analytic[i])));
      }
      return max_abs;
    };
    const double max_grad = differentiate("param", p, grad);
    const double max_row_grad = differentiate("row", rows, row_grad);
    const double max_weight_grad = differentiate("weight", weights, weight_grad);
    INFO(bad << " gradients off\n" << first.str());
    CHECK(bad == 0);
    CHECK(max_grad > 1e-2);  // the comparisons are not between near-zero vectors
    CHECK(max_row_grad > 1e-2);
    CHECK(max_weight_grad > 1e-2);
    const int dim = pr.shape.dim;
    CHECK(std::all_of(row_grad.end() - dim, row_grad.end(), [](float g) { return g == 0.0f; }));
    CHECK(weight_grad.back() == 0.0f);
  }
}

TEST_CASE("wide_deep predict matches the reference in chunks and validates its input") {
  for (bool fm : {false, true}) {
    CAPTURE(fm);
    const wd_problem pr = make_problem(small_shape(fm), 23, 9, 7, 0.0);
    auto be = make_cpu_backend();
    wide_deep net(*be, pr.shape, 5);  // chunks of 5, 5, 5, 5, 3
    net.set_parameters(pr.params.data());
    std::vector<float> z(pr.n, NAN), probs(pr.n, NAN);
    net.predict_logits(pr.dense.data(), embeddings_of(pr), weights_of(pr), pr.n, z.data());
    net.predict(pr.dense.data(), embeddings_of(pr), weights_of(pr), pr.n, probs.data());
    const auto ref =
      reference_forward(pr, as_double(pr.params), as_double(pr.rows), as_double(pr.weights));
    check_close(z, ref.logits, 1e-5, 1e-5, "wide_deep logits");
    std::vector<double> want(pr.n);
    for (int r = 0; r < pr.n; ++r) want[r] = 1 / (1 + std::exp(-ref.logits[r]));
    check_close(probs, want, 1e-6, 1e-5, "wide_deep probabilities");

    std::vector<float> grad(net.parameter_count()), rg(pr.rows.size()), wg(pr.weights.size());
    CHECK_THROWS_AS(net.train_step(pr.dense.data(), pr.labels.data(), embeddings_of(pr),
                                   weights_of(pr), 6, grad.data(), rg.data(), wg.data()),
                    std::invalid_argument);
    auto broken = pr;
    broken.windex[9] = pr.uw;  // sample 2, field 1
    try {
      net.predict(broken.dense.data(), embeddings_of(broken), weights_of(broken), broken.n,
                  probs.data());
      FAIL("an index past the wide table's rows was taken");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("wide index 7 of sample 2, field 1") != std::string::npos);
    }
  }
}

} // namespace actorps

namespace actorps {
namespace {

using namespace actorps::test;

/// One bagged case: bag lengths, which fields pool by the mean, sample weights or none.
struct bag_case {
  const char* name;
  std::vector<int> lengths;
  std::vector<uint8_t> mean;
  bool weighted;
};

} // namespace

TEST_CASE("wide_deep pooled gradient (one-hot and multi-hot bags, sum and mean, sample weights) "
          "matches central differences") {
  // The reference pools each bag in double (tests/ctr_bags_support.hpp) and runs the
  // single-key reference on the pools; the loss is Σ_r w_r·loss_r / n.
  const std::vector<bag_case> cases = {
    {"one-hot, mixed pooling, weights", {1}, {1, 0, 1, 0}, true},
    {"multi-hot sum, empty bags", {2, 0, 3, 1, 4}, {0, 0, 0, 0}, false},
    {"multi-hot mean, empty bags, weights", {3, 1, 0, 2}, {1, 1, 1, 1}, true},
  };
  for (bool fm : {false, true}) {
    for (const auto& c : cases) {
      CAPTURE(fm);
      INFO(std::string(c.name));
      const int n = 6, u = 9, uw = 8;
      const wd_problem base = make_problem(small_shape(fm), n, u, uw, 0.0);
      const auto bags = make_test_bags(n, base.shape.fields, c.lengths, c.mean);
      std::mt19937 rng(7);
      std::vector<float> sample_weights(n, 1.0f);
      if (c.weighted)
        for (auto& w : sample_weights) w = 0.5f + static_cast<float>(rng() % 4) * 0.5f;
      // a pooled problem: one row per bag, read in order
      wd_problem pooled = base;
      pooled.u = pooled.uw = n * base.shape.fields;
      pooled.index.resize(static_cast<std::size_t>(pooled.u));
      for (int i = 0; i < pooled.u; ++i) pooled.index[i] = i;
      pooled.windex = pooled.index;
      std::vector<int32_t> index, windex;
      const auto loss = [&](const std::vector<double>& p, const std::vector<double>& rows,
                            const std::vector<double>& weights, double* margin) {
        const auto ref =
          reference_forward(pooled, p, pool_in_double(bags, index, rows, base.shape.dim),
                            pool_in_double(bags, windex, weights, 1));
        if (margin) *margin = ref.min_abs_relu_z;
        double sum = 0;
        for (int r = 0; r < n; ++r) {
          const double z = ref.logits[r], y = base.labels[r];
          sum += sample_weights[r]
                 * (std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::fabs(z))));
        }
        return sum / n;
      };
      double margin = 0;
      for (int tries = 0; tries < 200 && margin <= 0.02; ++tries) {  // keys away from ReLU kinks
        index = random_bag_index(rng, bags, u - 1);  // the last row of each table: never used
        windex = random_bag_index(rng, bags, uw - 1);
        loss(as_double(base.params), as_double(base.rows), as_double(base.weights), &margin);
      }
      REQUIRE(margin > 0.02);

      auto be = make_cpu_backend();
      wide_deep net(*be, base.shape, n);
      net.set_parameters(base.params.data());
      std::vector<float> grad(net.parameter_count(), NAN), row_grad(base.rows.size(), NAN),
        weight_grad(base.weights.size(), NAN);
      const ctr_bags view = bags.view();
      const auto stats = net.train_step(
        base.dense.data(), base.labels.data(), {base.rows.data(), u, index.data()},
        {base.weights.data(), uw, windex.data()}, n, grad.data(), row_grad.data(),
        weight_grad.data(), &view, c.weighted ? sample_weights.data() : nullptr);

      std::vector<double> p = as_double(base.params), rows = as_double(base.rows),
                          weights = as_double(base.weights);
      CHECK(stats.loss_sum / n == doctest::Approx(loss(p, rows, weights, nullptr)).epsilon(1e-5));
      const double h = 1e-5;
      std::size_t bad = 0;
      std::ostringstream first;
      const auto differentiate = [&](const char* what, std::vector<double>& x,
                                     const std::vector<float>& analytic) {
        double max_abs = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double saved = x[i];
          x[i] = saved + h;
          const double plus = loss(p, rows, weights, nullptr);
          x[i] = saved - h;
          const double minus = loss(p, rows, weights, nullptr);
          x[i] = saved;
          const double numeric = (plus - minus) / (2 * h);
          if (!(std::fabs(numeric - analytic[i]) <= 1e-6 + 5e-5 * std::fabs(analytic[i]))) {
            if (bad++ < 5) first << "  " << what << "[" << i << "] numeric " << numeric
                                 << ", analytic " << analytic[i] << "\n";
          }
          max_abs = std::max(max_abs, std::fabs(static_cast<double>(analytic[i])));
        }
        return max_abs;
      };
      const double max_grad = differentiate("param", p, grad);
      const double max_row_grad = differentiate("row", rows, row_grad);
      const double max_weight_grad = differentiate("weight", weights, weight_grad);
      INFO(bad << " gradients off\n" << first.str());
      CHECK(bad == 0);
      CHECK(max_grad > 1e-2);
      CHECK(max_row_grad > 1e-3);
      CHECK(max_weight_grad > 1e-3);
    }
  }
}

TEST_CASE("wide_deep predict with bags: the same logits whole and in chunks, a bad key refused") {
  const wd_problem base = make_problem(small_shape(true), 9, 9, 8, 0.0);
  const auto bags = make_test_bags(9, base.shape.fields, {2, 0, 1, 3}, {1, 0, 0, 1});
  std::mt19937 rng(3);
  const auto index = random_bag_index(rng, bags, 9);
  const auto windex = random_bag_index(rng, bags, 8);
  const ctr_rows embeddings{base.rows.data(), 9, index.data()}, wide{base.weights.data(), 8,
                                                                     windex.data()};
  const ctr_bags view = bags.view();
  auto be = make_cpu_backend();
  wide_deep whole(*be, base.shape, 9), chunks(*be, base.shape, 4);
  whole.set_parameters(base.params.data());
  chunks.set_parameters(base.params.data());
  std::vector<float> a(9), b(9);
  whole.predict_logits(base.dense.data(), embeddings, wide, 9, a.data(), &view);
  chunks.predict_logits(base.dense.data(), embeddings, wide, 9, b.data(), &view);
  check_close(b, a, 1e-6, 1e-5, "chunked bag logits");
  // a key outside its table is refused before any work
  auto bad = index;
  bad.back() = 9;
  CHECK_THROWS_WITH_AS(whole.predict_logits(base.dense.data(), {base.rows.data(), 9, bad.data()},
                                            wide, 9, a.data(), &view),
                       doctest::Contains("is not in [0, 9)"), std::invalid_argument);
}

} // namespace actorps
