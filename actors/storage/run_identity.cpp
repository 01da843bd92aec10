#include "actors/storage/run_identity.hpp"
#include "actors/storage/checkpoint_store.hpp"

namespace actorps {

namespace {

std::string both(const std::string& what, const std::string& saved, const std::string& current) {
  return "the checkpoint's " + what + " is " + saved + ", this run's " + current;
}

} // namespace

std::string identity_difference(const run_checkpoint& saved, const run_identity& current) {
  if (auto why = incompatibility(saved.spec, current.spec); !why.empty()) return why;
  if (saved.spec.seed != current.spec.seed)
    return both("seed", std::to_string(saved.spec.seed), std::to_string(current.spec.seed));
  const auto& st = saved.spec.model.sparse_tables;
  const auto& ct = current.spec.model.sparse_tables;
  for (std::size_t i = 0; i < st.size() && i < ct.size(); ++i)
    if (st[i].config.admit_after != ct[i].config.admit_after)
      return both("sparse table " + st[i].name + " admission (--admit-after)",
                  std::to_string(st[i].config.admit_after), std::to_string(ct[i].config.admit_after));
  for (std::size_t i = 0; i < st.size() && i < ct.size(); ++i) {
    if (st[i].config.evict_after != ct[i].config.evict_after)
      return both("sparse table " + st[i].name + " eviction (--evict-after)",
                  std::to_string(st[i].config.evict_after), std::to_string(ct[i].config.evict_after));
    if (st[i].config.max_rows != ct[i].config.max_rows)
      return both("sparse table " + st[i].name + " row bound (--max-rows-per-shard)",
                  std::to_string(st[i].config.max_rows), std::to_string(ct[i].config.max_rows));
  }
  if (saved.batch != current.batch)
    return both("batch", std::to_string(saved.batch), std::to_string(current.batch));
  if (saved.dataset.empty())
    return "the checkpoint records no dataset (written by an older actorps): it cannot be told "
           "apart from another run's";
  if (saved.dataset != current.dataset) return both("dataset", saved.dataset, current.dataset);
  if (saved.train_rows != current.train_rows)
    return both("dataset " + saved.dataset + " size", std::to_string(saved.train_rows) + " rows",
                std::to_string(current.train_rows) + " rows");
  return "";
}

} // namespace actorps
