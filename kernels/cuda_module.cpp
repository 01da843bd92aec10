// Finds and loads libactorps_cuda.so (cuda_module.hpp). Built only with CUDA support.
#include "kernels/cuda_module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace actorps {

namespace {

constexpr const char* module_name = "libactorps_cuda.so";

/// The directory of `path`, with its trailing '/', or "" when it has none.
std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string{} : path.substr(0, slash + 1);
}

/// The directory of the running executable, or "" when unknown.
std::string executable_dir() {
  std::vector<char> path(4096);
  const auto n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  return n <= 0 ? std::string{} : dir_of(std::string(path.data(), static_cast<std::size_t>(n)));
}

/// The directory of the shared object this code was linked into (the Python extension, which
/// is installed with the module beside it), or "" when it is the executable itself.
std::string own_object_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&cuda_module), &info) == 0 || info.dli_fname == nullptr)
    return {};
  std::string name = info.dli_fname;
  return name.find(".so") == std::string::npos ? std::string{} : dir_of(name);
}

std::vector<std::string> candidates() {
  if (const char* set = std::getenv("ACTORPS_CUDA_MODULE"); set && *set) return {set};
  std::vector<std::string> out;
  for (const auto& dir : {own_object_dir(), executable_dir()})
    if (!dir.empty()) out.push_back(dir + module_name);
  // installed: PREFIX/bin/actorps and PREFIX/lib/actorps/ (apps/CMakeLists.txt)
  if (const auto dir = executable_dir(); !dir.empty())
    out.push_back(dir + "../lib/actorps/" + module_name);
  out.push_back(ACTORPS_CUDA_MODULE_BUILD_PATH);
  // (the same place twice is tried once)
  std::vector<std::string> unique;
  for (auto& p : out)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(std::move(p));
  return unique;
}

/// Loads the module from the first place that has it, or nullptr with *why saying why not.
const cuda_module_api* load(std::string& why) {
  // Without the driver's library no device can be used: say so without paying for cuBLAS.
  // (Left open when found: the CUDA runtime opens it anyway.)
  if (::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) == nullptr) {
    why = std::string("no NVIDIA CUDA driver on this host (") + ::dlerror() + ")";
    return nullptr;
  }
  for (const auto& path : candidates()) {
    std::string tried;
    if (const auto* api = open_cuda_module(path, &tried)) return api;
    why += (why.empty() ? "" : "; ") + tried;
  }
  return nullptr;
}

std::once_flag loaded_once;
std::atomic<const cuda_module_api*> loaded{nullptr};  // stored once, under loaded_once
std::string not_loaded;                              // why loaded is null, set with it

} // namespace

const cuda_module_api* open_cuda_module(const std::string& path, std::string* why) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    if (why) *why = "the CUDA module could not be loaded: " + std::string(::dlerror());
    return nullptr;
  }
  using entry = const cuda_module_api* (*)();
  auto get = reinterpret_cast<entry>(::dlsym(handle, "actorps_cuda_module"));
  const cuda_module_api* api = get ? get() : nullptr;
  if (api != nullptr && api->version == cuda_module_version)
    return api;  // never closed: backends and stopwatches made by it may live until exit
  if (why)
    *why = "the CUDA module " + path + " is not this build's (version "
           + (api ? std::to_string(api->version) : std::string("unknown")) + ", expected "
           + std::to_string(cuda_module_version) + ")";
  ::dlclose(handle);
  return nullptr;
}

const cuda_module_api* cuda_module(std::string* why) {
  std::call_once(loaded_once, [] { loaded.store(load(not_loaded), std::memory_order_release); });
  const auto* api = loaded.load(std::memory_order_acquire);
  if (api == nullptr && why) *why = not_loaded;
  return api;
}

const cuda_module_api* cuda_module_if_loaded() { return loaded.load(std::memory_order_acquire); }

} // namespace actorps
