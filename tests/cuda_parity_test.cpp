// The CUDA backend against the CPU backend: every kernel, then whole MLP, DLRM, Wide & Deep and
// DeepFM steps, on the same seeded random inputs. Without a usable GPU (or in a build without
// CUDA) each test prints one line "SKIPPED: <reason>" and returns; CTest's
// SKIP_REGULAR_EXPRESSION reports it skipped.
// ACTORPS_REQUIRE_CUDA=1 in the environment turns a skip into a failure (for GPU machines).
#include "kernels/backend_factory.hpp"
#include "kernels/ctr_math.hpp"
#include "kernels/dlrm.hpp"
#include "kernels/mlp.hpp"
#include "kernels/parameter_init.hpp"
#include "kernels/wide_deep.hpp"

#include "tests/backend_test_support.hpp"
#include "tests/ctr_bags_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

namespace actorps {
namespace {

using namespace actorps::test;

/// The CUDA backend on device 0, or nullptr after printing the one SKIPPED line.
std::unique_ptr<backend> cuda_or_skip() {
  std::string why;
  auto be = make_backend(backend_kind::cuda, 0, &why);
  if (!be) {
    const char* require = std::getenv("ACTORPS_REQUIRE_CUDA");
    if (require != nullptr && std::string(require) == "1") FAIL("ACTORPS_REQUIRE_CUDA=1: " << why);
    std::cout << "SKIPPED: " << why << std::endl;
  }
  return be;
}


/// Runs `op(backend, buffer)` on the CPU and the CUDA backend from the same host data and
/// returns both results (cpu, cuda).
template <class Op>
std::pair<std::vector<float>, std::vector<float>> on_both(backend& cpu, backend& cuda,
                                                          const std::vector<float>& data,
                                                          Op op) {
  auto on_cpu = to_device(cpu, data);
  op(cpu, on_cpu.get());
  auto on_cuda = to_device(cuda, data);
  op(cuda, on_cuda.get());
  return {to_host(cpu, on_cpu), to_host(cuda, on_cuda)};
}

} // namespace

TEST_CASE("cuda parity: name, copies through device and pinned host memory, empty buffers") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  CHECK(cuda->name() == "cuda");
  for (std::size_t n : {1u, 3u, 17u, 1000u, 1u << 20}) {
    CAPTURE(n);
    std::mt19937 rng(static_cast<unsigned>(n));
    const auto data = random_floats(rng, n, -1, 1);
    host_buffer<float> pinned(*cuda, n);
    CHECK(reinterpret_cast<std::uintptr_t>(pinned.get()) % 64 == 0);
    std::copy(data.begin(), data.end(), pinned.begin());
    device_buffer<float> dev(*cuda, n);
    cuda->copy_to_device(dev.get(), pinned.get(), n * sizeof(float));
    host_buffer<float> back(*cuda, n);
    cuda->copy_to_host(back.get(), dev.get(), n * sizeof(float));
    CHECK(std::equal(data.begin(), data.end(), back.begin()));
  }
  device_buffer<float> empty(*cuda, 0);
  host_buffer<float> empty_host(*cuda, 0);
  cuda->copy_to_device(empty.get(), empty_host.get(), 0);
  cuda->synchronize();
}

TEST_CASE("cuda parity: a failed allocation throws backend_error and the backend stays usable") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  CHECK_THROWS_AS(cuda->allocate(std::size_t(1) << 52), backend_error);  // 4 PiB
  const std::vector<float> data = {1, 2, 3};
  CHECK(to_host(*cuda, to_device(*cuda, data)) == data);
}

TEST_CASE("cuda parity: gemm in all transpose combinations, odd sizes, padded lds") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int m, n, k; };
  for (shape s : {shape{37, 29, 53}, shape{1, 7, 5}, shape{257, 513, 129}}) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        CAPTURE(s.m); CAPTURE(s.n); CAPTURE(s.k); CAPTURE(trans_a); CAPTURE(trans_b);
        std::mt19937 rng(static_cast<unsigned>(s.m * 7 + 2 * trans_a + trans_b));
        const int a_rows = trans_a ? s.k : s.m, a_cols = trans_a ? s.m : s.k;
        const int b_rows = trans_b ? s.n : s.k, b_cols = trans_b ? s.k : s.n;
        const int lda = a_cols + 3, ldb = b_cols + 2, ldc = s.n + 5;
        const auto a = random_floats(rng, static_cast<std::size_t>(a_rows) * lda, -1, 1);
        const auto b = random_floats(rng, static_cast<std::size_t>(b_rows) * ldb, -1, 1);
        auto c = random_floats(rng, static_cast<std::size_t>(s.m) * ldc, -1, 1);
        for (int i = 0; i < s.m; ++i) {
          for (int j = s.n; j < ldc; ++j) c[i * ldc + j] = 12345.0f;  // padding must survive
        }
        auto [ref, got] = on_both(*cpu, *cuda, c, [&](backend& be, float* dc) {
          auto da = to_device(be, a), db = to_device(be, b);
          be.gemm(trans_a, trans_b, s.m, s.n, s.k, 0.75f, da.get(), lda, db.get(), ldb, -1.25f,
                  dc, ldc);
          be.synchronize();  // da, db die here
        });
        check_close(got, ref, 1e-5 * std::sqrt(s.k), 1e-5, "gemm");
      }
    }
  }
}

TEST_CASE("cuda parity: gemm with beta = 0 ignores NaN in c, and with k = 0 only scales c") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  const int m = 5, n = 6, k = 7, ldc = 9;
  std::mt19937 rng(3);
  const auto a = random_floats(rng, m * k, -2, 2);
  const auto b = random_floats(rng, k * n, -2, 2);
  const std::vector<float> nan_c(m * ldc, std::numeric_limits<float>::quiet_NaN());
  auto [ref, got] = on_both(*cpu, *cuda, nan_c, [&](backend& be, float* dc) {
    auto da = to_device(be, a), db = to_device(be, b);
    be.gemm(false, false, m, n, k, 1.0f, da.get(), k, db.get(), n, 0.0f, dc, ldc);
    be.synchronize();
  });
  for (int i = 0; i < m; ++i) {  // the padding stays NaN on both; compare the window only
    for (int j = n; j < ldc; ++j) got[i * ldc + j] = ref[i * ldc + j] = 0.0f;
  }
  check_close(got, ref, 1e-5, 1e-5, "gemm beta=0");

  const auto c = random_floats(rng, m * ldc, -1, 1);
  for (float beta : {0.0f, -0.5f}) {
    CAPTURE(beta);
    auto [ref0, got0] = on_both(*cpu, *cuda, c, [&](backend& be, float* dc) {
      be.gemm(false, false, m, n, 0, 1.0f, nullptr, 0, nullptr, n, beta, dc, ldc);
    });
    check_close(got0, ref0, 0, 0, "gemm k=0");
  }
  CHECK_THROWS_AS(cuda->gemm(false, false, -1, 2, 2, 1.0f, nullptr, 2, nullptr, 2, 0.0f,
                             nullptr, 2),
                  std::invalid_argument);
}

TEST_CASE("cuda parity: bias_activation_forward, identity and relu, vector and scalar paths") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int rows, cols, offset; };  // offset 1 makes z misaligned for float4
  for (shape s : {shape{64, 256, 0}, shape{67, 131, 0}, shape{9, 12, 1}, shape{512, 2048, 0}}) {
    for (activation act : {activation::identity, activation::relu}) {
      CAPTURE(s.rows); CAPTURE(s.cols); CAPTURE(s.offset);
      CAPTURE(act == activation::relu);
      std::mt19937 rng(static_cast<unsigned>(s.rows + s.cols));
      const auto z = random_floats(rng, static_cast<std::size_t>(s.rows) * s.cols + s.offset,
                                   -2, 2);
      const auto bias = random_floats(rng, s.cols + 1, -1, 1);
      auto [ref, got] = on_both(*cpu, *cuda, z, [&](backend& be, float* dz) {
        auto db = to_device(be, bias);
        // bias + 1: a bias vector that is not 16-byte aligned, as in the flat parameters
        be.bias_activation_forward(dz + s.offset, db.get() + 1, s.rows, s.cols, act);
        be.synchronize();
      });
      check_close(got, ref, 0, 0, "bias_activation_forward");
    }
  }
}

TEST_CASE("cuda parity: activation_backward, aligned, misaligned and odd lengths") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { std::size_t n, offset; };
  for (shape s : {shape{1001, 0}, shape{1001, 1}, shape{3, 0}, shape{(1u << 20) + 3, 0}}) {
    for (activation act : {activation::identity, activation::relu}) {
      CAPTURE(s.n); CAPTURE(s.offset); CAPTURE(act == activation::relu);
      std::mt19937 rng(static_cast<unsigned>(s.n));
      const auto dz = random_floats(rng, s.n + s.offset, -3, 3);
      auto out = random_floats(rng, s.n + s.offset, -1, 1);
      for (auto& o : out) o = o < 0 ? 0.0f : o;
      auto [ref, got] = on_both(*cpu, *cuda, dz, [&](backend& be, float* ddz) {
        auto dout = to_device(be, out);
        be.activation_backward(ddz + s.offset, dout.get() + s.offset, s.n, act);
        be.synchronize();
      });
      check_close(got, ref, 0, 0, "activation_backward");
    }
  }
}

TEST_CASE("cuda parity: bias_backward column sums") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int rows, cols; };
  for (shape s : {shape{513, 77}, shape{64, 10}, shape{1, 3000}, shape{0, 5}, shape{512, 2048}}) {
    CAPTURE(s.rows); CAPTURE(s.cols);
    std::mt19937 rng(static_cast<unsigned>(s.rows * 31 + s.cols));
    const auto dz = random_floats(rng, static_cast<std::size_t>(s.rows) * s.cols, -1, 1);
    const std::vector<float> db_init(s.cols, 99.0f);  // must be overwritten, not added to
    auto [ref, got] = on_both(*cpu, *cuda, db_init, [&](backend& be, float* db) {
      auto ddz = to_device(be, dz);
      be.bias_backward(db, ddz.get(), s.rows, s.cols);
      be.synchronize();
    });
    check_close(got, ref, 1e-6 * (s.rows + 1), 1e-5, "bias_backward");
  }
}

TEST_CASE("cuda parity: softmax_cross_entropy sums and dlogits, one and many blocks") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int rows, cols; float spread; };
  // 1000 rows: several blocks folded on the device; ±1000 logits: the stable path.
  for (shape s : {shape{64, 10, 3}, shape{7, 37, 3}, shape{1000, 10, 3}, shape{33, 5, 1000}}) {
    CAPTURE(s.rows); CAPTURE(s.cols); CAPTURE(s.spread);
    std::mt19937 rng(static_cast<unsigned>(s.rows + s.cols));
    const auto logits = random_floats(rng, static_cast<std::size_t>(s.rows) * s.cols,
                                      -s.spread, s.spread);
    const auto labels = random_labels(rng, s.rows, s.cols);
    const float grad_scale = 1.0f / static_cast<float>(s.rows);
    loss_stats stats[2], no_grad[2];
    std::vector<float> dlogits[2];
    backend* backends[2] = {cpu.get(), cuda.get()};
    for (int b = 0; b < 2; ++b) {
      backend& be = *backends[b];
      auto dl = to_device(be, logits);
      auto dy = to_device(be, labels);
      device_buffer<float> grad(be, logits.size());
      stats[b] = be.softmax_cross_entropy(dl.get(), dy.get(), s.rows, s.cols, grad.get(),
                                          grad_scale);
      no_grad[b] = be.softmax_cross_entropy(dl.get(), dy.get(), s.rows, s.cols, nullptr,
                                            grad_scale);
      dlogits[b] = to_host(be, grad);
    }
    CHECK(stats[1].rows == s.rows);
    CHECK(stats[1].correct == stats[0].correct);
    CHECK(stats[1].loss_sum == doctest::Approx(stats[0].loss_sum).epsilon(1e-5));
    CHECK(no_grad[1].loss_sum == stats[1].loss_sum);
    CHECK(no_grad[1].correct == stats[1].correct);
    check_close(dlogits[1], dlogits[0], 1e-7, 1e-4, "dlogits");
  }
}

TEST_CASE("cuda parity: softmax probabilities, in place and not, one and many blocks") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int rows, cols; float spread; };
  for (shape s : {shape{64, 10, 3}, shape{1000, 10, 3}, shape{7, 37, 3}, shape{33, 5, 1000}}) {
    CAPTURE(s.rows); CAPTURE(s.cols); CAPTURE(s.spread);
    std::mt19937 rng(static_cast<unsigned>(s.rows * 3 + s.cols));
    const auto logits = random_floats(rng, static_cast<std::size_t>(s.rows) * s.cols,
                                      -s.spread, s.spread);
    auto [ref, got] = on_both(*cpu, *cuda, logits, [&](backend& be, float* dl) {
      be.softmax(dl, s.rows, s.cols, dl);
    });
    check_close(got, ref, 1e-7, 1e-5, "softmax in place");
    auto [ref_out, got_out] = on_both(*cpu, *cuda, std::vector<float>(logits.size(), -1.0f),
                                      [&](backend& be, float* dout) {
      auto dl = to_device(be, logits);
      be.softmax(dl.get(), s.rows, s.cols, dout);
      be.synchronize();
    });
    check_close(got_out, ref_out, 1e-7, 1e-5, "softmax");
    check_close(got_out, got, 0, 0, "cuda softmax in place = out of place");
  }
}

TEST_CASE("cuda parity: softmax_cross_entropy rejects an out-of-range label like the CPU") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  std::mt19937 rng(5);
  const auto logits = random_floats(rng, 600 * 4, -1, 1);
  for (int32_t bad : {-1, 4}) {
    auto labels = random_labels(rng, 600, 4);
    labels[517] = bad;
    labels[599] = bad;
    auto dl = to_device(*cuda, logits);
    auto dy = to_device(*cuda, labels);
    try {
      cuda->softmax_cross_entropy(dl.get(), dy.get(), 600, 4, nullptr, 1.0f);
      FAIL("no exception");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()) == "softmax_cross_entropy: label " + std::to_string(bad) +
                                       " of row 517 is not in [0, 4)");
    }
  }
  const std::vector<float> row = {0.0f, 1.0f};
  const std::vector<int32_t> label = {1};
  auto dl = to_device(*cuda, row);
  auto dy = to_device(*cuda, label);
  CHECK(cuda->softmax_cross_entropy(dl.get(), dy.get(), 1, 2, nullptr, 1.0f).correct == 1);
}

namespace {

/// One train_step and one chunked evaluate of the same MLP on both backends; the CUDA side
/// keeps parameters and gradients in pinned host buffers, as a worker does.
void check_mlp_parity(backend& cuda, const std::vector<int>& layers, int batch, int eval_rows,
                      unsigned seed) {
  CAPTURE(batch);
  auto cpu = make_cpu_backend();
  const auto params = initial_parameters(layers, seed);
  std::mt19937 rng(seed);
  auto biased = params;  // non-zero biases so bias_backward and the bias path matter
  for (auto& v : biased) {
    if (v == 0.0f) v = std::uniform_real_distribution<float>(-0.1f, 0.1f)(rng);
  }
  const auto x = random_floats(rng, static_cast<std::size_t>(eval_rows) * layers[0], 0, 1);
  const auto y = random_labels(rng, eval_rows, layers.back());

  mlp ref(*cpu, layers, batch);
  ref.set_parameters(biased.data());
  std::vector<float> ref_grad(ref.parameter_count());
  const loss_stats ref_step = ref.train_step(x.data(), y.data(), batch, ref_grad.data());
  const loss_stats ref_eval = ref.evaluate(x.data(), y.data(), eval_rows);

  mlp net(cuda, layers, batch);
  host_buffer<float> pinned_params(cuda, net.parameter_count());
  host_buffer<float> pinned_grad(cuda, net.parameter_count());
  std::copy(biased.begin(), biased.end(), pinned_params.begin());
  net.set_parameters(pinned_params.get());
  const loss_stats step = net.train_step(x.data(), y.data(), batch, pinned_grad.get());
  const loss_stats eval = net.evaluate(x.data(), y.data(), eval_rows);

  CHECK(step.rows == ref_step.rows);
  CHECK(step.correct == ref_step.correct);
  CHECK(step.loss_sum == doctest::Approx(ref_step.loss_sum).epsilon(1e-5));
  CHECK(eval.rows == ref_eval.rows);
  CHECK(eval.correct == ref_eval.correct);
  CHECK(eval.loss_sum == doctest::Approx(ref_eval.loss_sum).epsilon(1e-5));
  double max_grad = 0;
  for (float g : ref_grad) max_grad = std::max(max_grad, std::fabs(static_cast<double>(g)));
  REQUIRE(max_grad > 0);
  const std::vector<float> grad(pinned_grad.begin(), pinned_grad.end());
  // Summation order differs (cuBLAS vs OpenBLAS): absolute slack relative to the largest.
  check_close(grad, ref_grad, 1e-4 * max_grad, 1e-3, "mlp gradient");

  // The same step again gives bit-identical results (no atomics in any reduction).
  const loss_stats again = net.train_step(x.data(), y.data(), batch, pinned_grad.get());
  CHECK(again.loss_sum == step.loss_sum);
  CHECK(std::equal(grad.begin(), grad.end(), pinned_grad.begin()));
}

} // namespace

TEST_CASE("cuda parity: mlp predict probabilities over 1000 rows in chunks of 64") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  const std::vector<int> layers{784, 256, 128, 10};
  const int rows = 1000;  // 15 full chunks and a partial one
  const auto params = initial_parameters(layers, 5);
  std::mt19937 rng(5);
  const auto x = random_floats(rng, static_cast<std::size_t>(rows) * layers[0], 0, 1);
  std::vector<float> probs[2];
  backend* backends[2] = {cpu.get(), cuda.get()};
  for (int b = 0; b < 2; ++b) {
    mlp net(*backends[b], layers, 64);
    net.set_parameters(params.data());
    probs[b].assign(static_cast<std::size_t>(rows) * layers.back(), -1.0f);
    net.predict(x.data(), rows, probs[b].data());
  }
  check_close(probs[1], probs[0], 1e-5, 1e-4, "mlp predict probabilities");
}

TEST_CASE("cuda parity: mlp 784-256-128-10 train_step and evaluate at batch 64") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  check_mlp_parity(*cuda, {784, 256, 128, 10}, 64, 300, 42);
}

TEST_CASE("cuda parity: small odd mlp 33-17-9-5 at batch 13") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  check_mlp_parity(*cuda, {33, 17, 9, 5}, 13, 50, 7);
}

// ------------------------------------------------------------------------------------------
// click-through-rate kernels and the DLRM

namespace {

/// n indexes in [0, u), the first min(n, u) covering every row once, the rest random repeats.
std::vector<int32_t> random_index(std::mt19937& rng, std::size_t n, int u) {
  std::vector<int32_t> index(n);
  for (std::size_t i = 0; i < n; ++i) {
    index[i] = static_cast<int32_t>(i < static_cast<std::size_t>(u) ? i : rng() % u);
  }
  std::shuffle(index.begin(), index.end(), rng);
  return index;
}

} // namespace

TEST_CASE("cuda parity: embedding_gather and embedding_scatter_add with repeated rows, bit for bit") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int u, dim, n; };
  // 70 000 rows: keys of 17 bits, so the sort takes more than one radix pass.
  for (shape s : {shape{50, 16, 4096}, shape{3, 5, 7}, shape{1000, 1, 100}, shape{1, 16, 300},
                  shape{70000, 3, 200000}}) {
    CAPTURE(s.u); CAPTURE(s.dim); CAPTURE(s.n);
    std::mt19937 rng(static_cast<unsigned>(s.u * 13 + s.n));
    const auto rows = random_floats(rng, static_cast<std::size_t>(s.u) * s.dim, -1, 1);
    const auto index = random_index(rng, s.n, s.u);
    const auto dout = random_floats(rng, static_cast<std::size_t>(s.n) * s.dim, -1, 1);
    auto [ref, got] = on_both(*cpu, *cuda, std::vector<float>(dout.size(), 99.0f),
                              [&](backend& be, float* out) {
      auto dr = to_device(be, rows);
      auto di = to_device(be, index);
      be.embedding_gather(dr.get(), s.u, s.dim, di.get(), s.n, out);
      be.synchronize();
    });
    check_close(got, ref, 0, 0, "embedding_gather");
    auto [ref_grad, got_grad] = on_both(*cpu, *cuda, std::vector<float>(rows.size(), 99.0f),
                                        [&](backend& be, float* grad) {
      auto dd = to_device(be, dout);
      auto di = to_device(be, index);
      be.embedding_scatter_add(dd.get(), di.get(), s.n, s.dim, grad, s.u);
      be.synchronize();
    });
    // Both add a row's contributions in index order from 0.0f: equal bit for bit, which a
    // scatter by atomicAdd (sums in any order) is not once a row has many contributions.
    check_close(got_grad, ref_grad, 0, 0, "embedding_scatter_add");
  }
}

TEST_CASE("cuda parity: the CUDA gather and scatter step over indexes outside 0..u-1") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  const std::vector<float> rows = {1, 2, 3, 4};  // u = 2, dim = 2
  const std::vector<int32_t> index = {1, -1, 2, 0};
  auto dr = to_device(*cuda, rows);
  auto di = to_device(*cuda, index);
  auto out = to_device(*cuda, std::vector<float>(8, 99.0f));
  cuda->embedding_gather(dr.get(), 2, 2, di.get(), 4, out.get());
  CHECK(to_host(*cuda, out) == std::vector<float>{3, 4, 0, 0, 0, 0, 1, 2});
  const std::vector<float> dout = {1, 1, 10, 10, 100, 100, 1000, 1000};
  auto dd = to_device(*cuda, dout);
  auto grad = to_device(*cuda, std::vector<float>(4, 99.0f));
  cuda->embedding_scatter_add(dd.get(), di.get(), 4, 2, grad.get(), 2);
  CHECK(to_host(*cuda, grad) == std::vector<float>{1000, 1000, 1, 1});
}

TEST_CASE("cuda parity: dot_interaction forward and backward") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int n, t, dim; };
  for (shape s : {shape{64, 27, 16}, shape{5, 2, 3}, shape{33, 9, 7}, shape{1000, 4, 1}}) {
    CAPTURE(s.n); CAPTURE(s.t); CAPTURE(s.dim);
    std::mt19937 rng(static_cast<unsigned>(s.n * 7 + s.t));
    const int pairs = math::interaction_pairs(s.t);
    const auto vectors = random_floats(rng, static_cast<std::size_t>(s.n) * s.t * s.dim, -1, 1);
    const auto dout = random_floats(rng, static_cast<std::size_t>(s.n) * pairs, -1, 1);
    auto [ref, got] = on_both(*cpu, *cuda, std::vector<float>(dout.size(), 99.0f),
                              [&](backend& be, float* out) {
      auto dv = to_device(be, vectors);
      be.dot_interaction_forward(dv.get(), s.n, s.t, s.dim, out);
      be.synchronize();
    });
    // The same sums in the same order; only FMA contraction may differ.
    check_close(got, ref, 1e-6 * s.dim, 1e-5, "dot_interaction_forward");
    auto [ref_grad, got_grad] = on_both(*cpu, *cuda, std::vector<float>(vectors.size(), 99.0f),
                                        [&](backend& be, float* dvectors) {
      auto dv = to_device(be, vectors);
      auto dd = to_device(be, dout);
      be.dot_interaction_backward(dv.get(), dd.get(), s.n, s.t, s.dim, dvectors);
      be.synchronize();
    });
    check_close(got_grad, ref_grad, 1e-6 * s.t, 1e-5, "dot_interaction_backward");
  }
}

TEST_CASE("cuda parity: sigmoid_cross_entropy and sigmoid, one and many blocks, wide logits") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int n; float spread; };
  for (shape s : {shape{64, 3}, shape{1000, 3}, shape{7, 3}, shape{333, 1000}, shape{70000, 8}}) {
    CAPTURE(s.n); CAPTURE(s.spread);
    std::mt19937 rng(static_cast<unsigned>(s.n));
    const auto logits = random_floats(rng, s.n, -s.spread, s.spread);
    std::vector<float> labels(s.n);
    for (auto& y : labels) y = static_cast<float>(rng() % 2);
    const float grad_scale = 1.0f / static_cast<float>(s.n);
    binary_loss_stats stats[2], bare[2];
    std::vector<float> dlogits[2], probs[2], sigmoid_probs[2];
    backend* backends[2] = {cpu.get(), cuda.get()};
    for (int b = 0; b < 2; ++b) {
      backend& be = *backends[b];
      auto dl = to_device(be, logits);
      auto dy = to_device(be, labels);
      device_buffer<float> grad(be, logits.size()), p(be, logits.size());
      stats[b] = be.sigmoid_cross_entropy(dl.get(), dy.get(), s.n, grad.get(), grad_scale,
                                          p.get());
      bare[b] = be.sigmoid_cross_entropy(dl.get(), dy.get(), s.n, nullptr, grad_scale, nullptr);
      dlogits[b] = to_host(be, grad);
      probs[b] = to_host(be, p);
      be.sigmoid(dl.get(), s.n, dl.get());
      sigmoid_probs[b] = to_host(be, dl);
    }
    CHECK(stats[1].rows == s.n);
    CHECK(stats[1].loss_sum == doctest::Approx(stats[0].loss_sum).epsilon(1e-5));
    CHECK(bare[1].loss_sum == stats[1].loss_sum);
    check_close(dlogits[1], dlogits[0], 1e-7 * grad_scale, 1e-5, "dlogits");
    check_close(probs[1], probs[0], 1e-7, 1e-5, "probs");
    check_close(sigmoid_probs[1], probs[1], 0, 0, "cuda sigmoid = the loss kernel's probs");
  }
}

namespace {

/// One train_step and one chunked predict of the same DLRM on both backends, from the same
/// seeded inputs (u rows shared by the batch's n·fields lookups, with repeats).
void check_dlrm_parity(backend& cuda, const dlrm_shape& shape, int batch, int u,
                       int predict_rows, unsigned seed) {
  CAPTURE(batch); CAPTURE(u); CAPTURE(seed);
  auto cpu = make_cpu_backend();
  std::mt19937 rng(seed);
  auto params = dlrm_initial_parameters(shape, seed);
  for (auto& v : params) {  // non-zero biases so bias_backward and the bias path matter
    if (v == 0.0f) v = std::uniform_real_distribution<float>(-0.1f, 0.1f)(rng);
  }
  const int rows_n = std::max(batch, predict_rows);
  const auto dense = random_floats(rng, static_cast<std::size_t>(rows_n) * shape.dense_in, 0, 1);
  std::vector<float> labels(rows_n);
  for (auto& y : labels) y = static_cast<float>(rng() % 2);
  const auto rows = random_floats(rng, static_cast<std::size_t>(u) * shape.dim, -0.5f, 0.5f);
  const auto index = random_index(rng, static_cast<std::size_t>(rows_n) * shape.fields, u);

  binary_loss_stats stats[2];
  std::vector<float> grad[2], row_grad[2], probs[2];
  backend* backends[2] = {cpu.get(), &cuda};
  for (int b = 0; b < 2; ++b) {
    dlrm net(*backends[b], shape, batch);
    // Pinned host buffers on both, as a worker keeps them.
    host_buffer<float> pinned_params(*backends[b], net.parameter_count());
    host_buffer<float> pinned_grad(*backends[b], net.parameter_count());
    std::copy(params.begin(), params.end(), pinned_params.begin());
    net.set_parameters(pinned_params.get());
    row_grad[b].assign(rows.size(), NAN);
    stats[b] = net.train_step(dense.data(), labels.data(), rows.data(), u, index.data(), batch,
                              pinned_grad.get(), row_grad[b].data());
    grad[b].assign(pinned_grad.begin(), pinned_grad.end());
    probs[b].assign(predict_rows, -1.0f);
    net.predict(dense.data(), rows.data(), u, index.data(), predict_rows, probs[b].data());
    if (b == 1) {
      // Again: both gradients bit for bit (no atomics anywhere), so a sync run on a GPU
      // repeats exactly, as a fail-over's byte-identical export needs.
      std::vector<float> again_rows(rows.size());
      const auto again = net.train_step(dense.data(), labels.data(), rows.data(), u,
                                        index.data(), batch, pinned_grad.get(),
                                        again_rows.data());
      CHECK(again.loss_sum == stats[1].loss_sum);
      CHECK(std::equal(grad[1].begin(), grad[1].end(), pinned_grad.begin()));
      check_close(again_rows, row_grad[1], 0, 0, "dlrm row gradient, run to run");
    }
  }
  CHECK(stats[1].rows == batch);
  CHECK(stats[1].loss_sum == doctest::Approx(stats[0].loss_sum).epsilon(1e-5));
  const auto largest = [](const std::vector<float>& v) {
    double m = 0;
    for (float g : v) m = std::max(m, std::fabs(static_cast<double>(g)));
    return m;
  };
  const double max_grad = largest(grad[0]), max_row_grad = largest(row_grad[0]);
  REQUIRE(max_grad > 0);
  REQUIRE(max_row_grad > 0);
  // Summation order differs (cuBLAS against OpenBLAS): absolute slack relative to the
  // largest.
  check_close(grad[1], grad[0], 1e-4 * max_grad, 1e-3, "dlrm gradient");
  check_close(row_grad[1], row_grad[0], 1e-4 * max_row_grad, 1e-3, "dlrm row gradient");
  check_close(probs[1], probs[0], 1e-6, 1e-4, "dlrm predict probabilities");
}

} // namespace

TEST_CASE("cuda parity: dlrm with the Criteo shape, train_step at batch 128, predict 1000") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  check_dlrm_parity(*cuda, dlrm_shape{}, 128, 2000, 1000, 13);
}

TEST_CASE("cuda parity: small odd dlrm 5-3x7, bottom 9, no top hidden layer, batch 13") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  dlrm_shape shape;
  shape.dense_in = 5;
  shape.fields = 3;
  shape.dim = 7;
  shape.bottom = {9};
  shape.top = {};
  check_dlrm_parity(*cuda, shape, 13, 11, 50, 29);
}

} // namespace actorps

namespace actorps {

TEST_CASE("cuda parity: fm_interaction forward and backward") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int n, t, dim; };
  for (shape s : {shape{64, 26, 16}, shape{5, 2, 3}, shape{33, 9, 7}, shape{1000, 4, 1}}) {
    CAPTURE(s.n); CAPTURE(s.t); CAPTURE(s.dim);
    std::mt19937 rng(static_cast<unsigned>(s.n * 5 + s.t));
    const auto vectors = random_floats(rng, static_cast<std::size_t>(s.n) * s.t * s.dim, -1, 1);
    const auto dout = random_floats(rng, static_cast<std::size_t>(s.n), -1, 1);
    auto [ref, got] = on_both(*cpu, *cuda, std::vector<float>(s.n, 99.0f),
                              [&](backend& be, float* out) {
      auto dv = to_device(be, vectors);
      be.fm_interaction_forward(dv.get(), s.n, s.t, s.dim, out);
      be.synchronize();
    });
    // The same sums in the same order (math::fm_second_order); only FMA contraction differs.
    check_close(got, ref, 1e-6 * s.t * s.dim, 1e-5, "fm_interaction_forward");
    auto [ref_grad, got_grad] = on_both(*cpu, *cuda, std::vector<float>(vectors.size(), 99.0f),
                                        [&](backend& be, float* dvectors) {
      auto dv = to_device(be, vectors);
      auto dd = to_device(be, dout);
      be.fm_interaction_backward(dv.get(), dd.get(), s.n, s.t, s.dim, dvectors);
      be.synchronize();
    });
    check_close(got_grad, ref_grad, 1e-6 * s.t, 1e-5, "fm_interaction_backward");
  }
}

namespace {

/// One train_step and one chunked predict of the same Wide & Deep or DeepFM on both backends,
/// from the same seeded inputs (rows of both tables shared by the lookups, with repeats).
void check_wide_deep_parity(backend& cuda, const wide_deep_shape& shape, int batch, int u,
                            int predict_rows, unsigned seed) {
  CAPTURE(shape.fm); CAPTURE(batch); CAPTURE(u); CAPTURE(seed);
  auto cpu = make_cpu_backend();
  std::mt19937 rng(seed);
  const auto params = random_floats(rng, wide_deep_parameter_count(shape), -0.2f, 0.2f);
  const int rows_n = std::max(batch, predict_rows);
  const auto dense = random_floats(rng, static_cast<std::size_t>(rows_n) * shape.dense_in, 0, 1);
  std::vector<float> labels(rows_n);
  for (auto& y : labels) y = static_cast<float>(rng() % 2);
  const auto rows = random_floats(rng, static_cast<std::size_t>(u) * shape.dim, -0.5f, 0.5f);
  const auto weights = random_floats(rng, static_cast<std::size_t>(u), -0.5f, 0.5f);
  const auto index = random_index(rng, static_cast<std::size_t>(rows_n) * shape.fields, u);
  const auto windex = random_index(rng, static_cast<std::size_t>(rows_n) * shape.fields, u);
  const ctr_rows embeddings{rows.data(), u, index.data()}, wide{weights.data(), u, windex.data()};

  binary_loss_stats stats[2];
  std::vector<float> grad[2], row_grad[2], weight_grad[2], probs[2];
  backend* backends[2] = {cpu.get(), &cuda};
  for (int b = 0; b < 2; ++b) {
    wide_deep net(*backends[b], shape, batch);
    host_buffer<float> pinned_params(*backends[b], net.parameter_count());
    host_buffer<float> pinned_grad(*backends[b], net.parameter_count());
    std::copy(params.begin(), params.end(), pinned_params.begin());
    net.set_parameters(pinned_params.get());
    row_grad[b].assign(rows.size(), NAN);
    weight_grad[b].assign(weights.size(), NAN);
    stats[b] = net.train_step(dense.data(), labels.data(), embeddings, wide, batch,
                              pinned_grad.get(), row_grad[b].data(), weight_grad[b].data());
    grad[b].assign(pinned_grad.begin(), pinned_grad.end());
    probs[b].assign(predict_rows, -1.0f);
    net.predict(dense.data(), embeddings, wide, predict_rows, probs[b].data());
  }
  CHECK(stats[1].rows == batch);
  CHECK(stats[1].loss_sum == doctest::Approx(stats[0].loss_sum).epsilon(1e-5));
  const auto largest = [](const std::vector<float>& v) {
    double m = 0;
    for (float g : v) m = std::max(m, std::fabs(static_cast<double>(g)));
    return m;
  };
  REQUIRE(largest(grad[0]) > 0);
  REQUIRE(largest(row_grad[0]) > 0);
  REQUIRE(largest(weight_grad[0]) > 0);
  check_close(grad[1], grad[0], 1e-4 * largest(grad[0]), 1e-3, "wide_deep gradient");
  check_close(row_grad[1], row_grad[0], 1e-4 * largest(row_grad[0]), 1e-3,
              "wide_deep embedding gradient");
  check_close(weight_grad[1], weight_grad[0], 1e-4 * largest(weight_grad[0]), 1e-3,
              "wide_deep weight gradient");
  check_close(probs[1], probs[0], 1e-6, 1e-4, "wide_deep predict probabilities");
}

} // namespace

TEST_CASE("cuda parity: wdl and deepfm with the Criteo shape, batch 128, predict 1000") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  for (bool fm : {false, true}) {
    wide_deep_shape shape;
    shape.fm = fm;
    check_wide_deep_parity(*cuda, shape, 128, 2000, 1000, 17);
  }
}

TEST_CASE("cuda parity: small odd wdl and deepfm 5-3x7, no hidden layer or one, batch 13") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  for (bool fm : {false, true}) {
    wide_deep_shape shape;
    shape.dense_in = 5;
    shape.fields = 3;
    shape.dim = 7;
    shape.fm = fm;
    shape.hidden = {};
    check_wide_deep_parity(*cuda, shape, 13, 11, 50, 31);
    shape.hidden = {9};
    check_wide_deep_parity(*cuda, shape, 13, 11, 50, 37);
  }
}

TEST_CASE("cuda parity: embedding_bag_pool, embedding_bag_expand and scale_rows, empty bags") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  struct shape { int n, fields, u, dim; };
  for (shape s : {shape{64, 5, 300, 16}, shape{7, 3, 4, 3}, shape{1000, 2, 50, 1}}) {
    CAPTURE(s.n); CAPTURE(s.fields); CAPTURE(s.dim);
    std::mt19937 rng(static_cast<unsigned>(s.n + s.dim));
    const auto bags = make_test_bags(s.n, s.fields, {3, 0, 1, 8, 2}, std::vector<uint8_t>(
                                                                         s.fields, 1));
    const auto bags_sum = make_test_bags(s.n, s.fields, {3, 0, 1, 8, 2}, {});
    const auto index = random_bag_index(rng, bags, s.u);
    const auto rows = random_floats(rng, static_cast<std::size_t>(s.u) * s.dim, -1, 1);
    const int count = s.n * s.fields;
    for (const auto* b : {&bags, &bags_sum}) {
      auto [ref, got] = on_both(*cpu, *cuda, std::vector<float>(count * s.dim, 99.0f),
                                [&](backend& be, float* out) {
        auto dr = to_device(be, rows);
        auto di = to_device(be, index);
        auto doff = to_device(be, b->offsets);
        auto dsc = to_device(be, b->scale);
        be.embedding_bag_pool(dr.get(), s.u, s.dim, di.get(), doff.get(), dsc.get(), count, out);
        be.synchronize();
      });
      // The same sums in the same order; only FMA contraction differs.
      check_close(got, ref, 1e-6, 1e-5, "embedding_bag_pool");
      const auto dout = random_floats(rng, static_cast<std::size_t>(count) * s.dim, -1, 1);
      auto [ref_keys, got_keys] = on_both(*cpu, *cuda,
                                          std::vector<float>(b->keys() * s.dim, 99.0f),
                                          [&](backend& be, float* dkeys) {
        auto dd = to_device(be, dout);
        auto doff = to_device(be, b->offsets);
        auto dsc = to_device(be, b->scale);
        be.embedding_bag_expand(dd.get(), doff.get(), dsc.get(), count, s.dim, dkeys);
        be.synchronize();
      });
      check_close(got_keys, ref_keys, 0, 0, "embedding_bag_expand");
    }
    const auto weights = random_floats(rng, static_cast<std::size_t>(s.n), 0, 2);
    auto [ref_x, got_x] = on_both(*cpu, *cuda, rows, [&](backend& be, float* x) {
      auto dw = to_device(be, weights);
      be.scale_rows(x, dw.get(), std::min(s.n, s.u), s.dim);
      be.synchronize();
    });
    check_close(got_x, ref_x, 0, 0, "scale_rows");
  }
}

TEST_CASE("cuda parity: dlrm, wdl and deepfm on bags (sum and mean) with sample weights") {
  auto cuda = cuda_or_skip();
  if (!cuda) return;
  auto cpu = make_cpu_backend();
  const int batch = 37, u = 60, fields = 4, dense_in = 3;
  std::mt19937 rng(23);
  const auto bags = make_test_bags(batch, fields, {2, 0, 5, 1, 3}, {1, 0, 1, 0});
  const auto index = random_bag_index(rng, bags, u);
  const auto windex = random_bag_index(rng, bags, u);
  const ctr_bags view = bags.view();
  const auto dense = random_floats(rng, static_cast<std::size_t>(batch) * dense_in, 0, 1);
  std::vector<float> labels(batch);
  for (auto& y : labels) y = static_cast<float>(rng() % 2);
  const auto sample_weights = random_floats(rng, batch, 0.5f, 2);
  const auto largest = [](const std::vector<float>& v) {
    double m = 0;
    for (float g : v) m = std::max(m, std::fabs(static_cast<double>(g)));
    return m;
  };
  backend* backends[2] = {cpu.get(), cuda.get()};
  {
    dlrm_shape shape;
    shape.dense_in = dense_in;
    shape.fields = fields;
    shape.dim = 8;
    shape.bottom = {9};
    shape.top = {7};
    const auto params = random_floats(rng, dlrm_parameter_count(shape), -0.3f, 0.3f);
    const auto rows = random_floats(rng, static_cast<std::size_t>(u) * shape.dim, -0.5f, 0.5f);
    binary_loss_stats stats[2];
    std::vector<float> grad[2], row_grad[2], z[2];
    for (int b = 0; b < 2; ++b) {
      dlrm net(*backends[b], shape, 16);  // predict in chunks of 16
      dlrm big(*backends[b], shape, batch);
      big.set_parameters(params.data());
      net.set_parameters(params.data());
      grad[b].assign(params.size(), NAN);
      row_grad[b].assign(rows.size(), NAN);
      stats[b] = big.train_step(dense.data(), labels.data(), rows.data(), u, index.data(), batch,
                                grad[b].data(), row_grad[b].data(), &view,
                                sample_weights.data());
      z[b].assign(batch, NAN);
      net.predict_logits(dense.data(), rows.data(), u, index.data(), batch, z[b].data(), &view);
    }
    CHECK(stats[1].loss_sum == doctest::Approx(stats[0].loss_sum).epsilon(1e-5));
    REQUIRE(largest(row_grad[0]) > 0);
    check_close(grad[1], grad[0], 1e-4 * largest(grad[0]), 1e-3, "dlrm bag gradient");
    check_close(row_grad[1], row_grad[0], 1e-4 * largest(row_grad[0]), 1e-3,
                "dlrm bag row gradient");
    check_close(z[1], z[0], 1e-5, 1e-4, "dlrm bag logits");
  }
  for (bool fm : {false, true}) {
    CAPTURE(fm);
    wide_deep_shape shape;
    shape.dense_in = dense_in;
    shape.fields = fields;
    shape.dim = 6;
    shape.hidden = {10};
    shape.fm = fm;
    const auto params = random_floats(rng, wide_deep_parameter_count(shape), -0.3f, 0.3f);
    const auto rows = random_floats(rng, static_cast<std::size_t>(u) * shape.dim, -0.5f, 0.5f);
    const auto wide = random_floats(rng, static_cast<std::size_t>(u), -0.5f, 0.5f);
    const ctr_rows embeddings{rows.data(), u, index.data()}, weights{wide.data(), u,
                                                                     windex.data()};
    binary_loss_stats stats[2];
    std::vector<float> grad[2], row_grad[2], wide_grad[2], z[2];
    for (int b = 0; b < 2; ++b) {
      wide_deep net(*backends[b], shape, 16), big(*backends[b], shape, batch);
      big.set_parameters(params.data());
      net.set_parameters(params.data());
      grad[b].assign(params.size(), NAN);
      row_grad[b].assign(rows.size(), NAN);
      wide_grad[b].assign(wide.size(), NAN);
      stats[b] = big.train_step(dense.data(), labels.data(), embeddings, weights, batch,
                                grad[b].data(), row_grad[b].data(), wide_grad[b].data(), &view,
                                sample_weights.data());
      z[b].assign(batch, NAN);
      net.predict_logits(dense.data(), embeddings, weights, batch, z[b].data(), &view);
    }
    CHECK(stats[1].loss_sum == doctest::Approx(stats[0].loss_sum).epsilon(1e-5));
    REQUIRE(largest(row_grad[0]) > 0);
    check_close(grad[1], grad[0], 1e-4 * largest(grad[0]), 1e-3, "wide_deep bag gradient");
    check_close(row_grad[1], row_grad[0], 1e-4 * largest(row_grad[0]), 1e-3,
                "wide_deep bag row gradient");
    check_close(wide_grad[1], wide_grad[0], 1e-4 * largest(wide_grad[0]), 1e-3,
                "wide_deep bag wide gradient");
    check_close(z[1], z[0], 1e-5, 1e-4, "wide_deep bag logits");
  }
}

} // namespace actorps
