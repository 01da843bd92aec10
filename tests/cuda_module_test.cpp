// The CUDA backend as a module loaded when asked for (kernels/cuda_module.hpp): actorps starts
// without cuBLAS, the module this build wrote loads and answers, and what is not the module is
// refused with the reason. Runs on hosts without a GPU: the module loads without a device.
#include "tests/command_runner.hpp"

#include "kernels/backend_factory.hpp"

#if defined(ACTORPS_HAVE_CUDA)
#include "kernels/cuda_module.hpp"
#endif

#include <doctest/doctest.h>

#include <string>

namespace actorps {

TEST_CASE("actorps starts without loading cuBLAS or the CUDA runtime") {
  // The dynamic loader's own account of what it initialised (an observer outside our code).
  auto r = test::run_command("env LD_DEBUG=libs " + std::string(ACTORPS_BINARY) + " --help");
  REQUIRE(r.status == 0);
  REQUIRE(test::contains(r.output, "calling init"));  // LD_DEBUG did report
  CHECK_FALSE(test::contains(r.output, "libcublas"));
  CHECK_FALSE(test::contains(r.output, "libcudart"));
}

#if defined(ACTORPS_HAVE_CUDA)
TEST_CASE("cuda module: the one this build wrote loads, is its version, and answers") {
  std::string why;
  const auto* api = open_cuda_module(ACTORPS_CUDA_MODULE_PATH, &why);
  INFO("why: " << why);
  REQUIRE(api != nullptr);
  CHECK(api->version == cuda_module_version);
  std::string count_why;
  const int count = api->device_count(&count_why);
  if (count == 0) {  // this host has no device: CUDA's own reason comes back
    CHECK(count_why.rfind("cudaGetDeviceCount", 0) == 0);
  } else {
    auto be = api->make_backend(0);
    REQUIRE(be);
    CHECK(be->name() == "cuda");
    CHECK(api->make_stopwatch(*be) != nullptr);
  }
  // A backend the module did not make gets no event stopwatch from it (a type check across
  // the module's boundary).
  auto cpu = make_backend(backend_kind::cpu);
  CHECK(api->make_stopwatch(*cpu) == nullptr);
  // Opening it again is the same module.
  CHECK(open_cuda_module(ACTORPS_CUDA_MODULE_PATH, &why) == api);
}

TEST_CASE("cuda module: a missing file or a library that is not the module is refused, saying why") {
  std::string why;
  CHECK(open_cuda_module("/nonexistent/libactorps_cuda.so", &why) == nullptr);
  CHECK(test::contains(why, "could not be loaded"));
  CHECK(test::contains(why, "/nonexistent/libactorps_cuda.so"));
  why.clear();
  CHECK(open_cuda_module("libm.so.6", &why) == nullptr);  // loads, exports no entry point
  CHECK(test::contains(why, "is not this build's"));
  CHECK(test::contains(why, "libm.so.6"));
}
#endif

} // namespace actorps
