// Which minibatches a worker trains, once the number of workers has changed while the run
// trained (--resize workers=N@clock=C). At the start worker w of W trains its own part of the
// data (part w of W: actors/ps/data_split.hpp, or its byte range of the files) batch after batch. A change
// of the number of workers hands every minibatch no worker has trained yet, part by part, to
// the workers of the new number, in contiguous shares: each planned minibatch is still trained
// exactly once, whatever the format (every reader gives batch k of part p of P the same rows
// wherever it is read), and the run trains as many rows as it would have without the change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorps {

/// A stretch of one part's minibatches: batches first .. first + count - 1 of part `part` of
/// `parts` (as worker `part` of `parts` numbers them: the part's epochs follow each other).
struct data_segment {
  int32_t parts = 1;
  int32_t part = 0;
  int64_t first = 0;
  int64_t count = 0;

  friend bool operator==(const data_segment& a, const data_segment& b) {
    return a.parts == b.parts && a.part == b.part && a.first == b.first && a.count == b.count;
  }
};

/// A worker's minibatches in the order it trains them; empty: its own part, as at the start.
using data_plan = std::vector<data_segment>;

/// The plan a worker has at the start: `batches` minibatches of part `worker` of `workers`.
data_plan own_part(int32_t worker, int32_t workers, int64_t batches);

/// The minibatches a plan holds.
int64_t plan_batches(const data_plan& plan);

/// Where the plan's minibatch `index` (0 ≤ index < plan_batches) lies: the segment and the
/// batch of that segment's part.
struct plan_position {
  std::size_t segment = 0;
  int64_t batch = 0;
};
plan_position locate(const data_plan& plan, int64_t index);

/// The plan's minibatches from `index` on (none once index ≥ plan_batches).
data_plan plan_from(const data_plan& plan, int64_t index);

/// Every minibatch of `rest` (the plans' untrained remainders, in worker order), one after the
/// other, cut into `workers` contiguous shares whose sizes differ by one at most (the larger
/// first); adjoining stretches of one part are joined.
std::vector<data_plan> share_out(const std::vector<data_plan>& rest, int32_t workers);

} // namespace actorps
