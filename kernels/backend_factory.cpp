// The backend factory. The CUDA parts (device count, backend, event stopwatch) live in the
// CUDA module, loaded when first asked for (cuda_module.hpp); a build without CUDA gets the
// stand-ins at the bottom of this file.
#include "kernels/backend_factory.hpp"

#if defined(ACTORPS_HAVE_CUDA)
#include "kernels/cuda_module.hpp"
#endif

#include <chrono>
#include <exception>

namespace actorps {

namespace {

class host_stopwatch final : public stopwatch {
public:
  explicit host_stopwatch(backend& be) : be_(be) {}
  void start() override {
    be_.synchronize();
    start_ = std::chrono::steady_clock::now();
  }
  double stop_ms() override {
    be_.synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
      .count();
  }

private:
  backend& be_;
  std::chrono::steady_clock::time_point start_;
};

/// The CUDA backend on `device`, or nullptr and the cause in *reason.
std::unique_ptr<backend> try_cuda(int device, std::string* reason) {
  std::string count_why;
  const int count = cuda_device_count(&count_why);
#if !defined(ACTORPS_HAVE_CUDA)
  (void)count;
  (void)device;
  *reason = count_why;
  return nullptr;
#else
  if (count == 0) {
    *reason = "no usable CUDA device (" + count_why + ")";
    return nullptr;
  }
  if (device < 0 || device >= count) {
    *reason = "CUDA device " + std::to_string(device) + " does not exist (devices 0 to " +
              std::to_string(count - 1) + ")";
    return nullptr;
  }
  try {
    return make_cuda_backend(device);
  } catch (const std::exception& e) {
    *reason = "CUDA device " + std::to_string(device) + " is not usable (" + e.what() + ")";
    return nullptr;
  }
#endif
}

} // namespace

std::optional<backend_kind> parse_backend_kind(const std::string& text) {
  if (text == "cpu") return backend_kind::cpu;
  if (text == "cuda") return backend_kind::cuda;
  if (text == "auto") return backend_kind::automatic;
  return std::nullopt;
}

const char* to_string(backend_kind kind) {
  switch (kind) {
    case backend_kind::cpu: return "cpu";
    case backend_kind::cuda: return "cuda";
    case backend_kind::automatic: return "auto";
  }
  return "?";
}

std::unique_ptr<backend> make_backend(backend_kind kind, int device, std::string* why) {
  if (kind == backend_kind::cpu) return make_cpu_backend();
  std::string reason;
  auto cuda = try_cuda(device, &reason);
  if (cuda) return cuda;
  if (kind == backend_kind::cuda) {
    if (why) *why = "--backend cuda: " + reason;
    return nullptr;
  }
  if (why) *why = "--backend auto: running on the CPU: " + reason;
  return make_cpu_backend();
}

std::unique_ptr<stopwatch> make_stopwatch(backend& be) {
#if defined(ACTORPS_HAVE_CUDA)
  // Only a loaded module can have made `be`; a CPU backend never loads it.
  if (const auto* cuda = cuda_module_if_loaded())
    if (auto events = cuda->make_stopwatch(be)) return events;
#endif
  return std::make_unique<host_stopwatch>(be);
}

#if defined(ACTORPS_HAVE_CUDA)
int cuda_device_count(std::string* why) {
  const auto* cuda = cuda_module(why);
  return cuda ? cuda->device_count(why) : 0;
}

std::unique_ptr<backend> make_cuda_backend(int device) {
  std::string why;
  const auto* cuda = cuda_module(&why);
  if (cuda == nullptr) throw backend_error(why);
  return cuda->make_backend(device);
}
#else
constexpr const char* no_cuda_support =
  "this actorps was built without CUDA support (nvcc was not found at configure time, or "
  "ACTORPS_CUDA=off)";

int cuda_device_count(std::string* why) {
  if (why) *why = no_cuda_support;
  return 0;
}

std::unique_ptr<backend> make_cuda_backend(int /*device*/) {
  throw backend_error(no_cuda_support);
}
#endif

} // namespace actorps
