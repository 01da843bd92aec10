// Which OpenBLAS kernels run: its fallback for a CPU it does not know is overruled when the
// CPU has more (kernels/blas_core.hpp), any other choice stands, and the actorps command runs
// with the better kernels whatever OpenBLAS chose by itself.
#include "kernels/blas_core.hpp"
#include "tests/command_runner.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using actorps::better_blas_core;
using actorps::cpu_vector_units;
using actorps::test::contains;
using actorps::test::run_command;

const cpu_vector_units sse_only{false, false}, avx2{true, false}, avx512{true, true};

/// The core `actorps version` says it runs.
std::string core_of(const std::string& version_output) {
  const std::string label = "OpenBLAS kernels: ";
  auto at = version_output.find(label);
  if (at == std::string::npos) return {};
  auto end = version_output.find('\n', at);
  return version_output.substr(at + label.size(), end - at - label.size());
}

} // namespace

TEST_CASE("blas core: the Prescott fallback gives way to the best kernels the CPU can run") {
  CHECK(better_blas_core("Prescott", avx512) == "SkylakeX");
  CHECK(better_blas_core("Prescott", avx2) == "Haswell");
  CHECK(better_blas_core("Prescott", sse_only).empty());  // it may be one
  // A core OpenBLAS recognised stands, even one below what the CPU has.
  CHECK(better_blas_core("Haswell", avx512).empty());
  CHECK(better_blas_core("SkylakeX", avx512).empty());
  CHECK(better_blas_core("Sandybridge", avx2).empty());
  CHECK(better_blas_core("", avx512).empty());
}

TEST_CASE("blas core: actorps never runs the fallback kernels on a CPU with AVX2") {
  auto r = run_command("env -u OPENBLAS_CORETYPE " + std::string(ACTORPS_BINARY) + " version");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  auto core = core_of(r.output);
  REQUIRE_MESSAGE(!core.empty(), r.output);
  // On a CPU OpenBLAS knows this is its own choice; on one it does not, the command ran itself
  // again with the better core (this test's own process shows what OpenBLAS chose alone).
  CHECK_MESSAGE(better_blas_core(core, actorps::this_cpu_vector_units()).empty(),
                "OpenBLAS in use: " << core << " (this test process: "
                                    << actorps::blas_core_in_use() << ")");
}

TEST_CASE("blas core: a user's OPENBLAS_CORETYPE is kept as it is") {
  auto prescott = run_command("env OPENBLAS_CORETYPE=Prescott " + std::string(ACTORPS_BINARY)
                              + " version");
  REQUIRE_MESSAGE(prescott.status == 0, prescott.output);
  CHECK(core_of(prescott.output) == "Prescott");
  CHECK(!contains(prescott.output, "SkylakeX"));
}
