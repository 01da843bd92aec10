// Multi-hot bags for the CTR kernels' tests: seeded bags of given lengths, and the pools of a
// table's rows in double, written from ctr_bags.hpp's definition (scale · Σ rows of the bag).
#pragma once

#include "kernels/ctr_bags.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace actorps::test {

struct test_bags {
  std::vector<int32_t> offsets;  ///< n·fields + 1
  std::vector<float> scale;      ///< n·fields
  std::vector<uint8_t> mean;     ///< fields

  ctr_bags view() const { return {offsets.data(), scale.data()}; }
  int keys() const { return offsets.back(); }
};

/// Bags of n samples × fields, bag b of length lengths[b % lengths.size()], field f pooled by
/// the mean where mean[f].
inline test_bags make_test_bags(int n, int fields, const std::vector<int>& lengths,
                                const std::vector<uint8_t>& mean) {
  test_bags bags;
  bags.mean = mean;
  bags.offsets.push_back(0);
  for (int b = 0; b < n * fields; ++b)
    bags.offsets.push_back(bags.offsets.back()
                           + lengths[static_cast<std::size_t>(b) % lengths.size()]);
  ctr_bag_scales(bags.offsets.data(), n, fields, mean, bags.scale);
  return bags;
}

/// keys() index entries in [0, u).
inline std::vector<int32_t> random_bag_index(std::mt19937& rng, const test_bags& bags, int u) {
  std::vector<int32_t> index(static_cast<std::size_t>(bags.keys()));
  for (auto& i : index) i = static_cast<int32_t>(rng() % static_cast<unsigned>(u));
  return index;
}

/// The pools (bags × width) of `values` (rows of width), in double.
inline std::vector<double> pool_in_double(const test_bags& bags, const std::vector<int32_t>& index,
                                          const std::vector<double>& values, int width) {
  const std::size_t count = bags.scale.size();
  std::vector<double> out(count * static_cast<std::size_t>(width), 0.0);
  for (std::size_t b = 0; b < count; ++b) {
    const int length = bags.offsets[b + 1] - bags.offsets[b];
    const bool mean = !bags.mean.empty() && bags.mean[b % bags.mean.size()];
    const double scale = mean ? (length > 0 ? 1.0 / length : 0.0) : 1.0;
    for (int32_t k = bags.offsets[b]; k < bags.offsets[b + 1]; ++k)
      for (int d = 0; d < width; ++d)
        out[b * width + d] += scale * values[static_cast<std::size_t>(index[k]) * width + d];
  }
  return out;
}

} // namespace actorps::test
