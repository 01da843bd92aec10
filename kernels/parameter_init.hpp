// Seeded, platform-independent initial parameters for the MLP (He-uniform kernels, zero biases).
#pragma once

#include <cstdint>
#include <vector>

namespace actorps {

/// Flat parameters (mlp.hpp layout) for the given layer widths; same seed → same bits on every
/// platform (no std:: distributions, whose output is implementation-defined).
std::vector<float> initial_parameters(const std::vector<int>& layers, uint64_t seed);

} // namespace actorps
