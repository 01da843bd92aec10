#include "actors/protocol/model_spec.hpp"

#include "actors/ps/splitmix64.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace actorps {

std::size_t tensor_spec::size() const {
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::size_t model_spec::total_floats() const {
  std::size_t n = 0;
  for (const auto& t : tensors) n += t.size();
  return n;
}

std::vector<float> initial_values(const model_spec& model, uint64_t seed) {
  std::vector<float> values(model.total_floats(), 0.0f);
  splitmix64 rng(seed);
  std::size_t offset = 0;
  for (const auto& t : model.tensors) {
    if (t.init == tensor_init::uniform) {
      const double limit = t.scale;
      for (std::size_t i = 0; i < t.size(); ++i)
        values[offset + i] = static_cast<float>((2.0 * rng.next_unit() - 1.0) * limit);
    }
    offset += t.size();
  }
  return values;
}

std::string describe(const tensor_spec& tensor) {
  std::string out = tensor.name + " [";
  for (std::size_t i = 0; i < tensor.shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(tensor.shape[i]);
  return out + "]";
}

namespace {

bool valid_name(const std::string& name) {
  return !name.empty() && name.size() <= 200
         && std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 127; });
}

} // namespace

std::string invalid_model(const model_spec& model) {
  if (model.tensors.empty()) return "the model has no tensors";
  std::set<std::string> names;
  std::size_t total = 0;
  for (const auto& t : model.tensors) {
    if (!valid_name(t.name))
      return "tensor name '" + t.name + "' must be 1 to 200 printable characters without spaces";
    if (!names.insert(t.name).second) return "two tensors are named '" + t.name + "'";
    if (t.shape.size() > 8) return describe(t) + " has more than 8 dimensions";
    double floats = 1;
    for (auto d : t.shape) {
      if (d == 0) return describe(t) + " has a zero dimension";
      floats *= d;
    }
    if (floats > double(1u << 31)) return describe(t) + " has more than 2^31 values";
    if (t.init == tensor_init::uniform && !(std::isfinite(t.scale) && t.scale >= 0))
      return describe(t) + " has a uniform initializer without a finite, non-negative scale";
    total += t.size();
    if (total > (std::size_t(1) << 31)) return "the model has more than 2^31 values";
  }
  for (const auto& t : model.sparse_tables) {
    if (!valid_name(t.name))
      return "sparse table name '" + t.name + "' must be 1 to 200 printable characters without "
             "spaces";
    if (!names.insert(t.name).second) return "two tensors or tables are named '" + t.name + "'";
    if (auto why = invalid_table_config(t.config); !why.empty())
      return "sparse table " + t.name + ": " + why;
  }
  return "";
}

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

int64_t schedule_clock(const train_spec& spec, int64_t clock) {
  if (spec.lr_workers <= 0) return clock;
  return (spec.schedule_batches + (clock - spec.schedule_from) * spec.workers) / spec.lr_workers;
}

float rate_divisor(const train_spec& spec, std::size_t count) {
  const auto n = static_cast<float>(count);
  return spec.lr_workers <= 0 ? n
                              : n * static_cast<float>(spec.lr_workers) / static_cast<float>(spec.workers);
}

int train_spec::staleness_bound() const {
  switch (mode) {
    case consistency::sync: return 0;
    case consistency::ssp: return staleness;
    case consistency::async: return -1;
  }
  return -1;
}

void place_buckets(train_spec& spec) {
  if (spec.model.sparse_tables.empty() || !spec.bucket_shards.empty()) return;
  for (auto shard : assign_buckets(default_bucket_count, spec.shards))
    spec.bucket_shards.push_back(static_cast<uint16_t>(shard));
}

std::string invalid_buckets(const train_spec& spec) {
  const auto& b = spec.bucket_shards;
  if (spec.model.sparse_tables.empty())
    return b.empty() ? "" : "buckets placed for a model without sparse tables";
  if (b.empty()) return "the sparse tables' buckets are not placed";
  if (b.size() > 65536) return std::to_string(b.size()) + " buckets, more than 65536";
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i] >= spec.shards)
      return "bucket " + std::to_string(i) + " is placed on shard " + std::to_string(b[i])
             + " of " + std::to_string(spec.shards);
  return "";
}

std::string invalid_cut(const model_spec& model, uint32_t block_floats, int shards) {
  if (shards > max_shards)
    return std::to_string(shards) + " shards, more than " + std::to_string(max_shards);
  if (block_floats == 0) return "";  // block_layout says so
  std::size_t blocks = 0;
  for (const auto& t : model.tensors) blocks += (t.size() + block_floats - 1) / block_floats;
  if (blocks > max_blocks)
    return "blocks of " + std::to_string(block_floats) + " floats cut the model into "
           + std::to_string(blocks) + " blocks, more than 2^20: use larger blocks";
  return "";
}

std::string invalid_block_placement(const train_spec& spec) {
  if (spec.block_shards.empty()) return "";
  std::size_t blocks = 0;
  if (spec.block_floats > 0)
    for (const auto& t : spec.model.tensors)
      blocks += (t.size() + spec.block_floats - 1) / spec.block_floats;
  if (spec.block_shards.size() != blocks)
    return "a dense placement of " + std::to_string(spec.block_shards.size())
           + " blocks for a model cut into " + std::to_string(blocks);
  for (std::size_t i = 0; i < spec.block_shards.size(); ++i)
    if (spec.block_shards[i] >= spec.shards)
      return "block " + std::to_string(i) + " is placed on shard "
             + std::to_string(spec.block_shards[i]) + " of " + std::to_string(spec.shards);
  return "";
}

block_layout::block_layout(const model_spec& model, uint32_t block_floats, int shards,
                           const std::vector<uint16_t>& owners) {
  if (auto why = invalid_model(model); !why.empty()) throw std::invalid_argument(why);
  if (block_floats == 0) throw std::invalid_argument("block_floats must be positive");
  if (shards <= 0) throw std::invalid_argument("the number of shards must be positive");
  if (auto why = invalid_cut(model, block_floats, shards); !why.empty())
    throw std::invalid_argument(why);
  for (const auto& t : model.tensors) {
    tensors_.push_back({t.name, t.shape, total_floats_, t.size()});
    total_floats_ += t.size();
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
  shard_floats_.assign(shards, 0);
  if (!owners.empty()) {
    if (owners.size() != blocks_.size())
      throw std::invalid_argument("a dense placement of " + std::to_string(owners.size())
                                  + " blocks for a model cut into "
                                  + std::to_string(blocks_.size()));
    for (auto& b : blocks_) {
      if (owners[b.id] >= shards)
        throw std::invalid_argument("block " + std::to_string(b.id) + " placed on shard "
                                    + std::to_string(owners[b.id]) + " of "
                                    + std::to_string(shards));
      b.shard = owners[b.id];
      shard_floats_[b.shard] += b.size;
    }
  } else {
    place_largest_first(shards);
  }
  shard_blocks_.resize(shards);
  std::vector<std::size_t> fill(shards, 0);
  for (auto& b : blocks_) {
    shard_blocks_[b.shard].push_back(b.id);
    b.shard_offset = fill[b.shard];
    fill[b.shard] += b.size;
  }
}

std::vector<uint16_t> block_layout::owners() const {
  std::vector<uint16_t> out;
  out.reserve(blocks_.size());
  for (const auto& b : blocks_) out.push_back(static_cast<uint16_t>(b.shard));
  return out;
}

std::vector<uint32_t> block_layout::block_sizes() const {
  std::vector<uint32_t> out;
  out.reserve(blocks_.size());
  for (const auto& b : blocks_) out.push_back(b.size);
  return out;
}

void block_layout::place_largest_first(int shards) {
  // Greedy largest-first (LPT): the result is within one block of perfectly balanced.
  std::vector<uint32_t> order(blocks_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return blocks_[a].size > blocks_[b].size; });
  // The shard holding the fewest floats, the lower index on a tie: the top of a min-heap of
  // (floats, shard), so that many blocks on many shards cost B log S, not B × S.
  using load = std::pair<std::size_t, int>;
  std::vector<load> heap;
  heap.reserve(static_cast<std::size_t>(shards));
  for (int s = 0; s < shards; ++s) heap.emplace_back(0, s);  // ascending: already a min-heap
  for (auto id : order) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<load>());
    auto& least = heap.back();
    blocks_[id].shard = least.second;
    least.first += blocks_[id].size;
    shard_floats_[least.second] = least.first;
    std::push_heap(heap.begin(), heap.end(), std::greater<load>());
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
