// The backend factory in every build: kind names, the CUDA probe and its fallbacks (on this
// CPU-only machine and on a GPU one), and host buffers.
#include "kernels/backend_factory.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace actorps {

TEST_CASE("backend kinds parse and print as cpu, cuda and auto") {
  for (backend_kind kind : {backend_kind::cpu, backend_kind::cuda, backend_kind::automatic}) {
    const auto parsed = parse_backend_kind(to_string(kind));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == kind);
  }
  CHECK(std::string(to_string(backend_kind::automatic)) == "auto");
  CHECK(parse_backend_kind("cpu") == backend_kind::cpu);
  CHECK(parse_backend_kind("cuda") == backend_kind::cuda);
  CHECK(parse_backend_kind("auto") == backend_kind::automatic);
  for (const char* bad : {"", "gpu", "CUDA", "automatic", "cpu "}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_backend_kind(bad).has_value());
  }
}

TEST_CASE("make_backend(cpu) is the CPU backend") {
  std::string why = "untouched";
  auto be = make_backend(backend_kind::cpu, 0, &why);
  REQUIRE(be);
  CHECK(be->name() == "cpu");
  CHECK(why == "untouched");
}

TEST_CASE("without a usable CUDA device: count 0 with a reason, cuda refused, auto on the CPU") {
  std::string count_why;
  const int count = cuda_device_count(&count_why);
#if !defined(ACTORPS_HAVE_CUDA)
  CHECK(count == 0);
#endif
  if (count > 0) {
    // A GPU machine: the same calls must pick CUDA.
    auto cuda = make_backend(backend_kind::cuda, 0);
    REQUIRE(cuda);
    CHECK(cuda->name() == "cuda");
    auto automatic = make_backend(backend_kind::automatic, 0);
    REQUIRE(automatic);
    CHECK(automatic->name() == "cuda");
    std::string why;
    CHECK(make_backend(backend_kind::cuda, count, &why) == nullptr);  // one past the last
    CHECK(why.find("does not exist") != std::string::npos);
    return;
  }
  INFO("cuda_device_count reason: " << count_why);
  CHECK_FALSE(count_why.empty());

  std::string why;
  CHECK(make_backend(backend_kind::cuda, 0, &why) == nullptr);
  INFO("make_backend(cuda) reason: " << why);
  CHECK(why.rfind("--backend cuda: ", 0) == 0);
  CHECK(why.find("CUDA") != std::string::npos);
  CHECK(why.find(count_why) != std::string::npos);  // the CUDA error text is passed on
  CHECK(make_backend(backend_kind::cuda, 0) == nullptr);  // why is optional

  std::string auto_why;
  auto fallback = make_backend(backend_kind::automatic, 0, &auto_why);
  REQUIRE(fallback);
  CHECK(fallback->name() == "cpu");
  CHECK(auto_why.find(count_why) != std::string::npos);
  CHECK_THROWS_AS(make_cuda_backend(0), backend_error);
}

TEST_CASE("host_buffer: aligned, round trip through a device buffer, movable") {
  auto be = make_backend(backend_kind::automatic, 0);
  REQUIRE(be);
  const std::size_t n = 1000;
  host_buffer<float> src(*be, n);
  CHECK(src.size() == n);
  CHECK(reinterpret_cast<std::uintptr_t>(src.get()) % 64 == 0);
  std::iota(src.begin(), src.end(), -3.5f);
  device_buffer<float> dev(*be, n);
  be->copy_to_device(dev.get(), src.get(), n * sizeof(float));
  host_buffer<float> dst(*be, n);
  be->copy_to_host(dst.get(), dev.get(), n * sizeof(float));
  for (std::size_t i = 0; i < n; ++i) REQUIRE(dst[i] == src[i]);

  host_buffer<float> moved = std::move(dst);
  CHECK(moved.size() == n);
  CHECK(moved[999] == src[999]);
  CHECK(dst.get() == nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  host_buffer<int32_t> none;
  CHECK(none.size() == 0);
}

TEST_CASE("stopwatch times queued work on any backend") {
  auto be = make_backend(backend_kind::automatic, 0);
  REQUIRE(be);
  auto watch = make_stopwatch(*be);
  watch->start();
  const std::vector<float> ones(64, 1.0f);
  device_buffer<float> dev(*be, ones.size());
  be->copy_to_device(dev.get(), ones.data(), ones.size() * sizeof(float));
  const double ms = watch->stop_ms();
  CHECK(ms >= 0.0);
  CHECK(ms < 10000.0);
}

} // namespace actorps
