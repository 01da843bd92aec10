// Every backend kernel against a naive double-precision reference on seeded random inputs,
// plus flush-to-zero. Data moves through allocate/copy so the same checks suit any backend.
#include "kernels/backend.hpp"
#include "kernels/denormals.hpp"

#include "tests/backend_test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace actorps {
namespace {

using namespace actorps::test;


// c = alpha · op(a) · op(b) + beta · c in double, with the same row-major / ld conventions.
std::vector<double> reference_gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha,
                                   const std::vector<float>& a, int lda,
                                   const std::vector<float>& b, int ldb, double beta,
                                   const std::vector<float>& c, int ldc) {
  std::vector<double> out(c.begin(), c.end());
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const double aip = trans_a ? a[p * lda + i] : a[i * lda + p];
        const double bpj = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        sum += aip * bpj;
      }
      out[i * ldc + j] = alpha * sum + beta * c[i * ldc + j];
    }
  }
  return out;
}

} // namespace

TEST_CASE("cpu backend: name and 64-byte aligned allocations round-trip through copies") {
  auto be = make_cpu_backend();
  CHECK(be->name() == "cpu");
  for (std::size_t n : {1u, 3u, 17u, 1000u}) {
    std::mt19937 rng(static_cast<unsigned>(n));
    const auto host = random_floats(rng, n, -1, 1);
    auto buf = to_device(*be, host);
    CHECK(reinterpret_cast<std::uintptr_t>(buf.get()) % 64 == 0);
    CHECK(to_host(*be, buf) == host);
  }
}

TEST_CASE("gemm matches a double reference in all transpose combinations") {
  auto be = make_cpu_backend();
  const int m = 7, n = 5, k = 13;
  const float alpha = 0.75f, beta = -1.25f;
  const float sentinel = 12345.0f;
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      CAPTURE(trans_a);
      CAPTURE(trans_b);
      std::mt19937 rng(100 + 2 * trans_a + trans_b);
      // Stored shapes: op(a) is (m, k), op(b) is (k, n); lds exceed the row length.
      const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
      const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
      const int lda = a_cols + 3, ldb = b_cols + 2, ldc = n + 4;
      const auto a = random_floats(rng, static_cast<std::size_t>(a_rows) * lda, -1, 1);
      const auto b = random_floats(rng, static_cast<std::size_t>(b_rows) * ldb, -1, 1);
      auto c = random_floats(rng, static_cast<std::size_t>(m) * ldc, -1, 1);
      for (int i = 0; i < m; ++i) {
        for (int j = n; j < ldc; ++j) c[i * ldc + j] = sentinel;  // padding must survive
      }
      const auto ref = reference_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                                      ldc);
      auto da = to_device(*be, a), db = to_device(*be, b), dc = to_device(*be, c);
      be->gemm(trans_a, trans_b, m, n, k, alpha, da.get(), lda, db.get(), ldb, beta, dc.get(),
               ldc);
      check_close(to_host(*be, dc), ref, 1e-5, 1e-5, "gemm");
    }
  }
}

TEST_CASE("gemm with beta = 0 overwrites c even when it holds NaN") {
  // The MLP writes into uninitialised buffers with beta = 0.
  auto be = make_cpu_backend();
  const int m = 3, n = 4, k = 6;
  std::mt19937 rng(7);
  const auto a = random_floats(rng, m * k, -2, 2);
  const auto b = random_floats(rng, k * n, -2, 2);
  const std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN());
  const auto ref = reference_gemm(false, false, m, n, k, 1.0, a, k, b, n, 0.0,
                                  std::vector<float>(m * n, 0.0f), n);
  auto da = to_device(*be, a), db = to_device(*be, b), dc = to_device(*be, c);
  be->gemm(false, false, m, n, k, 1.0f, da.get(), k, db.get(), n, 0.0f, dc.get(), n);
  check_close(to_host(*be, dc), ref, 1e-5, 1e-5, "gemm beta=0");
}

TEST_CASE("bias_activation_forward adds the bias per column, then applies the activation") {
  auto be = make_cpu_backend();
  const int rows = 6, cols = 11;
  std::mt19937 rng(11);
  const auto z = random_floats(rng, rows * cols, -2, 2);
  const auto bias = random_floats(rng, cols, -1, 1);
  auto dbias = to_device(*be, bias);
  for (activation act : {activation::identity, activation::relu}) {
    const bool relu = act == activation::relu;
    CAPTURE(relu);
    std::vector<double> ref(z.size());
    int clipped = 0;
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) {
        const double v = static_cast<double>(z[i * cols + j]) + bias[j];
        ref[i * cols + j] = relu && v < 0 ? 0.0 : v;
        clipped += relu && v < 0;
      }
    }
    if (relu) CHECK(clipped > 5);  // the data exercises both sides of the kink
    auto dz = to_device(*be, z);
    be->bias_activation_forward(dz.get(), dbias.get(), rows, cols, act);
    check_close(to_host(*be, dz), ref, 1e-6, 1e-6, "bias_activation_forward");
  }
}

TEST_CASE("activation_backward masks by the forward output for relu, keeps dz for identity") {
  auto be = make_cpu_backend();
  const std::size_t n = 37;
  std::mt19937 rng(13);
  const auto dz = random_floats(rng, n, -3, 3);
  auto out = random_floats(rng, n, -1, 1);
  for (auto& o : out) o = o < 0 ? 0.0f : o;  // a relu output: zeros and positives
  auto dout = to_device(*be, out);
  for (activation act : {activation::identity, activation::relu}) {
    const bool relu = act == activation::relu;
    CAPTURE(relu);
    std::vector<double> ref(n);
    for (std::size_t i = 0; i < n; ++i) ref[i] = relu && out[i] <= 0 ? 0.0 : dz[i];
    auto ddz = to_device(*be, dz);
    be->activation_backward(ddz.get(), dout.get(), n, act);
    check_close(to_host(*be, ddz), ref, 0, 0, "activation_backward");
  }
}

TEST_CASE("bias_backward sums dz over rows") {
  auto be = make_cpu_backend();
  const int rows = 9, cols = 7;
  std::mt19937 rng(17);
  const auto dz = random_floats(rng, rows * cols, -1, 1);
  std::vector<double> ref(cols, 0.0);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) ref[j] += dz[i * cols + j];
  }
  auto ddz = to_device(*be, dz);
  device_buffer<float> db(*be, cols);
  be->copy_to_device(db.get(), std::vector<float>(cols, 99.0f).data(), cols * sizeof(float));
  be->bias_backward(db.get(), ddz.get(), rows, cols);
  check_close(to_host(*be, db), ref, 1e-6, 1e-6, "bias_backward");
}

namespace {

struct softmax_reference {
  double loss_sum = 0;
  int64_t correct = 0;
  std::vector<double> dlogits;
};

softmax_reference reference_softmax(const std::vector<float>& logits,
                                    const std::vector<int32_t>& labels, int rows, int cols,
                                    double grad_scale) {
  softmax_reference ref;
  ref.dlogits.resize(logits.size());
  for (int i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * cols;
    int argmax = 0;
    for (int j = 1; j < cols; ++j) argmax = row[j] > row[argmax] ? j : argmax;
    double sum = 0;
    for (int j = 0; j < cols; ++j) sum += std::exp(static_cast<double>(row[j]) - row[argmax]);
    ref.loss_sum += row[argmax] + std::log(sum) - row[labels[i]];
    ref.correct += argmax == labels[i];
    for (int j = 0; j < cols; ++j) {
      const double p = std::exp(static_cast<double>(row[j]) - row[argmax]) / sum;
      ref.dlogits[i * cols + j] = (p - (j == labels[i] ? 1.0 : 0.0)) * grad_scale;
    }
  }
  return ref;
}

} // namespace

TEST_CASE("softmax_cross_entropy: loss sum, correct count and dlogits") {
  auto be = make_cpu_backend();
  const int rows = 8, cols = 10;
  const float grad_scale = 0.125f;
  std::mt19937 rng(19);
  const auto logits = random_floats(rng, rows * cols, -3, 3);
  std::vector<int32_t> labels(rows);
  for (int i = 0; i < rows; ++i) labels[i] = static_cast<int32_t>(rng() % cols);
  // Make three rows correct for sure so the count is neither trivially 0 nor rows.
  for (int i = 0; i < 3; ++i) {
    int argmax = 0;
    for (int j = 1; j < cols; ++j) argmax = logits[i * cols + j] > logits[i * cols + argmax] ? j : argmax;
    labels[i] = argmax;
  }
  const auto ref = reference_softmax(logits, labels, rows, cols, grad_scale);
  REQUIRE(ref.correct >= 3);
  REQUIRE(ref.correct < rows);

  auto dlogits_in = to_device(*be, logits);
  auto dlabels = to_device(*be, labels);
  device_buffer<float> ddl(*be, logits.size());
  const loss_stats s = be->softmax_cross_entropy(dlogits_in.get(), dlabels.get(), rows, cols,
                                                 ddl.get(), grad_scale);
  CHECK(s.rows == rows);
  CHECK(s.correct == ref.correct);
  CHECK(s.loss_sum == doctest::Approx(ref.loss_sum).epsilon(1e-6));
  check_close(to_host(*be, ddl), ref.dlogits, 1e-7, 1e-5, "dlogits");

  // Without dlogits: same sums.
  const loss_stats s2 = be->softmax_cross_entropy(dlogits_in.get(), dlabels.get(), rows, cols,
                                                  nullptr, grad_scale);
  CHECK(s2.loss_sum == s.loss_sum);
  CHECK(s2.correct == s.correct);
}

TEST_CASE("softmax gives each row's probabilities, in place or not, stable at +-1000") {
  auto be = make_cpu_backend();
  const int rows = 6, cols = 10;
  std::mt19937 rng(23);
  for (float spread : {3.0f, 1000.0f}) {
    CAPTURE(spread);
    const auto logits = random_floats(rng, rows * cols, -spread, spread);
    // The reference's gradient at label 0 and scale 1 is p − onehot(0): add the one back.
    auto ref = reference_softmax(logits, std::vector<int32_t>(rows, 0), rows, cols, 1.0).dlogits;
    for (int i = 0; i < rows; ++i) ref[i * cols] += 1.0;
    auto din = to_device(*be, logits);
    device_buffer<float> dout(*be, logits.size());
    be->softmax(din.get(), rows, cols, dout.get());
    check_close(to_host(*be, dout), ref, 1e-7, 1e-5, "softmax");
    be->softmax(din.get(), rows, cols, din.get());
    check_close(to_host(*be, din), ref, 1e-7, 1e-5, "softmax in place");
  }
}

TEST_CASE("softmax_cross_entropy is stable for logits around +-1000") {
  auto be = make_cpu_backend();
  const int rows = 6, cols = 5;
  std::mt19937 rng(23);
  auto logits = random_floats(rng, rows * cols, -5, 5);
  for (int i = 0; i < rows * cols; ++i) logits[i] += (i % 3 == 0) ? 1000.0f : -1000.0f;
  std::vector<int32_t> labels(rows);
  for (int i = 0; i < rows; ++i) labels[i] = i % cols;
  // One row with a known answer: logits (1000, −1000, …), label 1 → loss = 2000.
  for (int j = 0; j < cols; ++j) logits[j] = j == 0 ? 1000.0f : -1000.0f;
  labels[0] = 1;

  const auto ref = reference_softmax(logits, labels, rows, cols, 1.0);
  auto dlog = to_device(*be, logits);
  auto dlab = to_device(*be, labels);
  device_buffer<float> ddl(*be, logits.size());
  const loss_stats s = be->softmax_cross_entropy(dlog.get(), dlab.get(), rows, cols, ddl.get(),
                                                 1.0f);
  REQUIRE(std::isfinite(s.loss_sum));
  CHECK(s.loss_sum == doctest::Approx(ref.loss_sum).epsilon(1e-6));
  CHECK(s.correct == ref.correct);
  const auto dl = to_host(*be, ddl);
  for (float v : dl) REQUIRE(std::isfinite(v));
  check_close(dl, ref.dlogits, 1e-6, 1e-5, "dlogits at ±1000");

  // The known row alone.
  const loss_stats one = be->softmax_cross_entropy(dlog.get(), dlab.get(), 1, cols, nullptr,
                                                   1.0f);
  CHECK(one.loss_sum == doctest::Approx(2000.0).epsilon(1e-7));
  CHECK(one.correct == 0);
}

TEST_CASE("cpu softmax_cross_entropy rejects an out-of-range label") {
  auto be = make_cpu_backend();
  const std::vector<float> logits = {0.5f, 1.5f, -0.5f};
  for (int32_t bad : {-1, 3}) {
    const std::vector<int32_t> labels = {bad};
    CHECK_THROWS_AS(be->softmax_cross_entropy(logits.data(), labels.data(), 1, 3, nullptr, 1.0f),
                    std::invalid_argument);
  }
}

#if defined(__x86_64__) || defined(_M_X64) || defined(__SSE__)
TEST_CASE("flush_denormals_to_zero makes denormal results exactly zero") {
  const unsigned saved = _mm_getcsr();  // MXCSR is per thread; restore it for later tests
  _mm_setcsr(saved & ~0x8040u);
  volatile float tiny = 1e-30f;
  volatile float small = 1e-10f;
  const float before = tiny * small;
  CHECK(before != 0.0f);  // a denormal (~1e-40) without FTZ
  flush_denormals_to_zero();
  const float after = tiny * small;
  _mm_setcsr(saved);
  CHECK(after == 0.0f);
}
#endif

} // namespace actorps
