#include "actors/protocol/model_spec.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace actorps {

std::optional<consistency> parse_consistency(const std::string& name) {
  if (name == "sync") return consistency::sync;
  if (name == "ssp") return consistency::ssp;
  if (name == "async") return consistency::async;
  return std::nullopt;
}

const char* to_string(consistency mode) {
  switch (mode) {
    case consistency::sync: return "sync";
    case consistency::ssp: return "ssp";
    case consistency::async: return "async";
  }
  return "?";
}

std::optional<std::vector<int>> parse_layers(const std::string& text) {
  std::vector<int> layers;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find('-', pos);
    if (end == std::string::npos) end = text.size();
    auto part = text.substr(pos, end - pos);
    if (part.empty() || part.size() > 7
        || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    int width = std::stoi(part);
    if (width <= 0) return std::nullopt;
    layers.push_back(width);
    pos = end + 1;
  }
  if (layers.size() < 2) return std::nullopt;
  return layers;
}

std::string to_string(const std::vector<int>& layers) {
  std::string out;
  for (auto w : layers) out += (out.empty() ? "" : "-") + std::to_string(w);
  return out;
}

int train_spec::staleness_bound() const {
  switch (mode) {
    case consistency::sync: return 0;
    case consistency::ssp: return staleness;
    case consistency::async: return -1;
  }
  return -1;
}

block_layout::block_layout(const std::vector<int>& layers, uint32_t block_floats, int shards) {
  if (layers.size() < 2) throw std::invalid_argument("a model needs at least two layer widths");
  if (block_floats == 0) throw std::invalid_argument("block_floats must be positive");
  if (shards <= 0) throw std::invalid_argument("the number of shards must be positive");
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    auto prefix = "dense" + std::to_string(l);
    auto kernel = std::size_t(layers[l]) * std::size_t(layers[l + 1]);
    tensors_.push_back({prefix + "/kernel", total_floats_, kernel});
    total_floats_ += kernel;
    tensors_.push_back({prefix + "/bias", total_floats_, std::size_t(layers[l + 1])});
    total_floats_ += std::size_t(layers[l + 1]);
  }
  for (uint32_t t = 0; t < tensors_.size(); ++t) {
    for (std::size_t off = 0; off < tensors_[t].size; off += block_floats) {
      auto size = std::min<std::size_t>(block_floats, tensors_[t].size - off);
      block_info b;
      b.id = static_cast<uint32_t>(blocks_.size());
      b.tensor = t;
      b.offset = tensors_[t].offset + off;
      b.size = static_cast<uint32_t>(size);
      blocks_.push_back(b);
    }
  }
  // Greedy largest-first (LPT): the result is within one block of perfectly balanced.
  std::vector<uint32_t> order(blocks_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return blocks_[a].size > blocks_[b].size; });
  shard_floats_.assign(shards, 0);
  for (auto id : order) {
    auto s = std::min_element(shard_floats_.begin(), shard_floats_.end()) - shard_floats_.begin();
    blocks_[id].shard = static_cast<int>(s);
    shard_floats_[s] += blocks_[id].size;
  }
  shard_blocks_.resize(shards);
  std::vector<std::size_t> fill(shards, 0);
  for (auto& b : blocks_) {
    shard_blocks_[b.shard].push_back(b.id);
    b.shard_offset = fill[b.shard];
    fill[b.shard] += b.size;
  }
}

void block_layout::gather(int s, const float* flat, float* shard_buffer) const {
  for (auto id : shard_blocks_[s]) {
    const auto& b = blocks_[id];
    std::memcpy(shard_buffer + b.shard_offset, flat + b.offset, b.size * sizeof(float));
  }
}

void block_layout::scatter(int s, const float* shard_buffer, float* flat) const {
  for (auto id : shard_blocks_[s]) {
    const auto& b = blocks_[id];
    std::memcpy(flat + b.offset, shard_buffer + b.shard_offset, b.size * sizeof(float));
  }
}

} // namespace actorps
