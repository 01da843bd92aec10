// One worker's minibatches of a streamed file, by clock: what a trainer that streams its own data
// (a sparse model) reads, so that the same clock gives the same rows after a resume or a
// rollback, without the part ever being held in memory. One template for every streamed format
// (libsvm_batches, criteo_batches).
#pragma once

#include "actors/ps/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace actorps {

/// Clock c is batch (c mod B) of part `part` of `parts` of the file (the Reader's parts), cut
/// into batches of `rows` rows in file order; B is the part's batches per epoch, the last one
/// short when the part's rows are not a multiple of `rows`. Epochs wrap to the part's start.
/// B is learnt the first time the part's end is read.
///
/// Clock c + 1 after clock c reads on; any other clock (a resume, a rollback) rewinds and reads
/// forward to it. The two clocks read last are kept, so a trainer may ask for clock c + 1's
/// keys before it steps clock c without reading either twice. Not thread-safe.
///
/// Reader needs Reader(path, part, parts, ...), size_t next_batch(size_t max_rows, Batch&) (0 at the
/// part's end) and rewind(); Batch is default-constructible. A Reader with size_t
/// skip_rows(size_t max_rows) passes the batches before the one asked for with it (no parsing).
///
///   clocked_batches<criteo_reader, criteo_batch> data("train.tsv", worker, workers, 4096);
///   const criteo_batch& b = data.at(clock);  // valid until the next at()
template <class Reader, class Batch>
class clocked_batches {
public:
  /// Reads clock 0's batch. Throws std::invalid_argument for rows < 1 or a bad part, and
  /// dataset_error for a missing or malformed file or a part without rows.
  ///
  /// `follow` (a directory that grows, Reader::follow): there are no epochs; the stream goes on
  /// into files that appear later, and a batch the files do not hold yet is an error (the
  /// caller asks only for those the files it was told of hold). Clock 0 is not read up front.
  ///
  /// `reader_args` go to the Reader's constructor after (path, part, parts).
  template <class... ReaderArgs>
  clocked_batches(const std::string& path, int part, int parts, int rows, bool follow = false,
                  ReaderArgs&&... reader_args)
      : reader_(path, part, parts, std::forward<ReaderArgs>(reader_args)...),
        where_(path + " part " + std::to_string(part) + " of " + std::to_string(parts)),
        rows_(rows > 0 ? static_cast<std::size_t>(rows)
                       : throw std::invalid_argument(where_ + ": batches of " +
                                                     std::to_string(rows) + " rows (need 1 or "
                                                     "more)")),
        follow_(follow) {
    if (follow_) reader_.follow();
    else at(0);  // an empty part is found now, when the trainer is made, not at its first step
  }

  /// The batch of `clock` (≥ 0; std::invalid_argument otherwise). The reference stays valid
  /// until the next call. Throws dataset_error for a malformed line.
  const Batch& at(int64_t clock) {
    if (clock < 0)
      throw std::invalid_argument(where_ + ": clock " + std::to_string(clock) + " < 0");
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

  /// B, once the part's end has been read; 0 before.
  int64_t batches_per_epoch() const { return per_epoch_; }

private:
  struct slot {
    int64_t clock = -1;  ///< -1: empty
    Batch batch = {};
  };

  /// Reads clock's batch into `out`, rewinding first when it lies behind the reader.
  void read(int64_t clock, Batch& out) {
    auto index = per_epoch_ > 0 ? clock % per_epoch_ : clock;
    if (index < next_index_) {
      reader_.rewind();
      next_index_ = 0;
    }
    for (;;) {
      const auto read = next_index_ == index ? reader_.next_batch(rows_, out) : pass(out);
      if (follow_ && read < rows_) {
        reader_.rewind();  // the next read starts afresh
        next_index_ = 0;
        throw dataset_error(where_ + ": the stream holds no batch " + std::to_string(index)
                            + " yet (its files end " + std::to_string(read) + " rows into it)");
      }
      if (read == 0) {  // the part's end: now B is known
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

  template <class R, class = void>
  struct skips : std::false_type {};
  template <class R>
  struct skips<R, std::void_t<decltype(std::declval<R&>().skip_rows(std::size_t{}))>>
      : std::true_type {};

  /// The next batch read past: skipped where the reader can, else read into `scratch`.
  std::size_t pass(Batch& scratch) {
    if constexpr (skips<Reader>::value) return reader_.skip_rows(rows_);
    else return reader_.next_batch(rows_, scratch);
  }

  Reader reader_;
  std::string where_;          ///< "FILE part P of N", for errors
  std::size_t rows_;
  int64_t per_epoch_ = 0;
  int64_t next_index_ = 0;     ///< the index in the epoch of the batch the reader gives next
  slot slots_[2];
  int last_ = 0;               ///< the slot at() returned last
  bool follow_ = false;        ///< no epochs: the stream only grows
};

} // namespace actorps
