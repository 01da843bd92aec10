// The run's specification and the deterministic cut of the model into blocks and shards.
//
// A model (actors/ps/model_spec.hpp) is a list of named dense tensors and sparse tables plus
// the name of the plug-in that trains it ("mlp:784-256-128-10"); nothing below the plug-in
// knows what the tensors mean. Every role computes the same block table from (tensors, block_floats, shards) —
// the placement rule every role applies:
// tensors in model order are cut into blocks of at most block_floats values; blocks are
// assigned largest first to the shard holding the fewest floats so far (ties: lower block id,
// lower shard index), unless the spec carries a placement of its own (train_spec::block_shards,
// recorded when the shard count changes). A shard stores its blocks contiguously in block-id
// order.
#pragma once

#include "actors/protocol/bf16.hpp"
#include "actors/ps/lr_schedule.hpp"
#include "actors/ps/model_spec.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/sparse/key_buckets.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace actorps {

/// What every shard needs to know about a run (wire form: schema TrainSpec).
struct train_spec {
  model_spec model;
  uint32_t block_floats = 4096;
  int shards = 2;
  int workers = 2;
  consistency mode = consistency::ssp;
  int staleness = 2;
  optimizer_config optimizer;
  lr_schedule schedule = lr_schedule::cosine;
  int64_t total_clocks = 0;  ///< clocks per worker in the run; schedules decay over them
  int64_t checkpoint_every = 0;  ///< shards keep their state at its multiples; 0: never
  uint64_t seed = 1;
  /// Sparse keys: the owner shard of each virtual bucket (kernels/sparse/key_buckets.hpp);
  /// empty for a model without sparse tables. Written once by place_buckets, then only read, so
  /// that a later change of placement (elastic shards, replicas) moves buckets, not keys.
  std::vector<uint16_t> bucket_shards = {};
  /// Dense blocks: the owner shard of each block, in block-id order; empty: block_layout's rule
  /// from the shard count alone. Set when a placement changes (a live resize), so that only the
  /// blocks whose owner changes move.
  std::vector<uint16_t> block_shards = {};
  /// How workers push their dense gradients (--wire-precision); shards read what each Push says.
  wire_precision wire = wire_precision::fp32;
  /// Once the number of workers changed while training (a live resize), so that a minibatch
  /// teaches the model as much as before: the learning rate per minibatch stays that of
  /// `lr_workers` workers (the run's first number), and the schedule runs on the minibatches
  /// trained: `schedule_batches` of them by clock `schedule_from`, `workers` more each clock
  /// since. 0: never changed (the schedule's clock is the clock; the rate shared by the workers).
  int lr_workers = 0;
  int64_t schedule_from = 0;
  int64_t schedule_batches = 0;

  /// The staleness bound enforced at the shards: s for ssp, 0 for sync, -1 (none) for async.
  int staleness_bound() const;
  /// The shard that owns `key` of any sparse table (bucket_shards must be placed).
  int shard_of_key(uint64_t key) const;
};

/// The clock the learning-rate schedule is at by global clock `clock` (train_spec::lr_workers).
int64_t schedule_clock(const train_spec& spec, int64_t clock);

/// What the learning rate is divided by when the pushes of `count` workers share it: `count`,
/// scaled by lr_workers / workers once the number of workers changed.
float rate_divisor(const train_spec& spec, std::size_t count);

/// The shard that owns `key` under a bucket placement (train_spec::bucket_shards, not empty).
inline int shard_of_key(const std::vector<uint16_t>& bucket_shards, uint64_t key) {
  return bucket_shards[bucket_of(key, static_cast<uint32_t>(bucket_shards.size()))];
}

inline int train_spec::shard_of_key(uint64_t key) const {
  return actorps::shard_of_key(bucket_shards, key);
}

/// Places the buckets of a model with sparse tables (assign_buckets: default_bucket_count
/// buckets round robin over the shards) unless already placed; does nothing for a model
/// without tables. Whoever creates a run calls it once, before any shard or worker sees the
/// spec.
void place_buckets(train_spec& spec);

/// "" when spec.bucket_shards fits the spec (empty exactly when there are no sparse tables, at
/// most 65 536 buckets, each on a shard in [0, shards)), else what is wrong.
std::string invalid_buckets(const train_spec& spec);

/// What a run may be cut into: bounds on what a spec from the network or a file can make a
/// process allocate (a block_layout holds a record per block and per shard). A sparse key's
/// bucket names its shard in 16 bits; 2^20 blocks cut the largest model (2^31 floats) into
/// blocks of 2048.
inline constexpr int max_shards = 65536;
inline constexpr int max_workers = 65536;
inline constexpr std::size_t max_blocks = std::size_t(1) << 20;

/// "" when a valid `model` cut into blocks of `block_floats` on `shards` shards stays within
/// those bounds, else what is wrong ("3000000 blocks of 1 float, more than 2^20: ...").
std::string invalid_cut(const model_spec& model, uint32_t block_floats, int shards);

/// "" when spec.block_shards is empty or names a shard in [0, shards) for each block of the
/// spec's cut, else what is wrong.
std::string invalid_block_placement(const train_spec& spec);

struct tensor_info {
  std::string name;        ///< "dense0/kernel", "dense0/bias", ...
  std::vector<uint32_t> shape;
  std::size_t offset = 0;  ///< first float in the flat parameter layout
  std::size_t size = 0;
};

struct block_info {
  uint32_t id = 0;
  uint32_t tensor = 0;
  std::size_t offset = 0;        ///< first float in the flat parameter layout
  uint32_t size = 0;             ///< floats
  int shard = 0;
  std::size_t shard_offset = 0;  ///< first float in the owning shard's buffer
};

class block_layout {
public:
  /// Throws std::invalid_argument for an invalid model, block size or shard count, a cut beyond
  /// invalid_cut's bounds, or an `owners` (each block's shard; empty: the largest-first rule)
  /// of another length or naming a shard out of range.
  block_layout(const model_spec& model, uint32_t block_floats, int shards,
               const std::vector<uint16_t>& owners = {});
  explicit block_layout(const train_spec& spec)
    : block_layout(spec.model, spec.block_floats, spec.shards, spec.block_shards) {}

  const std::vector<tensor_info>& tensors() const { return tensors_; }
  const std::vector<block_info>& blocks() const { return blocks_; }
  int shards() const { return static_cast<int>(shard_blocks_.size()); }
  std::size_t total_floats() const { return total_floats_; }

  /// Block ids of shard s, ascending (= the order of its buffer).
  const std::vector<uint32_t>& shard_blocks(int s) const { return shard_blocks_[s]; }
  std::size_t shard_floats(int s) const { return shard_floats_[s]; }
  /// The owner shard of each block, in block-id order (what train_spec::block_shards records).
  std::vector<uint16_t> owners() const;
  /// The floats of each block, in block-id order (dense_after_resize's sizes).
  std::vector<uint32_t> block_sizes() const;

  /// Copies shard s's part of a flat parameter vector into its contiguous buffer, and back.
  void gather(int s, const float* flat, float* shard_buffer) const;
  void scatter(int s, const float* shard_buffer, float* flat) const;

private:
  void place_largest_first(int shards);  ///< fills blocks_[*].shard and shard_floats_

  std::vector<tensor_info> tensors_;
  std::vector<block_info> blocks_;
  std::vector<std::vector<uint32_t>> shard_blocks_;
  std::vector<std::size_t> shard_floats_;
  std::size_t total_floats_ = 0;
};

} // namespace actorps
