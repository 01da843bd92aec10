// What a sparse table is, as a value: row width, initializer, optimizer, admission. The
// model spec carries one per table (actors/ps/model_spec.hpp); kernels/sparse/sparse_table.hpp
// stores the rows.
#pragma once

#include "actors/ps/row_optimizer.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace actorps {

/// How a new row's values start: all 0, uniform in [−scale, scale), or normal with standard
/// deviation `scale`.
enum class row_init { zeros, uniform, normal };

std::optional<row_init> parse_row_init(const std::string& name);
const char* to_string(row_init init);

struct sparse_table_config {
  uint32_t dim = 0;                  ///< floats per row; 0 is refused
  row_init init = row_init::zeros;
  float scale = 0.0f;                ///< uniform: half-width; normal: standard deviation
  row_optimizer_config optimizer;
  /// 0 or 1: a push creates the row. N > 1: a key's first N − 1 pushes are only counted (their
  /// gradients dropped, the key reads as zeros); the N-th creates the row and applies its
  /// gradient. Keeps one-off keys (typos, rare ids) from costing a row each.
  uint32_t admit_after = 0;
  /// 0: rows stay. C > 0: a row not pushed for C global clocks is evicted (pushed last at clock
  /// t, it is gone for every read and push at clock t + C + 1 on); the key reads as unseen
  /// again, and its next push creates it anew (through admission, with admit_after > 1).
  uint32_t evict_after = 0;
  /// 0: no bound. N > 0: a shard's sweep evicts the least recently pushed rows beyond N (not
  /// exact: rows past N live until the sweep reaches them; see sparse_table::sweep).
  uint64_t max_rows = 0;
  /// 0: admission counts each pending key exactly (a map entry per key; with evict_after, an
  /// entry not pushed for evict_after clocks goes). B > 0: in a count-min sketch of at most B
  /// bytes per table on each shard (admission_sketch.hpp), which may admit a key early (a
  /// collision) and forgets counts by halving; needs admit_after in [2, 255].
  uint64_t admission_memory = 0;
};

/// "" when the config can describe a table, else what is wrong ("dim is 0", an optimizer
/// field out of range).
std::string invalid_table_config(const sparse_table_config& cfg);

} // namespace actorps
