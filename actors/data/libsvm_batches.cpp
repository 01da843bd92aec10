#include "actors/data/libsvm_batches.hpp"

#include "actors/data/dataset.hpp"

#include <stdexcept>

namespace actorps {

libsvm_batches::libsvm_batches(const std::string& path, int part, int parts, int rows)
  : reader_(path, part, parts),
    where_(path + " part " + std::to_string(part) + " of " + std::to_string(parts)),
    rows_(rows > 0 ? static_cast<std::size_t>(rows)
                   : throw std::invalid_argument("libsvm_batches: rows must be at least 1")) {
  at(0);  // an empty part is found now, when the trainer is made, not at its first step
}

const sparse_batch& libsvm_batches::at(int64_t clock) {
  if (clock < 0)
    throw std::invalid_argument("libsvm_batches: clock " + std::to_string(clock) + " < 0");
  for (int s = 0; s < 2; ++s) {
    if (slots_[s].clock == clock) {
      last_ = s;
      return slots_[s].batch;
    }
  }
  // Replace the older of the two: the one returned last is clock c or c + 1's pair.
  auto& fresh = slots_[1 - last_];
  fresh.clock = -1;  // a throwing read leaves no stale batch behind this clock
  read(clock, fresh.batch);
  fresh.clock = clock;
  last_ = 1 - last_;
  return fresh.batch;
}

void libsvm_batches::read(int64_t clock, sparse_batch& out) {
  auto index = per_epoch_ > 0 ? clock % per_epoch_ : clock;
  if (index < next_index_) {
    reader_.rewind();
    next_index_ = 0;
  }
  for (;;) {
    if (reader_.next_batch(rows_, out) == 0) {  // the part's end: now B is known
      if (next_index_ == 0) throw dataset_error(where_ + " holds no rows");
      per_epoch_ = next_index_;
      index %= per_epoch_;
      reader_.rewind();
      next_index_ = 0;
      continue;
    }
    if (next_index_++ == index) return;
  }
}

} // namespace actorps
