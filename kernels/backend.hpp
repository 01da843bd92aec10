// The compute backend interface every worker runs its forward/backward on.
//
// One implementation per device kind (CPU with OpenBLAS; CUDA + cuBLAS, built by
// backend_factory.hpp). Memory handed to the compute calls lives where the backend says: host
// memory for the CPU backend, device memory for a GPU backend; move data with copy_to_device /
// copy_to_host. All matrices are row-major. A backend object belongs to one actor and is not
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace actorps {

enum class activation { identity, relu };

/// A device or driver failure inside a backend (a CUDA or cuBLAS error, device memory
/// exhausted), with the failing call's file:line and the driver's own text. Bad arguments stay
/// std::invalid_argument.
class backend_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Sums over a minibatch returned by the loss kernel (host values).
struct loss_stats {
  double loss_sum = 0;   ///< sum of per-row cross-entropy
  int64_t correct = 0;   ///< rows whose argmax equals the label
  int64_t rows = 0;
};

/// Sums over a minibatch returned by the binary loss kernel (host values).
struct binary_loss_stats {
  double loss_sum = 0;   ///< sum of per-row sigmoid cross-entropy
  int64_t rows = 0;
};

class backend {
public:
  virtual ~backend() = default;
  virtual std::string name() const = 0;

  // --- memory -----------------------------------------------------------------------------
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr) noexcept = 0;
  /// Queues a host → backend copy. It may still be running on return when host_src came from
  /// allocate_host: keep such a source unchanged until synchronize() or copy_to_host().
  virtual void copy_to_device(void* dst, const void* host_src, std::size_t bytes) = 0;
  /// Backend → host copy; returns with the data in host_dst (after all queued work).
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  /// Blocks until every queued operation has finished.
  virtual void synchronize() = 0;
  /// True when the compute memory is host memory (the CPU backend): the compute calls may then
  /// read and write the caller's host buffers where they are, and a model skips its copies to
  /// and from them (mlp: the parameters, the batch and the gradient, 2.1 MB a step of the
  /// default model, where memcpy fell from 13.7 to 5.8 % of a simulate run's CPU; dlrm: its
  /// dense parameters, features and gradient).
  virtual bool computes_in_host_memory() const { return false; }

  /// Host memory the backend copies to and from fastest (page-locked for CUDA), 64-byte
  /// aligned. The CPU backend's is plain aligned memory.
  virtual void* allocate_host(std::size_t bytes) {
    return ::operator new(bytes, std::align_val_t{64});
  }
  virtual void deallocate_host(void* ptr) noexcept {
    ::operator delete(ptr, std::align_val_t{64});
  }

  // --- compute ----------------------------------------------------------------------------
  /// c (m×n) = alpha · op(a) · op(b) + beta · c, op(x) = xᵀ if trans_x; row-major, leading
  /// dimensions as in cblas.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) = 0;

  /// z (rows×cols) += bias (cols) broadcast over rows, then z = act(z), in place.
  virtual void bias_activation_forward(float* z, const float* bias, int rows, int cols,
                                       activation act) = 0;

  /// dz (n) *= act'(·), where out (n) = act(z) is the forward output.
  virtual void activation_backward(float* dz, const float* out, std::size_t n,
                                   activation act) = 0;

  /// db (cols) = column sums of dz (rows×cols).
  virtual void bias_backward(float* db, const float* dz, int rows, int cols) = 0;

  /// probs (rows×cols) = the softmax of each row of logits (rows×cols); probs may be logits
  /// (in place). For inference: the class probabilities of a forward pass.
  virtual void softmax(const float* logits, int rows, int cols, float* probs) = 0;

  /// Softmax cross-entropy of logits (rows×cols) against labels (rows, each in [0, cols)).
  /// If dlogits is not null it receives (softmax − onehot) · grad_scale (rows×cols).
  /// Returns host sums; the loss is computed stably (max-subtracted log-sum-exp).
  virtual loss_stats softmax_cross_entropy(const float* logits, const int32_t* labels, int rows,
                                           int cols, float* dlogits, float grad_scale) = 0;

  // --- click-through-rate models (DLRM; formulas in kernels/ctr_math.hpp) ----------------

  /// out (n×dim) row r = rows (u×dim) row index[r], for index (n) with values in [0, u).
  /// An index outside [0, u): the CPU backend throws std::invalid_argument naming it; the
  /// CUDA backend cannot report it without a stall and writes a zero row instead (callers
  /// check their indexes on the host, as dlrm does).
  virtual void embedding_gather(const float* rows, int u, int dim, const int32_t* index, int n,
                                float* out) = 0;

  /// The gather's adjoint: zeroes grad_rows (u×dim), then adds each row r of dout (n×dim) into
  /// grad_rows row index[r] (index (n), each in [0, u); outside it the CPU backend throws
  /// std::invalid_argument, the CUDA backend skips the row). Both backends add a row's
  /// contributions in index order (CUDA: a stable sort by row, then one sum per row and column,
  /// no atomics), so they agree bit for bit and a sync run on a GPU repeats exactly.
  virtual void embedding_scatter_add(const float* dout, const int32_t* index, int n, int dim,
                                     float* grad_rows, int u) = 0;

  /// The DLRM dot interaction: vectors is (n×t×dim), t vectors per sample; out (n×pairs),
  /// pairs = t(t−1)/2, receives each sample's pairwise dot products v_i·v_j, i > j, in the order
  /// of kernels/ctr_math.hpp: (1,0), (2,0), (2,1), (3,0), …, pair (i, j) at i(i−1)/2 + j.
  virtual void dot_interaction_forward(const float* vectors, int n, int t, int dim,
                                       float* out) = 0;

  /// The interaction's backward: dout (n×pairs) is the gradient of the dots; dvectors
  /// (n×t×dim) is overwritten with dvectors[r,i,:] = Σ_{k≠i} dout[r, pair(i,k)]·vectors[r,k,:].
  virtual void dot_interaction_backward(const float* vectors, const float* dout, int n, int t,
                                        int dim, float* dvectors) = 0;

  /// The factorization machine's second-order term (DeepFM): vectors is (n×t×dim); out (n)
  /// receives each sample's Σ_{i<j} v_i·v_j, as math::fm_second_order sums it.
  virtual void fm_interaction_forward(const float* vectors, int n, int t, int dim,
                                      float* out) = 0;

  /// Its backward: dout (n) is the gradient of the terms; dvectors (n×t×dim) is overwritten
  /// with dvectors[r,i,d] = dout[r]·(Σ_k vectors[r,k,d] − vectors[r,i,d]) (math::fm_vector_grad).
  virtual void fm_interaction_backward(const float* vectors, const float* dout, int n, int t,
                                       int dim, float* dvectors) = 0;

  /// Multi-hot pooling (kernels/ctr_math.hpp): out (bags×dim) row b = scale[b] · the sum of
  /// rows (u×dim) rows index[k] for k in [offsets[b], offsets[b + 1]) (offsets: bags + 1,
  /// ascending; an empty bag gives zeros). Indexes outside [0, u): the CPU backend throws
  /// std::invalid_argument, the CUDA backend reads them as zero rows (callers check on the host).
  virtual void embedding_bag_pool(const float* rows, int u, int dim, const int32_t* index,
                                  const int32_t* offsets, const float* scale, int bags,
                                  float* out) = 0;

  /// The pooling's adjoint up to the scatter: dkeys ((offsets[bags] − offsets[0])×dim) row
  /// k − offsets[0] = scale[b] · dout row b for each k of bag b. embedding_scatter_add of
  /// dkeys by the same index then sums each row's uses.
  virtual void embedding_bag_expand(const float* dout, const int32_t* offsets, const float* scale,
                                    int bags, int dim, float* dkeys) = 0;

  /// x (rows×cols) row r *= scale[r]: a sample's weight on its gradient.
  virtual void scale_rows(float* x, const float* scale, int rows, int cols) = 0;

  /// probs (n) = the logistic sigmoid of logits (n); probs may be logits (in place). For
  /// inference: the probability of label 1 of a binary model.
  virtual void sigmoid(const float* logits, int n, float* probs) = 0;

  /// Sigmoid cross-entropy of logits (n) against labels (n, each 0 or 1; values in [0, 1] work
  /// as soft labels), computed stably as max(z,0) − z·y + log1p(exp(−|z|)). If dlogits is not
  /// null it receives (sigmoid(z) − y)·grad_scale; if probs is not null, sigmoid(z) (n each).
  /// Returns host sums (the loss summed in double).
  virtual binary_loss_stats sigmoid_cross_entropy(const float* logits, const float* labels,
                                                  int n, float* dlogits, float grad_scale,
                                                  float* probs) = 0;
};

/// The reference backend: OpenBLAS sgemm with one BLAS thread (the caller's), plain loops for
/// the rest.
std::unique_ptr<backend> make_cpu_backend();

/// Where a backend_buffer lives: the backend's compute memory, or its host staging memory.
enum class memory { device, host };

/// An owning buffer of `n` values of T allocated by a backend: `device_buffer` in its compute
/// memory (allocate), `host_buffer` in its host memory (allocate_host; pinned on a GPU backend:
/// the staging area for parameters and gradients, one copy each way per step). Element access
/// is only meaningful for host buffers.
template <class T, memory Where>
class backend_buffer {
public:
  backend_buffer() = default;
  backend_buffer(backend& be, std::size_t n)
    : be_(&be),
      ptr_(static_cast<T*>(Where == memory::device ? be.allocate(n * sizeof(T))
                                                   : be.allocate_host(n * sizeof(T)))),
      size_(n) {}
  backend_buffer(backend_buffer&& other) noexcept { swap(other); }
  backend_buffer& operator=(backend_buffer&& other) noexcept { swap(other); return *this; }
  backend_buffer(const backend_buffer&) = delete;
  backend_buffer& operator=(const backend_buffer&) = delete;
  ~backend_buffer() {
    if (!ptr_) return;
    if (Where == memory::device)
      be_->deallocate(ptr_);
    else
      be_->deallocate_host(ptr_);
  }

  T* get() const { return ptr_; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) const { return ptr_[i]; }
  T* begin() const { return ptr_; }
  T* end() const { return ptr_ + size_; }

private:
  void swap(backend_buffer& other) noexcept {
    std::swap(be_, other.be_); std::swap(ptr_, other.ptr_); std::swap(size_, other.size_);
  }
  backend* be_ = nullptr;
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

template <class T>
using device_buffer = backend_buffer<T, memory::device>;
template <class T>
using host_buffer = backend_buffer<T, memory::host>;

} // namespace actorps
