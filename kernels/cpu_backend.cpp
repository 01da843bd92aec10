// The CPU backend: OpenBLAS sgemm on the calling thread, plain loops over kernels/math.hpp for
// everything else. "Device" memory is 64-byte aligned host memory.
#include "kernels/backend.hpp"
#include "kernels/blas_core.hpp"
#include "kernels/blas_threads.hpp"
#include "kernels/cpu_interaction.hpp"
#include "kernels/ctr_math.hpp"
#include "kernels/math.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <vector>

namespace actorps {
namespace {

constexpr std::align_val_t buffer_alignment{64};

/// Throws std::invalid_argument unless index[r] is in [0, u).
void check_row_index(const char* kernel, const int32_t* index, int r, int u) {
  if (index[r] < 0 || index[r] >= u) {
    throw std::invalid_argument(std::string(kernel) + ": index " + std::to_string(index[r]) +
                                " of row " + std::to_string(r) + " is not in [0, " +
                                std::to_string(u) + ")");
  }
}

class cpu_backend final : public backend {
public:
  std::string name() const override { return "cpu"; }

  void* allocate(std::size_t bytes) override { return ::operator new(bytes, buffer_alignment); }

  void deallocate(void* ptr) noexcept override { ::operator delete(ptr, buffer_alignment); }

  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, host_src, bytes);
  }

  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(host_dst, src, bytes);
  }

  void synchronize() override {}

  bool computes_in_host_memory() const override { return true; }

  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
            int lda, const float* b, int ldb, float beta, float* c, int ldc) override {
    if (m < 0 || n < 0 || k < 0) throw std::invalid_argument("gemm: negative dimension");
    if (m == 0 || n == 0) return;
    if (k == 0) {
      // Nothing to multiply; BLAS would reject lda = 0, so scale c here (beta = 0 overwrites).
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          float& cij = c[static_cast<std::size_t>(i) * ldc + j];
          cij = beta == 0.0f ? 0.0f : beta * cij;
        }
      }
      return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
  }

  void bias_activation_forward(float* z, const float* bias, int rows, int cols,
                               activation act) override {
    for (int i = 0; i < rows; ++i) {
      float* row = z + static_cast<std::size_t>(i) * cols;
      if (act == activation::relu) {
        for (int j = 0; j < cols; ++j) row[j] = math::relu(row[j] + bias[j]);
      } else {
        for (int j = 0; j < cols; ++j) row[j] += bias[j];
      }
    }
  }

  void activation_backward(float* dz, const float* out, std::size_t n,
                           activation act) override {
    if (act == activation::identity) return;
    for (std::size_t i = 0; i < n; ++i) dz[i] *= math::relu_derivative(out[i]);
  }

  void bias_backward(float* db, const float* dz, int rows, int cols) override {
    // dz is (rows, cols); walk it row by row so the inner loop is contiguous.
    for (int j = 0; j < cols; ++j) db[j] = 0.0f;
    for (int i = 0; i < rows; ++i) {
      const float* row = dz + static_cast<std::size_t>(i) * cols;
      for (int j = 0; j < cols; ++j) db[j] += row[j];
    }
  }

  void softmax(const float* logits, int rows, int cols, float* probs) override {
    for (int i = 0; i < rows; ++i) {
      const std::size_t offset = static_cast<std::size_t>(i) * cols;
      math::softmax_row(logits + offset, cols, probs + offset);
    }
  }

  loss_stats softmax_cross_entropy(const float* logits, const int32_t* labels, int rows,
                                   int cols, float* dlogits, float grad_scale) override {
    loss_stats stats;
    stats.rows = rows;
    for (int i = 0; i < rows; ++i) {
      if (labels[i] < 0 || labels[i] >= cols) {
        throw std::invalid_argument("softmax_cross_entropy: label " + std::to_string(labels[i]) +
                                    " of row " + std::to_string(i) + " is not in [0, " +
                                    std::to_string(cols) + ")");
      }
      const std::size_t offset = static_cast<std::size_t>(i) * cols;
      bool correct = false;
      stats.loss_sum += math::softmax_cross_entropy_row(
          logits + offset, cols, labels[i], dlogits ? dlogits + offset : nullptr, grad_scale,
          &correct);
      stats.correct += correct ? 1 : 0;
    }
    return stats;
  }

  void embedding_gather(const float* rows, int u, int dim, const int32_t* index, int n,
                        float* out) override {
    for (int r = 0; r < n; ++r) {
      check_row_index("embedding_gather", index, r, u);
      const float* src = rows + static_cast<std::size_t>(index[r]) * dim;
      std::copy(src, src + dim, out + static_cast<std::size_t>(r) * dim);
    }
  }

  void embedding_scatter_add(const float* dout, const int32_t* index, int n, int dim,
                             float* grad_rows, int u) override {
    std::fill(grad_rows, grad_rows + static_cast<std::size_t>(std::max(u, 0)) * dim, 0.0f);
    for (int r = 0; r < n; ++r) {
      check_row_index("embedding_scatter_add", index, r, u);
      const float* src = dout + static_cast<std::size_t>(r) * dim;
      float* dst = grad_rows + static_cast<std::size_t>(index[r]) * dim;
      for (int d = 0; d < dim; ++d) dst[d] += src[d];
    }
  }

  void embedding_bag_pool(const float* rows, int u, int dim, const int32_t* index,
                          const int32_t* offsets, const float* scale, int bags,
                          float* out) override {
    if (bags <= 0) return;
    for (int32_t k = offsets[0]; k < offsets[bags]; ++k)
      check_row_index("embedding_bag_pool", index, k, u);
    for (int b = 0; b < bags; ++b)
      for (int d = 0; d < dim; ++d)
        out[static_cast<std::size_t>(b) * dim + d] =
          math::bag_pool_element(rows, dim, index, offsets, scale, b, d);
  }

  void embedding_bag_expand(const float* dout, const int32_t* offsets, const float* scale,
                            int bags, int dim, float* dkeys) override {
    for (int b = 0; b < bags; ++b) {
      const float* src = dout + static_cast<std::size_t>(b) * dim;
      for (int32_t k = offsets[b]; k < offsets[b + 1]; ++k) {
        float* dst = dkeys + static_cast<std::size_t>(k - offsets[0]) * dim;
        for (int d = 0; d < dim; ++d) dst[d] = scale[b] * src[d];
      }
    }
  }

  void scale_rows(float* x, const float* scale, int rows, int cols) override {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) x[static_cast<std::size_t>(r) * cols + c] *= scale[r];
  }

  void dot_interaction_forward(const float* vectors, int n, int t, int dim,
                               float* out) override {
    interaction_scratch_.resize(cpu_interaction_scratch(t, dim));
    cpu_interaction_forward(vectors, n, t, dim, out, interaction_scratch_.data());
  }

  void dot_interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                                float* dvectors) override {
    interaction_scratch_.resize(cpu_interaction_scratch(t, dim));
    cpu_interaction_backward(vectors, dout, n, t, dim, dvectors, interaction_scratch_.data());
  }

  void fm_interaction_forward(const float* vectors, int n, int t, int dim,
                              float* out) override {
    const auto sample_size = static_cast<std::size_t>(t) * dim;
    for (int r = 0; r < n; ++r) out[r] = math::fm_second_order(vectors + r * sample_size, t, dim);
  }

  void fm_interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                               float* dvectors) override {
    const auto sample_size = static_cast<std::size_t>(t) * dim;
    interaction_scratch_.resize(static_cast<std::size_t>(std::max(dim, 0)));
    float* sums = interaction_scratch_.data();
    for (int r = 0; r < n; ++r) {
      const float* v = vectors + r * sample_size;
      float* dv = dvectors + r * sample_size;
      for (int d = 0; d < dim; ++d) sums[d] = math::fm_column_sum(v, t, dim, d);
      for (int i = 0; i < t; ++i)
        for (int d = 0; d < dim; ++d)
          dv[i * dim + d] = math::fm_vector_grad(dout[r], sums[d], v[i * dim + d]);
    }
  }

  void sigmoid(const float* logits, int n, float* probs) override {
    for (int i = 0; i < n; ++i) probs[i] = math::sigmoid(logits[i]);
  }

  binary_loss_stats sigmoid_cross_entropy(const float* logits, const float* labels, int n,
                                          float* dlogits, float grad_scale,
                                          float* probs) override {
    binary_loss_stats stats;
    stats.rows = n;
    for (int i = 0; i < n; ++i) {
      stats.loss_sum += math::sigmoid_cross_entropy(logits[i], labels[i], grad_scale,
                                                    dlogits ? dlogits + i : nullptr,
                                                    probs ? probs + i : nullptr);
    }
    return stats;
  }

private:
  std::vector<float> interaction_scratch_;  // cpu_interaction_forward, _backward; FM sums
};

} // namespace

std::unique_ptr<backend> make_cpu_backend() {
  // Each compute actor is one thread running its own backend; OpenBLAS must not start a
  // thread pool of its own on top of that.
  static std::once_flag blas_threads_set;
  std::call_once(blas_threads_set, [] {
    use_one_blas_thread();
    // A program that did not run itself again (rerun_with_better_blas_core: a user's own, the
    // Python module) hears once which kernels it is missing.
    auto better = blas_core_missed();
    if (!better.empty() && !std::getenv("OPENBLAS_CORETYPE"))
      std::fprintf(stderr,
                   "actorps: OpenBLAS does not know this CPU and chose its %s kernels (SSE3); "
                   "set OPENBLAS_CORETYPE=%s before the program starts for GEMMs ~3x faster\n",
                   blas_core_in_use().c_str(), better.c_str());
  });
  return std::make_unique<cpu_backend>();
}

} // namespace actorps
