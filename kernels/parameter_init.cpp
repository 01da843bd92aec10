// He-uniform initial parameters from a splitmix64 stream: integer arithmetic and correctly
// rounded double operations only, so every platform produces the same bits.
#include "kernels/parameter_init.hpp"
#include "kernels/mlp.hpp"
#include "actors/ps/splitmix64.hpp"

#include <cmath>

namespace actorps {

std::vector<float> initial_parameters(const std::vector<int>& layers, uint64_t seed) {
  std::vector<float> params(mlp_parameter_count(layers), 0.0f);  // biases stay zero
  splitmix64 rng(seed);
  std::size_t offset = 0;
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    const auto in = static_cast<std::size_t>(layers[l]);
    const auto out = static_cast<std::size_t>(layers[l + 1]);
    // sqrt is correctly rounded by IEEE 754, so the limit is the same everywhere.
    const double limit = std::sqrt(6.0 / static_cast<double>(in));
    for (std::size_t i = 0; i < in * out; ++i) {
      params[offset + i] = static_cast<float>((2.0 * rng.next_unit() - 1.0) * limit);
    }
    offset += in * out + out;
  }
  return params;
}

} // namespace actorps
