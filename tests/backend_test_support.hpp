// Helpers shared by the backend tests (CPU kernels against references, CUDA against the CPU):
// seeded inputs, moving buffers in and out of a backend, and the llm.c-style tolerance check.
#pragma once

#include "kernels/backend.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace actorps::test {

inline std::vector<float> random_floats(std::mt19937& rng, std::size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<int32_t> random_labels(std::mt19937& rng, std::size_t n, int classes) {
  std::vector<int32_t> v(n);
  for (auto& y : v) y = static_cast<int32_t>(rng() % static_cast<unsigned>(classes));
  return v;
}

template <class T>
device_buffer<T> to_device(backend& be, const std::vector<T>& host) {
  device_buffer<T> buf(be, host.size());
  be.copy_to_device(buf.get(), host.data(), host.size() * sizeof(T));
  return buf;
}

template <class T>
std::vector<T> to_host(backend& be, const device_buffer<T>& buf) {
  std::vector<T> host(buf.size());
  be.copy_to_host(host.data(), buf.get(), host.size() * sizeof(T));
  be.synchronize();
  return host;
}

/// Checks |got − ref| ≤ tol + |ref|·eps elementwise (NaN fails), printing the first 5
/// mismatches.
template <class Ref>
void check_close(const std::vector<float>& got, const std::vector<Ref>& ref, double tol,
                 double eps, const std::string& what) {
  REQUIRE(got.size() == ref.size());
  std::size_t bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double want = static_cast<double>(ref[i]);
    const double diff = std::fabs(static_cast<double>(got[i]) - want);
    if (!(diff <= tol + std::fabs(want) * eps)) {
      if (bad < 5) first << "  [" << i << "] got " << got[i] << ", expected " << want << "\n";
      ++bad;
    }
  }
  INFO(what << ": " << bad << " of " << got.size() << " mismatches\n" << first.str());
  CHECK(bad == 0);
}

} // namespace actorps::test
