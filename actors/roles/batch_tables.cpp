#include "actors/roles/batch_tables.hpp"

#include "actors/protocol/errors.hpp"
#include "kernels/sparse/key_dedup.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace actorps {

batch_tables::batch_tables(const train_spec& spec) : buckets_(spec.bucket_shards) {
  for (const auto& t : spec.model.sparse_tables) {
    table_rows rows;
    rows.dim = t.config.dim;
    rows_.push_back(std::move(rows));
  }
  owned_.assign(static_cast<std::size_t>(spec.shards),
                std::vector<std::vector<uint32_t>>(rows_.size()));
}

void batch_tables::prepare(const std::vector<std::vector<uint64_t>>& keys) {
  for (std::size_t t = 0; t < rows_.size(); ++t) {
    auto& r = rows_[t];
    const bool named = t < keys.size();  // (a ternary over a temporary would copy keys[t])
    dedup_keys(named ? keys[t].data() : nullptr, named ? keys[t].size() : 0, r.keys, r.inverse);
    r.values.resize(r.keys.size() * r.dim);
    r.grads.assign(r.keys.size() * r.dim, 0.0f);
    for (auto& shard : owned_) shard[t].clear();
    for (uint32_t i = 0; i < r.keys.size(); ++i)
      owned_[shard_of_key(buckets_, r.keys[i])][t].push_back(i);
  }
}

std::vector<sparse_rows_ref> batch_tables::parts_for(int shard, bool with_grads) const {
  std::vector<sparse_rows_ref> parts;
  for (uint32_t t = 0; t < rows_.size(); ++t) {
    const auto& pos = owned_[shard][t];
    if (pos.empty()) continue;
    const auto& r = rows_[t];
    parts.push_back({t, r.dim, r.keys.data(), pos.data(), pos.size(),
                     with_grads ? r.grads.data() : nullptr});
  }
  return parts;
}

std::vector<sparse_rows_ref> batch_tables::keys_for(int shard) const {
  return parts_for(shard, false);
}

std::vector<sparse_rows_ref> batch_tables::grads_for(int shard) const {
  return parts_for(shard, true);
}

caf::error batch_tables::take_rows(int shard, const std::vector<sparse_rows_view>& parts) {
  std::size_t asked = 0;
  for (uint32_t t = 0; t < rows_.size(); ++t) asked += owned_[shard][t].empty() ? 0 : 1;
  if (parts.size() != asked)
    return make_error(errc::unknown_table, "shard " + std::to_string(shard) + " sent rows of "
                                             + std::to_string(parts.size()) + " tables, asked "
                                             + std::to_string(asked));
  for (const auto& p : parts) {
    if (p.table >= rows_.size() || owned_[shard][p.table].empty())
      return make_error(errc::unknown_table, "shard " + std::to_string(shard)
                                               + " sent rows of table " + std::to_string(p.table)
                                               + ", not asked");
    auto& r = rows_[p.table];
    const auto& pos = owned_[shard][p.table];
    if (p.value_count != pos.size() * r.dim)
      return make_error(errc::wrong_element_count,
                        "shard " + std::to_string(shard) + " sent " + std::to_string(p.value_count)
                          + " floats of table " + std::to_string(p.table) + ", asked "
                          + std::to_string(pos.size() * r.dim));
    auto row_bytes = r.dim * sizeof(float);
    for (std::size_t i = 0; i < pos.size(); ++i)
      std::memcpy(r.values.data() + std::size_t(pos[i]) * r.dim, p.values + i * r.dim, row_bytes);
  }
  return caf::none;
}

} // namespace actorps
