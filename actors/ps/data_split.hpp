// How a training set's rows are split among the workers: the one formula a worker's data
// (actors/ps/dataset.hpp), the chief's data positions and a checkpoint's check of them
// (actors/storage/) all use, without the data at hand.
#pragma once

#include <cstdint>

namespace actorps {

/// The first row of worker `worker`'s part of `rows` (workers > 0): w·n/W, exact and
/// overflow-free for every row count (a forged checkpoint may claim 8e18 rows), computed as
/// w·(n/W) + w·(n%W)/W.
inline int64_t first_row_of(int64_t rows, int worker, int workers) {
  return worker * (rows / workers) + worker * (rows % workers) / workers;
}

/// The rows worker `worker` of `workers` gets out of `rows`: [w·n/W, (w+1)·n/W). A worker
/// outside [0, workers) gets none.
inline int64_t rows_of_worker(int64_t rows, int worker, int workers) {
  if (workers <= 0 || worker < 0 || worker >= workers || rows <= 0) return 0;
  return first_row_of(rows, worker + 1, workers) - first_row_of(rows, worker, workers);
}

} // namespace actorps
