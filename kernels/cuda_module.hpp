// The CUDA backend is a module, libactorps_cuda.so, loaded at run time the first time a backend
// other than the CPU's is asked for (backend_factory.cpp), not a library every actorps process
// links: cuBLAS's own start-up gave every process about 84 MB of anonymous memory and 26 000
// page faults before main, on hosts without a GPU and in tasks that never compute (ps, chief).
//
// This header is the contract between the two sides: the module (cuda_backend.cu) exports
// actorps_cuda_module(), which returns its entry points; the loader (cuda_module.cpp) finds the
// module, checks its version and hands the entry points to the factory. Both sides are built
// from the same tree; the version still refuses a module left over from another build.
#pragma once

#include "kernels/backend_factory.hpp"

#include <memory>
#include <string>

namespace actorps {

/// Bump whenever cuda_module_api or the backend interface (backend.hpp) changes.
constexpr int cuda_module_version = 1;

/// What the module offers: the three calls backend_factory.hpp declares for CUDA.
struct cuda_module_api {
  int version;
  int (*device_count)(std::string* why);
  std::unique_ptr<backend> (*make_backend)(int device);
  /// An event stopwatch when `be` is the module's backend, else nullptr.
  std::unique_ptr<stopwatch> (*make_stopwatch)(backend& be);
};

/// The module's entry points, loading it on the first call (once per process, thread-safe), or
/// nullptr with *why saying why there are none: no NVIDIA driver on this host, or the module
/// could not be loaded or is of another version (the dlopen error and the path tried).
/// Where it is looked for: $ACTORPS_CUDA_MODULE when set; else beside the shared object this
/// code is in (the Python extension), beside the running executable, and where this build
/// wrote it.
const cuda_module_api* cuda_module(std::string* why);

/// Loads the module at `path` (no driver check): its entry points, or nullptr with *why naming
/// the dlopen error or the version found. cuda_module() tries its places with this.
const cuda_module_api* open_cuda_module(const std::string& path, std::string* why);

/// The entry points only if cuda_module() already loaded them; never loads.
const cuda_module_api* cuda_module_if_loaded();

} // namespace actorps

/// The module's one exported symbol.
extern "C" const actorps::cuda_module_api* actorps_cuda_module();
