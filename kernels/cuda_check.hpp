// CUDA_CHECK / CUBLAS_CHECK: turn a failed CUDA runtime or cuBLAS call into a backend_error
// carrying file:line, the call and the library's own error text. Only for CUDA translation
// units (needs the CUDA headers).
#pragma once

#include "kernels/backend.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

namespace actorps::detail {

/// Throws backend_error "CUDA error at FILE:LINE: WHAT: NAME (TEXT)".
[[noreturn]] inline void throw_cuda_error(cudaError_t err, const std::string& what,
                                          const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so the next call does not report it again
  throw backend_error("CUDA error at " + std::string(file) + ":" + std::to_string(line) + ": " +
                      what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                      ")");
}

/// Throws backend_error "cuBLAS error at FILE:LINE: WHAT: STATUS".
[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const std::string& what,
                                            const char* file, int line) {
  throw backend_error("cuBLAS error at " + std::string(file) + ":" + std::to_string(line) +
                      ": " + what + ": " + cublasGetStatusName(status) + " (" +
                      cublasGetStatusString(status) + ")");
}

} // namespace actorps::detail

/// Throws a backend_error when the CUDA runtime call `expr` does not return cudaSuccess.
#define CUDA_CHECK(expr)                                                                     \
  do {                                                                                       \
    const cudaError_t actorps_cuda_err_ = (expr);                                            \
    if (actorps_cuda_err_ != cudaSuccess) {                                                  \
      ::actorps::detail::throw_cuda_error(actorps_cuda_err_, #expr, __FILE__, __LINE__);     \
    }                                                                                        \
  } while (0)

/// Throws a backend_error when the cuBLAS call `expr` does not return CUBLAS_STATUS_SUCCESS.
#define CUBLAS_CHECK(expr)                                                                   \
  do {                                                                                       \
    const cublasStatus_t actorps_cublas_status_ = (expr);                                    \
    if (actorps_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                   \
      ::actorps::detail::throw_cublas_error(actorps_cublas_status_, #expr, __FILE__,         \
                                            __LINE__);                                       \
    }                                                                                        \
  } while (0)
