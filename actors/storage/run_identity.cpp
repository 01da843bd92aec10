#include "actors/storage/run_identity.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include "actors/ps/data_split.hpp"

#include <algorithm>

namespace actorps {

namespace {

std::string both(const std::string& what, const std::string& saved, const std::string& current) {
  return "the checkpoint's " + what + " is " + saved + ", this run's " + current;
}

/// Why the directory `current` cannot continue `saved`'s stream ("" when it can: the files
/// up to the furthest one a worker reached are unchanged, and every worker is in its first
/// pass, so the files after it may have changed or been added).
std::string stream_difference(const run_checkpoint& saved, const run_identity& current) {
  auto same = [](const stream_file& a, const stream_file& b) {
    return a.name == b.name && a.bytes == b.bytes && a.rows == b.rows;
  };
  if (std::equal(saved.files.begin(), saved.files.end(), current.files.begin(),
                 current.files.end(), same))
    return "";
  // A worker is in its first pass while the batches it trained (the chief counts epochs of
  // rows_of_worker / batch) hold no more than its parts of the files: fewer batches than they
  // make, or all of them when the last one is whole (a followed stream's files read to their
  // end go on into the added ones as one stream).
  int32_t reached = -1;
  bool first_pass = true;
  for (const auto& p : saved.positions) {
    reached = std::max(reached, p.file);
    const auto w = static_cast<std::size_t>(p.worker);
    int64_t rows = 0;
    for (const auto& f : saved.files) rows += w < f.rows.size() ? f.rows[w] : 0;
    const int64_t batch = std::max(1, saved.batch);
    const int64_t per_epoch = std::max<int64_t>(
      1, rows_of_worker(saved.train_rows, p.worker, saved.spec.workers) / batch);
    first_pass = first_pass && (p.epoch * per_epoch + p.batch_in_epoch) * batch <= rows;
  }
  for (int32_t k = 0; k <= reached; ++k) {
    const auto& was = saved.files[static_cast<std::size_t>(k)];
    if (static_cast<std::size_t>(k) >= current.files.size())
      return "its file " + was.name + " (read up to there) is gone from " + saved.dataset;
    const auto& now = current.files[static_cast<std::size_t>(k)];
    if (!same(was, now))
      return "file " + std::to_string(k + 1) + " of " + saved.dataset + " is " + was.name + " of "
             + std::to_string(was.bytes) + " bytes in the checkpoint, " + now.name + " of "
             + std::to_string(now.bytes) + " bytes now (files before the checkpoint's position "
             "may not change)";
  }
  if (!first_pass)
    return "its workers are past their first pass over " + saved.dataset
           + ", whose files have changed since (files may be added only during the first)";
  return "";
}

} // namespace

std::string identity_difference(const run_checkpoint& saved, const run_identity& current) {
  // Another number of workers goes on with what the checkpoint's had not trained
  // (checkpoint_workers.hpp), except over a directory read as a stream.
  auto spec = current.spec;
  if (saved.files.empty() && current.files.empty()) spec.workers = saved.spec.workers;
  if (auto why = incompatibility(saved.spec, spec); !why.empty()) return why;
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
  if (!saved.files.empty() && !current.files.empty()) return stream_difference(saved, current);
  if (saved.train_rows != current.train_rows)
    return both("dataset " + saved.dataset + " size", std::to_string(saved.train_rows) + " rows",
                std::to_string(current.train_rows) + " rows");
  return "";
}

} // namespace actorps
