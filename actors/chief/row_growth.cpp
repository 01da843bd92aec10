// --max-rows-per-shard with a spare ps task waiting (a distributed run): a shard near its bound
// would evict rows to stay there, so the run grows onto the spare instead and the rows spread
// over one more shard. The shards' table figures come with each evaluation (evaluations.cpp's
// record_tables), so that is when the bound is looked at; the change is an actorps scale's, one
// shard more, asked by the chief itself (no request to answer).
#include "actors/chief/state.hpp"

#include "actors/protocol/log.hpp"

namespace actorps::chief_detail {

namespace {

/// A table's rows on a shard are near its bound: 90 % of it or more (the shard evicts beyond).
bool near_bound(uint64_t rows, uint64_t bound) { return bound > 0 && rows * 10 >= bound * 9; }

} // namespace

void grow_for_rows(self_ptr self, const std::vector<shard_stats>& stats) {
  auto& st = self->state;
  if (!st.cfg.remote || st.phase != run_phase::training) return;
  const auto now = static_cast<int32_t>(st.shards.size());
  if (!missing_spares(st, now, now + 1).empty()) return;  // no spare waits for shard `now`
  const auto& tables = st.cfg.spec.model.sparse_tables;
  for (const auto& s : stats)
    for (std::size_t t = 0; t < s.table_rows.size() && t < tables.size(); ++t) {
      const auto bound = tables[t].config.max_rows;
      if (!near_bound(s.table_rows[t], bound)) continue;
      if (!scale_refusal(st, now + 1, st.cfg.spec.workers).empty()) return;  // not now
      log_line("chief", "shard " + std::to_string(s.shard) + " holds "
                          + std::to_string(s.table_rows[t]) + " rows of table "
                          + tables[t].name + ", near its bound of "
                          + std::to_string(bound) + " per shard: growing onto the spare ps:"
                          + std::to_string(now));
      if (auto why = schedule_scale(self, now + 1, st.cfg.spec.workers); !why.empty())
        log_line("chief", "the growth onto ps:" + std::to_string(now) + " is not asked: " + why);
      return;
    }
}

} // namespace actorps::chief_detail
