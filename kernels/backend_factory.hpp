// Choosing and building a backend: CPU, CUDA, or CUDA when a usable device exists.
//
// Works in every build: without CUDA support (ACTORPS_HAVE_CUDA undefined) the CUDA calls
// report "no device" with the reason instead of failing to link.
#pragma once

#include "actors/ps/backend_kind.hpp"
#include "kernels/backend.hpp"

#include <memory>
#include <optional>
#include <string>

namespace actorps {

/// Number of CUDA devices this process can use. On 0, *why (if not null) receives the reason,
/// with the CUDA error text (e.g. "cudaGetDeviceCount: CUDA driver version is insufficient for
/// CUDA runtime version") or that this build has no CUDA support.
int cuda_device_count(std::string* why = nullptr);

/// The CUDA backend on `device`: its own stream and cuBLAS handle. Throws backend_error when
/// the device cannot be used (or this build has no CUDA support).
std::unique_ptr<backend> make_cuda_backend(int device);

/// The backend of `kind` (`device` is the CUDA device index). cpu: always the CPU backend.
/// cuda: the CUDA backend, or nullptr with *why set to one sentence naming the cause.
/// automatic: CUDA when possible, else the CPU backend with *why saying why not CUDA.
std::unique_ptr<backend> make_backend(backend_kind kind, int device = 0,
                                      std::string* why = nullptr);

/// Times work queued on a backend: CUDA events on the CUDA backend's stream, otherwise the
/// host clock around synchronize(). For benchmarks.
class stopwatch {
public:
  virtual ~stopwatch() = default;
  /// Marks the start (after the work queued so far).
  virtual void start() = 0;
  /// Milliseconds from start() to the end of the work queued since; waits for that work.
  virtual double stop_ms() = 0;
};

/// A stopwatch for `be` (which must outlive it).
std::unique_ptr<stopwatch> make_stopwatch(backend& be);

} // namespace actorps
