#include "actors/storage/checkpoint_workers.hpp"

#include "actors/ps/data_split.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace actorps {

resumed_data resumed_plans(const run_checkpoint& saved, int workers) {
  const int before = saved.spec.workers;
  resumed_data out;
  if (saved.plans.empty() && workers == before) return out;
  if (!saved.files.empty())
    throw std::invalid_argument(
      "the checkpoint has " + std::to_string(before) + " workers, this run "
      + std::to_string(workers) + ": a directory read as a stream goes on with its number of "
      "workers (each one's file position is its own)");
  // what each old worker had not trained by the checkpoint's clock
  std::vector<data_plan> rest;
  if (!saved.plans.empty()) {
    rest = saved.plans;
  } else {
    for (const auto& p : saved.positions) {
      const auto per_epoch = std::max<int64_t>(
        1, rows_of_worker(saved.train_rows, p.worker, before) / std::max(1, saved.batch));
      const auto done = p.epoch * per_epoch + p.batch_in_epoch;
      rest.push_back(plan_from(own_part(p.worker, before, saved.steps), done));
    }
  }
  out.batches_trained = saved.batch > 0 ? saved.samples / saved.batch : 0;
  // the same workers keep their own plans (a sync run goes on as it would have); others share
  out.plans = workers == before ? rest : share_out(rest, workers);
  for (const auto& plan : out.plans) out.longest = std::max(out.longest, plan_batches(plan));
  return out;
}

} // namespace actorps
