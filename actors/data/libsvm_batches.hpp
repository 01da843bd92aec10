// One worker's minibatches of a libsvm file, by clock: what a trainer that streams its own data
// (a sparse model) reads, so that the same clock gives the same rows after a resume or a
// rollback, without the part ever being held in memory.
#pragma once

#include "actors/data/libsvm_reader.hpp"
#include "actors/data/sparse_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace actorps {

/// Clock c is batch (c mod B) of part `part` of `parts` of the file (libsvm_reader's parts),
/// cut into batches of `rows` rows in file order; B is the part's batches per epoch, the last
/// one short when the part's rows are not a multiple of `rows`. Epochs wrap to the part's
/// start. B is learnt the first time the part's end is read.
///
/// Clock c + 1 after clock c reads on; any other clock (a resume, a rollback) rewinds and reads
/// forward to it. The two clocks read last are kept, so a trainer may ask for clock c + 1's
/// keys before it steps clock c without reading either twice. Not thread-safe.
///
///   libsvm_batches data("train.libsvm", worker, workers, 256);
///   const sparse_batch& b = data.at(clock);  // valid until the next at()
class libsvm_batches {
public:
  /// Reads clock 0's batch. Throws std::invalid_argument for rows < 1 or a bad part, and
  /// dataset_error for a missing or malformed file or a part without rows.
  libsvm_batches(const std::string& path, int part, int parts, int rows);

  /// The batch of `clock` (≥ 0; std::invalid_argument otherwise). The reference stays valid
  /// until the next call. Throws dataset_error for a malformed line.
  const sparse_batch& at(int64_t clock);

  /// B, once the part's end has been read; 0 before.
  int64_t batches_per_epoch() const { return per_epoch_; }

private:
  struct slot {
    int64_t clock = -1;  ///< -1: empty
    sparse_batch batch;
  };

  /// Reads clock's batch into `out`, rewinding first when it lies behind the reader.
  void read(int64_t clock, sparse_batch& out);

  libsvm_reader reader_;
  std::string where_;          ///< "FILE part P of N", for errors
  std::size_t rows_;
  int64_t per_epoch_ = 0;
  int64_t next_index_ = 0;     ///< the index in the epoch of the batch the reader gives next
  slot slots_[2];
  int last_ = 0;               ///< the slot at() returned last
};

} // namespace actorps
