#include "kernels/ctr_bags.hpp"

#include "kernels/ctr_math.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace actorps {

namespace {

template <class T>
T* grown(backend& be, device_buffer<T>& buffer, std::size_t n) {
  if (buffer.size() < n) buffer = device_buffer<T>(be, n);
  return buffer.get();
}

} // namespace

void ctr_bag_scales(const int32_t* offsets, int n, int fields, const std::vector<uint8_t>& mean,
                    std::vector<float>& scale) {
  const auto bags = static_cast<std::size_t>(n) * fields;
  scale.resize(bags);
  for (std::size_t b = 0; b < bags; ++b) {
    const bool by_mean = !mean.empty() && mean[b % fields] != 0;
    scale[b] = math::bag_scale(offsets[b + 1] - offsets[b], by_mean);
  }
}

double weighted_loss_sum(const float* logits, const float* labels, const float* weights, int n) {
  double sum = 0;
  for (int r = 0; r < n; ++r)
    sum += double(weights[r])
           * math::sigmoid_cross_entropy(logits[r], labels[r], 0.0f, nullptr, nullptr);
  return sum;
}

void check_bags(const char* who, const ctr_bags& bags, const int32_t* index, int u, int n,
                int fields) {
  const auto count = static_cast<std::size_t>(n) * fields;
  if (!bags.offsets || !bags.scale || bags.offsets[0] != 0)
    throw std::invalid_argument(std::string(who) + ": bags without offsets from 0 or scales");
  for (std::size_t b = 0; b < count; ++b)
    if (bags.offsets[b + 1] < bags.offsets[b])
      throw std::invalid_argument(std::string(who) + ": the offsets of bag " + std::to_string(b)
                                  + " descend");
  for (int32_t k = 0; k < bags.offsets[count]; ++k)
    if (index[k] < 0 || index[k] >= u)
      throw std::invalid_argument(std::string(who) + ": index " + std::to_string(index[k])
                                  + " of key " + std::to_string(k) + " is not in [0, "
                                  + std::to_string(u) + ")");
}

void ctr_bag_buffers::stage(const ctr_bags& bags, int count) {
  const auto c = static_cast<std::size_t>(count);
  be_.copy_to_device(grown(be_, offsets_, c + 1), bags.offsets, (c + 1) * sizeof(int32_t));
  be_.copy_to_device(grown(be_, scale_, std::max<std::size_t>(c, 1)), bags.scale,
                     c * sizeof(float));
}

float* ctr_bag_buffers::stage_weights(const float* weights, int n) {
  const auto c = static_cast<std::size_t>(n);
  float* out = grown(be_, weights_, std::max<std::size_t>(c, 1));
  be_.copy_to_device(out, weights, c * sizeof(float));
  return out;
}

int32_t* ctr_bag_buffers::stage_index(device_buffer<int32_t>& buffer, const int32_t* index,
                                      std::size_t entries) {
  int32_t* out = grown(be_, buffer, std::max<std::size_t>(entries, 1));
  if (entries > 0) be_.copy_to_device(out, index, entries * sizeof(int32_t));
  return out;
}

float* ctr_bag_buffers::keys_scratch(std::size_t floats) {
  return grown(be_, dkeys_, std::max<std::size_t>(floats, 1));
}

} // namespace actorps
