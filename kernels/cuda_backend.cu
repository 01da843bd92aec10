// The CUDA backend: cuBLAS sgemm plus small kernels, all queued on the backend's own stream.
// The kernels only decide launch geometry and memory movement; every formula comes from
// kernels/math.hpp and kernels/ctr_math.hpp, the same code the CPU backend runs. Built as the
// module libactorps_cuda.so that the backend factory loads when asked (cuda_module.hpp).
#include "kernels/backend_factory.hpp"
#include "kernels/cuda_module.hpp"
#include "kernels/ctr_math.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/math.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

namespace actorps {
namespace {

// ----------------------------------------------------------------------------------------
// launch geometry

constexpr int elementwise_threads = 256;  // grid-stride loops, capped at max_blocks_
constexpr int column_tile = 32;           // bias_backward: one warp reads 32 adjacent columns
constexpr int row_slices = 16;            // ... while 16 warps walk interleaved rows
constexpr int loss_threads = 256;         // softmax(_cross_entropy): one thread per row

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

unsigned grid_for(std::size_t work_items, int threads, int max_blocks) {
  const std::size_t blocks = (work_items + threads - 1) / threads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(blocks, max_blocks)));
}

// ----------------------------------------------------------------------------------------
// device helpers

__device__ std::size_t global_thread() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

template <bool relu>
__device__ float activate(float v) {
  return relu ? math::relu(v) : v;
}

/// Warp-level folds (lane 0 ends up with the result), as functors so they inline.
struct warp_sum {
  template <class T>
  __device__ T operator()(T v) const {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
  }
};

struct warp_min {
  __device__ int operator()(int v) const {
    for (int offset = 16; offset > 0; offset >>= 1) {
      v = min(v, __shfl_down_sync(0xffffffffu, v, offset));
    }
    return v;
  }
};

/// Per-block (then total) sums of the loss kernel; copied back to the host once per call.
struct loss_totals {
  double loss_sum;
  long long correct;
  int bad_rows;       // rows whose label is outside [0, cols)
  int first_bad_row;  // INT_MAX when none
};

/// Reduces one value per thread of a block of `loss_threads` to thread 0 (which returns it);
/// `lanes` is shared scratch of 32 entries, written only by warp leaders.
template <class T, class Op>
__device__ T block_reduce(T v, T* lanes, Op warp_op, T identity) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_op(v);
  if (lane == 0) lanes[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? lanes[lane] : identity;
  return warp == 0 ? warp_op(v) : identity;
}

// ----------------------------------------------------------------------------------------
// kernels

/// c[i, j] = beta·c[i, j] over an m×n window with leading dimension ldc (gemm with k = 0).
__global__ void scale_matrix_kernel(float* c, int m, int n, int ldc, float beta) {
  const std::size_t total = static_cast<std::size_t>(m) * n;
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) {
    float& cij = c[(i / n) * ldc + i % n];
    cij = beta == 0.0f ? 0.0f : beta * cij;  // beta = 0 overwrites, as BLAS does
  }
}

/// z = act(z + bias[column]) over rows×cols, one element per step.
template <bool relu>
__global__ void bias_activation_kernel(float* z, const float* bias, std::size_t n, int cols) {
  for (std::size_t i = global_thread(); i < n; i += grid_stride()) {
    z[i] = activate<relu>(z[i] + bias[i % cols]);
  }
}

/// The same with float4 accesses: cols % 4 == 0 and z 16-byte aligned (bias need not be).
template <bool relu>
__global__ void bias_activation_vec4_kernel(float4* z, const float* bias, std::size_t n4,
                                            int cols4) {
  for (std::size_t i = global_thread(); i < n4; i += grid_stride()) {
    const float* b = bias + (i % cols4) * 4;
    float4 v = z[i];
    v.x = activate<relu>(v.x + b[0]);
    v.y = activate<relu>(v.y + b[1]);
    v.z = activate<relu>(v.z + b[2]);
    v.w = activate<relu>(v.w + b[3]);
    z[i] = v;
  }
}

/// dz *= relu'(out), one element per step.
__global__ void relu_backward_kernel(float* dz, const float* out, std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_stride()) {
    dz[i] *= math::relu_derivative(out[i]);
  }
}

/// The same with float4 accesses over the first 4·(n/4) elements (both pointers 16-byte
/// aligned); the first n % 4 threads then take the tail one element each.
__global__ void relu_backward_vec4_kernel(float* dz, const float* out, std::size_t n) {
  const std::size_t n4 = n / 4;
  float4* dz4 = reinterpret_cast<float4*>(dz);
  const float4* out4 = reinterpret_cast<const float4*>(out);
  for (std::size_t i = global_thread(); i < n4; i += grid_stride()) {
    float4 d = dz4[i];
    const float4 o = out4[i];
    d.x *= math::relu_derivative(o.x);
    d.y *= math::relu_derivative(o.y);
    d.z *= math::relu_derivative(o.z);
    d.w *= math::relu_derivative(o.w);
    dz4[i] = d;
  }
  const std::size_t tail = n4 * 4 + global_thread();
  if (tail < n) dz[tail] *= math::relu_derivative(out[tail]);
}

/// db[col] = Σ_rows dz[row, col]. Block (column_tile × row_slices) owns 32 columns: each warp
/// reads 32 adjacent floats of a row (coalesced), slices then fold in shared memory. Fixed
/// summation order, so the result is the same on every run.
__global__ void column_sum_kernel(float* db, const float* dz, int rows, int cols) {
  __shared__ float partial[row_slices][column_tile];
  const int col = blockIdx.x * column_tile + threadIdx.x;
  float sum = 0.0f;
  if (col < cols) {
#pragma unroll 4
    for (int r = threadIdx.y; r < rows; r += row_slices) {
      sum += dz[static_cast<std::size_t>(r) * cols + col];
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int s = 0; s < row_slices; ++s) total += partial[s][threadIdx.x];
    db[col] = total;
  }
}

/// probs = softmax of each row of logits, one thread per row (math::softmax_row); in place
/// is fine, since a row is read and written by the same thread.
__global__ void softmax_rows_kernel(const float* logits, int rows, int cols, float* probs) {
  for (std::size_t row = global_thread(); row < static_cast<std::size_t>(rows);
       row += grid_stride()) {
    const std::size_t offset = row * cols;
    math::softmax_row(logits + offset, cols, probs + offset);
  }
}

/// One thread per row runs math::softmax_cross_entropy_row; each block sums its rows' loss
/// (in double, like the CPU) and correct count into out[blockIdx.x]. Rows with a label outside
/// [0, cols) are skipped and counted instead (the host turns them into invalid_argument).
__global__ void softmax_cross_entropy_kernel(const float* logits, const int32_t* labels,
                                             int rows, int cols, float* dlogits,
                                             float grad_scale, loss_totals* out) {
  __shared__ double loss_lanes[32];
  __shared__ long long correct_lanes[32];
  __shared__ int bad_lanes[32], first_bad_lanes[32];
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  double loss = 0.0;
  long long correct = 0;
  int bad = 0, first_bad = INT_MAX;
  if (row < rows) {
    const int label = labels[row];
    if (label < 0 || label >= cols) {
      bad = 1;
      first_bad = row;
    } else {
      const std::size_t offset = static_cast<std::size_t>(row) * cols;
      bool hit = false;
      loss = math::softmax_cross_entropy_row(logits + offset, cols, label,
                                             dlogits ? dlogits + offset : nullptr, grad_scale,
                                             &hit);
      correct = hit ? 1 : 0;
    }
  }
  loss = block_reduce(loss, loss_lanes, warp_sum{}, 0.0);
  correct = block_reduce(correct, correct_lanes, warp_sum{}, 0LL);
  bad = block_reduce(bad, bad_lanes, warp_sum{}, 0);
  first_bad = block_reduce(first_bad, first_bad_lanes, warp_min{}, INT_MAX);
  if (threadIdx.x == 0) out[blockIdx.x] = {loss, correct, bad, first_bad};
}

/// Folds `blocks` per-block totals into *total in a fixed order (one block).
__global__ void sum_loss_totals_kernel(const loss_totals* partial, int blocks,
                                       loss_totals* total) {
  __shared__ double loss_lanes[32];
  __shared__ long long correct_lanes[32];
  __shared__ int bad_lanes[32], first_bad_lanes[32];
  double loss = 0.0;
  long long correct = 0;
  int bad = 0, first_bad = INT_MAX;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    loss += partial[b].loss_sum;
    correct += partial[b].correct;
    bad += partial[b].bad_rows;
    first_bad = min(first_bad, partial[b].first_bad_row);
  }
  loss = block_reduce(loss, loss_lanes, warp_sum{}, 0.0);
  correct = block_reduce(correct, correct_lanes, warp_sum{}, 0LL);
  bad = block_reduce(bad, bad_lanes, warp_sum{}, 0);
  first_bad = block_reduce(first_bad, first_bad_lanes, warp_min{}, INT_MAX);
  if (threadIdx.x == 0) *total = {loss, correct, bad, first_bad};
}

/// out[r, :] = rows[index[r], :], one element of out (n×dim) per step; a row whose index is
/// outside [0, u) becomes zeros instead of a read outside rows.
__global__ void embedding_gather_kernel(const float* rows, int u, int dim, const int32_t* index,
                                        std::size_t total, float* out) {
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) {
    const int32_t row = index[i / dim];
    out[i] = row >= 0 && row < u ? rows[static_cast<std::size_t>(row) * dim + i % dim] : 0.0f;
  }
}

/// The scatter-add's first step: key[r] = index[r], or u for an index outside [0, u) (sorted
/// last and skipped), and position[r] = r. A stable sort by key then lists each row's
/// contributions in index order, which is the order the CPU backend adds them in.
__global__ void scatter_keys_kernel(const int32_t* index, int n, int u, uint32_t* key,
                                    uint32_t* position) {
  for (std::size_t r = global_thread(); r < static_cast<std::size_t>(n); r += grid_stride()) {
    const int32_t row = index[r];
    key[r] = row >= 0 && row < u ? static_cast<uint32_t>(row) : static_cast<uint32_t>(u);
    position[r] = static_cast<uint32_t>(r);
  }
}

/// grad_rows[key, d] = the sum of dout[r, d] over the rows r of that key, in ascending r, one
/// element (sorted slot p, column d) per step: the slot that starts a run of equal keys sums
/// the run, the others do nothing. No atomics, so the result is the CPU backend's bit for bit
/// (both start at 0.0f and add in index order) and the same on every run.
__global__ void scatter_sum_kernel(const float* dout, const uint32_t* key,
                                   const uint32_t* position, int n, int dim, uint32_t u,
                                   float* grad_rows) {
  const std::size_t total = static_cast<std::size_t>(n) * dim;
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) {
    const std::size_t p = i / dim;
    const int d = static_cast<int>(i % dim);
    const uint32_t row = key[p];
    if (row == u || (p > 0 && key[p - 1] == row)) continue;
    float sum = 0.0f;
    for (std::size_t q = p; q < static_cast<std::size_t>(n) && key[q] == row; ++q) {
      sum += dout[static_cast<std::size_t>(position[q]) * dim + d];
    }
    grad_rows[static_cast<std::size_t>(row) * dim + d] = sum;
  }
}

/// out[r, p] = math::interaction_pair_dot of sample r, one pair per step (total = n·pairs).
__global__ void dot_interaction_forward_kernel(const float* vectors, std::size_t total, int t,
                                               int dim, int pairs, float* out) {
  const std::size_t sample_size = static_cast<std::size_t>(t) * dim;
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) {
    const std::size_t r = i / pairs;
    out[i] = math::interaction_pair_dot(vectors + r * sample_size, dim,
                                        static_cast<int>(i % pairs));
  }
}

/// dvectors[r, v, d] = math::interaction_vector_grad, one element of dvectors (n×t×dim) per
/// step: each thread sums its own element, so no atomics and a fixed order.
__global__ void dot_interaction_backward_kernel(const float* vectors, const float* dout,
                                                std::size_t total, int t, int dim, int pairs,
                                                float* dvectors) {
  const std::size_t sample_size = static_cast<std::size_t>(t) * dim;
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) {
    const std::size_t r = i / sample_size;
    const int within = static_cast<int>(i % sample_size);
    dvectors[i] = math::interaction_vector_grad(vectors + r * sample_size, dout + r * pairs, t,
                                                dim, within / dim, within % dim);
  }
}

/// out[r] = math::fm_second_order of sample r, one sample per step.
__global__ void fm_interaction_forward_kernel(const float* vectors, int n, int t, int dim,
                                              float* out) {
  const std::size_t sample_size = static_cast<std::size_t>(t) * dim;
  for (std::size_t r = global_thread(); r < static_cast<std::size_t>(n); r += grid_stride()) {
    out[r] = math::fm_second_order(vectors + r * sample_size, t, dim);
  }
}

/// dvectors[r, i, d] = math::fm_vector_grad, one element of dvectors (n×t×dim) per step; each
/// thread sums its own column, in the CPU's order, so no atomics.
__global__ void fm_interaction_backward_kernel(const float* vectors, const float* dout,
                                               std::size_t total, int t, int dim,
                                               float* dvectors) {
  const std::size_t sample_size = static_cast<std::size_t>(t) * dim;
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) {
    const std::size_t r = i / sample_size;
    const float* v = vectors + r * sample_size;
    const int d = static_cast<int>(i % sample_size) % dim;
    dvectors[i] = math::fm_vector_grad(dout[r], math::fm_column_sum(v, t, dim, d),
                                       vectors[i]);
  }
}

/// out[b, d] = math::bag_pool_element, one element of out (bags×dim) per step: each thread sums
/// its own bag's column in the CPU's order, so no atomics; an index outside [0, u) reads zeros.
__global__ void embedding_bag_pool_kernel(const float* rows, int u, int dim, const int32_t* index,
                                          const int32_t* offsets, const float* scale,
                                          std::size_t total, float* out) {
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) {
    const int b = static_cast<int>(i / dim);
    const int d = static_cast<int>(i % dim);
    float sum = 0.0f;
    for (int32_t k = offsets[b]; k < offsets[b + 1]; ++k) {
      const int32_t row = index[k];
      if (row >= 0 && row < u) sum += rows[static_cast<std::size_t>(row) * dim + d];
    }
    out[i] = scale[b] * sum;
  }
}

/// dkeys[k − offsets[0], d] = scale[b]·dout[b, d] for each key k of bag b, one element of dout
/// per step (each writes its bag's keys).
__global__ void embedding_bag_expand_kernel(const float* dout, const int32_t* offsets,
                                            const float* scale, std::size_t total, int dim,
                                            float* dkeys) {
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) {
    const int b = static_cast<int>(i / dim);
    const int d = static_cast<int>(i % dim);
    const float g = scale[b] * dout[i];
    for (int32_t k = offsets[b]; k < offsets[b + 1]; ++k)
      dkeys[static_cast<std::size_t>(k - offsets[0]) * dim + d] = g;
  }
}

/// x[r, c] *= scale[r], one element per step.
__global__ void scale_rows_kernel(float* x, const float* scale, std::size_t total, int cols) {
  for (std::size_t i = global_thread(); i < total; i += grid_stride()) x[i] *= scale[i / cols];
}

/// probs = σ(logits), one element per step (in place is fine).
__global__ void sigmoid_kernel(const float* logits, std::size_t n, float* probs) {
  for (std::size_t i = global_thread(); i < n; i += grid_stride()) {
    probs[i] = math::sigmoid(logits[i]);
  }
}

/// One thread per logit runs math::sigmoid_cross_entropy; each block sums its loss (in double,
/// like the CPU) into out[blockIdx.x] (the other fields of loss_totals stay empty).
__global__ void sigmoid_cross_entropy_kernel(const float* logits, const float* labels, int n,
                                             float* dlogits, float grad_scale, float* probs,
                                             loss_totals* out) {
  __shared__ double loss_lanes[32];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  double loss = 0.0;
  if (i < n) {
    loss = math::sigmoid_cross_entropy(logits[i], labels[i], grad_scale,
                                       dlogits ? dlogits + i : nullptr,
                                       probs ? probs + i : nullptr);
  }
  loss = block_reduce(loss, loss_lanes, warp_sum{}, 0.0);
  if (threadIdx.x == 0) out[blockIdx.x] = {loss, 0, 0, INT_MAX};
}

// ----------------------------------------------------------------------------------------
// backend

class cuda_backend final : public backend {
public:
  explicit cuda_backend(int device) : device_(device) {
    try {
      CUDA_CHECK(cudaSetDevice(device_));
      cudaDeviceProp props{};
      CUDA_CHECK(cudaGetDeviceProperties(&props, device_));
      max_blocks_ = props.multiProcessorCount * 32;
      // A device this build has no code for fails here, not at the first launch.
      cudaFuncAttributes attributes{};
      const cudaError_t image = cudaFuncGetAttributes(&attributes, column_sum_kernel);
      if (image != cudaSuccess) {
        detail::throw_cuda_error(image,
                                 std::string("device ") + props.name + " (compute capability " +
                                   std::to_string(props.major) + "." +
                                   std::to_string(props.minor) +
                                   ") cannot run this build's kernels; rebuild with "
                                   "CMAKE_CUDA_ARCHITECTURES including it",
                                 __FILE__, __LINE__);
      }
      CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      CUBLAS_CHECK(cublasCreate(&cublas_));
      CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
      // Plain FP32 (no TF32 tensor cores): results must match the CPU backend to FP32 rounding.
      CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
      CUDA_CHECK(cudaMallocHost(&host_totals_, sizeof(loss_totals)));
      reserve_loss_blocks(64);
    } catch (...) {
      release();
      throw;
    }
  }

  ~cuda_backend() override { release(); }

  std::string name() const override { return "cuda"; }

  /// The stream every call of this backend is queued on.
  cudaStream_t stream() const { return stream_; }

  // --- memory -----------------------------------------------------------------------------

  void* allocate(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    select_device();
    void* ptr = nullptr;
    const cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err != cudaSuccess) {
      detail::throw_cuda_error(err, "cudaMalloc of " + std::to_string(bytes) + " bytes",
                               __FILE__, __LINE__);
    }
    return ptr;
  }

  void deallocate(void* ptr) noexcept override {
    if (ptr == nullptr) return;
    cudaSetDevice(device_);
    cudaFree(ptr);  // errors here mean the context is already gone; nothing left to free
  }

  void* allocate_host(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    select_device();
    void* ptr = nullptr;
    const cudaError_t err = cudaMallocHost(&ptr, bytes);
    if (err != cudaSuccess) {
      detail::throw_cuda_error(err, "cudaMallocHost of " + std::to_string(bytes) + " bytes",
                               __FILE__, __LINE__);
    }
    return ptr;
  }

  void deallocate_host(void* ptr) noexcept override {
    if (ptr != nullptr) cudaFreeHost(ptr);
  }

  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes == 0) return;
    select_device();
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  }

  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    select_device();
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void synchronize() override {
    select_device();
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // --- compute ----------------------------------------------------------------------------

  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
            int lda, const float* b, int ldb, float beta, float* c, int ldc) override {
    if (m < 0 || n < 0 || k < 0) throw std::invalid_argument("gemm: negative dimension");
    if (m == 0 || n == 0) return;
    select_device();
    if (k == 0) {  // cuBLAS would reject lda = 0; only the beta scaling is left to do
      const std::size_t total = static_cast<std::size_t>(m) * n;
      scale_matrix_kernel<<<grid_for(total, elementwise_threads, max_blocks_),
                            elementwise_threads, 0, stream_>>>(c, m, n, ldc, beta);
      CUDA_CHECK(cudaGetLastError());
      return;
    }
    // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a row-major matrix
    // read column-major is its transpose: swap the operands, keep the transpose flags.
    CUBLAS_CHECK(cublasSgemm(cublas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                             trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a,
                             lda, &beta, c, ldc));
  }

  void bias_activation_forward(float* z, const float* bias, int rows, int cols,
                               activation act) override {
    if (rows <= 0 || cols <= 0) return;
    select_device();
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    const bool relu = act == activation::relu;
    if (cols % 4 == 0 && aligned16(z)) {
      const unsigned grid = grid_for(n / 4, elementwise_threads, max_blocks_);
      float4* z4 = reinterpret_cast<float4*>(z);
      if (relu) {
        bias_activation_vec4_kernel<true>
          <<<grid, elementwise_threads, 0, stream_>>>(z4, bias, n / 4, cols / 4);
      } else {
        bias_activation_vec4_kernel<false>
          <<<grid, elementwise_threads, 0, stream_>>>(z4, bias, n / 4, cols / 4);
      }
    } else {
      const unsigned grid = grid_for(n, elementwise_threads, max_blocks_);
      if (relu) {
        bias_activation_kernel<true><<<grid, elementwise_threads, 0, stream_>>>(z, bias, n, cols);
      } else {
        bias_activation_kernel<false><<<grid, elementwise_threads, 0, stream_>>>(z, bias, n, cols);
      }
    }
    CUDA_CHECK(cudaGetLastError());
  }

  void activation_backward(float* dz, const float* out, std::size_t n,
                           activation act) override {
    if (act == activation::identity || n == 0) return;
    select_device();
    if (aligned16(dz) && aligned16(out)) {
      relu_backward_vec4_kernel<<<grid_for(n / 4, elementwise_threads, max_blocks_),
                                  elementwise_threads, 0, stream_>>>(dz, out, n);
    } else {
      relu_backward_kernel<<<grid_for(n, elementwise_threads, max_blocks_),
                             elementwise_threads, 0, stream_>>>(dz, out, n);
    }
    CUDA_CHECK(cudaGetLastError());
  }

  void bias_backward(float* db, const float* dz, int rows, int cols) override {
    if (cols <= 0) return;
    select_device();
    const unsigned grid = static_cast<unsigned>((cols + column_tile - 1) / column_tile);
    column_sum_kernel<<<grid, dim3(column_tile, row_slices), 0, stream_>>>(
      db, dz, std::max(rows, 0), cols);
    CUDA_CHECK(cudaGetLastError());
  }

  void softmax(const float* logits, int rows, int cols, float* probs) override {
    if (rows <= 0) return;
    if (cols <= 0) throw std::invalid_argument("softmax: no columns");
    select_device();
    softmax_rows_kernel<<<grid_for(static_cast<std::size_t>(rows), loss_threads, max_blocks_),
                          loss_threads, 0, stream_>>>(logits, rows, cols, probs);
    CUDA_CHECK(cudaGetLastError());
  }

  loss_stats softmax_cross_entropy(const float* logits, const int32_t* labels, int rows,
                                   int cols, float* dlogits, float grad_scale) override {
    loss_stats stats;
    stats.rows = rows;
    if (rows <= 0) return stats;
    if (cols <= 0) throw std::invalid_argument("softmax_cross_entropy: no columns");
    select_device();
    const int blocks = (rows + loss_threads - 1) / loss_threads;
    softmax_cross_entropy_kernel<<<blocks, loss_threads, 0, stream_>>>(
      logits, labels, rows, cols, dlogits, grad_scale, loss_block_sums(blocks));
    CUDA_CHECK(cudaGetLastError());
    fold_loss_totals(blocks);
    if (host_totals_->bad_rows > 0) {
      const int row = host_totals_->first_bad_row;
      int32_t label = 0;
      copy_to_host(&label, labels + row, sizeof(label));
      throw std::invalid_argument("softmax_cross_entropy: label " + std::to_string(label) +
                                  " of row " + std::to_string(row) + " is not in [0, " +
                                  std::to_string(cols) + ")");
    }
    stats.loss_sum = host_totals_->loss_sum;
    stats.correct = host_totals_->correct;
    return stats;
  }

  void embedding_gather(const float* rows, int u, int dim, const int32_t* index, int n,
                        float* out) override {
    if (n <= 0 || dim <= 0) return;
    select_device();
    const std::size_t total = static_cast<std::size_t>(n) * dim;
    embedding_gather_kernel<<<grid_for(total, elementwise_threads, max_blocks_),
                              elementwise_threads, 0, stream_>>>(rows, u, dim, index, total, out);
    CUDA_CHECK(cudaGetLastError());
  }

  void embedding_scatter_add(const float* dout, const int32_t* index, int n, int dim,
                             float* grad_rows, int u) override {
    if (u <= 0 || dim <= 0) return;
    select_device();
    CUDA_CHECK(cudaMemsetAsync(grad_rows, 0,
                               static_cast<std::size_t>(u) * dim * sizeof(float), stream_));
    if (n <= 0) return;
    // keys and positions (in, then sorted), then CUB's temporary storage
    const auto keys_bytes = align_up(static_cast<std::size_t>(n) * sizeof(uint32_t));
    const int key_bits = 32 - __builtin_clz(static_cast<unsigned>(u));  // keys run 0..u
    std::size_t sort_bytes = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<uint32_t*>(nullptr),
                                               static_cast<uint32_t*>(nullptr),
                                               static_cast<uint32_t*>(nullptr),
                                               static_cast<uint32_t*>(nullptr), n, 0, key_bits,
                                               stream_));
    char* scratch = reserve_scatter_scratch(4 * keys_bytes + sort_bytes);
    auto* key_in = reinterpret_cast<uint32_t*>(scratch);
    auto* position_in = reinterpret_cast<uint32_t*>(scratch + keys_bytes);
    auto* key = reinterpret_cast<uint32_t*>(scratch + 2 * keys_bytes);
    auto* position = reinterpret_cast<uint32_t*>(scratch + 3 * keys_bytes);
    scatter_keys_kernel<<<grid_for(n, elementwise_threads, max_blocks_), elementwise_threads, 0,
                          stream_>>>(index, n, u, key_in, position_in);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch + 4 * keys_bytes, sort_bytes, key_in, key,
                                               position_in, position, n, 0, key_bits, stream_));
    const std::size_t total = static_cast<std::size_t>(n) * dim;
    scatter_sum_kernel<<<grid_for(total, elementwise_threads, max_blocks_), elementwise_threads,
                         0, stream_>>>(dout, key, position, n, dim, static_cast<uint32_t>(u),
                                       grad_rows);
    CUDA_CHECK(cudaGetLastError());
  }

  void dot_interaction_forward(const float* vectors, int n, int t, int dim,
                               float* out) override {
    const int pairs = math::interaction_pairs(t);
    if (n <= 0 || pairs <= 0) return;
    select_device();
    const std::size_t total = static_cast<std::size_t>(n) * pairs;
    dot_interaction_forward_kernel<<<grid_for(total, elementwise_threads, max_blocks_),
                                     elementwise_threads, 0, stream_>>>(vectors, total, t, dim,
                                                                        pairs, out);
    CUDA_CHECK(cudaGetLastError());
  }

  void dot_interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                                float* dvectors) override {
    if (n <= 0 || t <= 0 || dim <= 0) return;
    select_device();
    const std::size_t total = static_cast<std::size_t>(n) * t * dim;
    dot_interaction_backward_kernel<<<grid_for(total, elementwise_threads, max_blocks_),
                                      elementwise_threads, 0, stream_>>>(
      vectors, dout, total, t, dim, math::interaction_pairs(t), dvectors);
    CUDA_CHECK(cudaGetLastError());
  }

  void fm_interaction_forward(const float* vectors, int n, int t, int dim,
                              float* out) override {
    if (n <= 0) return;
    select_device();
    fm_interaction_forward_kernel<<<grid_for(static_cast<std::size_t>(n), elementwise_threads,
                                             max_blocks_),
                                    elementwise_threads, 0, stream_>>>(vectors, n, t, dim, out);
    CUDA_CHECK(cudaGetLastError());
  }

  void fm_interaction_backward(const float* vectors, const float* dout, int n, int t, int dim,
                               float* dvectors) override {
    if (n <= 0 || t <= 0 || dim <= 0) return;
    select_device();
    const std::size_t total = static_cast<std::size_t>(n) * t * dim;
    fm_interaction_backward_kernel<<<grid_for(total, elementwise_threads, max_blocks_),
                                     elementwise_threads, 0, stream_>>>(vectors, dout, total, t,
                                                                        dim, dvectors);
    CUDA_CHECK(cudaGetLastError());
  }

  void embedding_bag_pool(const float* rows, int u, int dim, const int32_t* index,
                          const int32_t* offsets, const float* scale, int bags,
                          float* out) override {
    if (bags <= 0 || dim <= 0) return;
    select_device();
    const std::size_t total = static_cast<std::size_t>(bags) * dim;
    embedding_bag_pool_kernel<<<grid_for(total, elementwise_threads, max_blocks_),
                                elementwise_threads, 0, stream_>>>(rows, u, dim, index, offsets,
                                                                   scale, total, out);
    CUDA_CHECK(cudaGetLastError());
  }

  void embedding_bag_expand(const float* dout, const int32_t* offsets, const float* scale,
                            int bags, int dim, float* dkeys) override {
    if (bags <= 0 || dim <= 0) return;
    select_device();
    const std::size_t total = static_cast<std::size_t>(bags) * dim;
    embedding_bag_expand_kernel<<<grid_for(total, elementwise_threads, max_blocks_),
                                  elementwise_threads, 0, stream_>>>(dout, offsets, scale, total,
                                                                     dim, dkeys);
    CUDA_CHECK(cudaGetLastError());
  }

  void scale_rows(float* x, const float* scale, int rows, int cols) override {
    if (rows <= 0 || cols <= 0) return;
    select_device();
    const std::size_t total = static_cast<std::size_t>(rows) * cols;
    scale_rows_kernel<<<grid_for(total, elementwise_threads, max_blocks_), elementwise_threads, 0,
                        stream_>>>(x, scale, total, cols);
    CUDA_CHECK(cudaGetLastError());
  }

  void sigmoid(const float* logits, int n, float* probs) override {
    if (n <= 0) return;
    select_device();
    sigmoid_kernel<<<grid_for(static_cast<std::size_t>(n), elementwise_threads, max_blocks_),
                     elementwise_threads, 0, stream_>>>(logits, static_cast<std::size_t>(n),
                                                        probs);
    CUDA_CHECK(cudaGetLastError());
  }

  binary_loss_stats sigmoid_cross_entropy(const float* logits, const float* labels, int n,
                                          float* dlogits, float grad_scale,
                                          float* probs) override {
    binary_loss_stats stats;
    stats.rows = n;
    if (n <= 0) return stats;
    select_device();
    const int blocks = (n + loss_threads - 1) / loss_threads;
    sigmoid_cross_entropy_kernel<<<blocks, loss_threads, 0, stream_>>>(
      logits, labels, n, dlogits, grad_scale, probs, loss_block_sums(blocks));
    CUDA_CHECK(cudaGetLastError());
    stats.loss_sum = fold_loss_totals(blocks).loss_sum;
    return stats;
  }

private:
  /// The calling thread's current device becomes ours: an actor may run on any thread.
  void select_device() { CUDA_CHECK(cudaSetDevice(device_)); }

  /// Where a loss kernel of `blocks` blocks writes its per-block sums: straight into the
  /// total for one block, else after it (folded by fold_loss_totals).
  loss_totals* loss_block_sums(int blocks) {
    reserve_loss_blocks(blocks);
    return blocks == 1 ? loss_blocks_ : loss_blocks_ + 1;
  }

  /// Folds the per-block sums of the loss kernel just queued (when more than one block) and
  /// returns the total, copied to host_totals_ after all queued work.
  const loss_totals& fold_loss_totals(int blocks) {
    if (blocks > 1) {
      sum_loss_totals_kernel<<<1, loss_threads, 0, stream_>>>(loss_blocks_ + 1, blocks,
                                                              loss_blocks_);
      CUDA_CHECK(cudaGetLastError());
    }
    CUDA_CHECK(cudaMemcpyAsync(host_totals_, loss_blocks_, sizeof(loss_totals),
                               cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return *host_totals_;
  }

  /// Room for the total plus `blocks` per-block sums of the loss kernel.
  void reserve_loss_blocks(int blocks) {
    if (blocks <= loss_block_capacity_) return;
    if (loss_blocks_ != nullptr) {
      CUDA_CHECK(cudaStreamSynchronize(stream_));  // a queued loss kernel may still use it
      CUDA_CHECK(cudaFree(loss_blocks_));
      loss_blocks_ = nullptr;
      loss_block_capacity_ = 0;
    }
    CUDA_CHECK(cudaMalloc(&loss_blocks_, sizeof(loss_totals) * (blocks + 1)));
    loss_block_capacity_ = blocks;
  }

  static std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

  /// The scatter-add's device scratch, grown (never shrunk) to at least `bytes`.
  char* reserve_scatter_scratch(std::size_t bytes) {
    if (bytes <= scatter_scratch_bytes_) return scatter_scratch_;
    if (scatter_scratch_ != nullptr) {
      CUDA_CHECK(cudaStreamSynchronize(stream_));  // a queued scatter may still use it
      CUDA_CHECK(cudaFree(scatter_scratch_));
      scatter_scratch_ = nullptr;
      scatter_scratch_bytes_ = 0;
    }
    CUDA_CHECK(cudaMalloc(&scatter_scratch_, bytes));
    scatter_scratch_bytes_ = bytes;
    return scatter_scratch_;
  }

  void release() noexcept {
    cudaSetDevice(device_);
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (loss_blocks_ != nullptr) cudaFree(loss_blocks_);
    if (scatter_scratch_ != nullptr) cudaFree(scatter_scratch_);
    scatter_scratch_ = nullptr;
    scatter_scratch_bytes_ = 0;
    if (host_totals_ != nullptr) cudaFreeHost(host_totals_);
    if (cublas_ != nullptr) cublasDestroy(cublas_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    loss_blocks_ = nullptr;
    host_totals_ = nullptr;
    cublas_ = nullptr;
    stream_ = nullptr;
    cudaGetLastError();  // leave no error behind for the next CUDA user on this thread
  }

  int device_;
  int max_blocks_ = 1;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  loss_totals* host_totals_ = nullptr;  // pinned: the one device→host copy of the loss sums
  loss_totals* loss_blocks_ = nullptr;  // [0] the total, [1..] per-block sums
  int loss_block_capacity_ = 0;
  char* scatter_scratch_ = nullptr;  // embedding_scatter_add: keys, positions, CUB's storage
  std::size_t scatter_scratch_bytes_ = 0;
};

// ----------------------------------------------------------------------------------------
// event stopwatch

class event_stopwatch final : public stopwatch {
public:
  explicit event_stopwatch(cuda_backend& be) : stream_(be.stream()) {
    CUDA_CHECK(cudaEventCreate(&start_));
    const cudaError_t err = cudaEventCreate(&stop_);
    if (err != cudaSuccess) {
      cudaEventDestroy(start_);
      detail::throw_cuda_error(err, "cudaEventCreate(&stop_)", __FILE__, __LINE__);
    }
  }
  ~event_stopwatch() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() override { CUDA_CHECK(cudaEventRecord(start_, stream_)); }
  double stop_ms() override {
    CUDA_CHECK(cudaEventRecord(stop_, stream_));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// ----------------------------------------------------------------------------------------
// the module's entry points (cuda_module.hpp)

int device_count(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    return 0;  // without a driver the count is left untouched: never trust it on error
  }
  if (count == 0 && why) *why = "cudaGetDeviceCount found no CUDA device";
  return count;
}

std::unique_ptr<backend> make_backend_on(int device) {
  return std::make_unique<cuda_backend>(device);
}

std::unique_ptr<stopwatch> make_event_stopwatch(backend& be) {
  auto* cuda = dynamic_cast<cuda_backend*>(&be);
  if (cuda == nullptr) return nullptr;
  return std::make_unique<event_stopwatch>(*cuda);
}

constexpr cuda_module_api entry_points{cuda_module_version, device_count, make_backend_on,
                                       make_event_stopwatch};

} // namespace
} // namespace actorps

extern "C" __attribute__((visibility("default"))) const actorps::cuda_module_api*
actorps_cuda_module() {
  return &actorps::entry_points;
}
