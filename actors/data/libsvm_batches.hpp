// One worker's minibatches of a libsvm file, by clock (clocked_batches over libsvm_reader): what
// a sparse linear model streams, so that the same clock gives the same rows after a resume or a
// rollback, without the part ever being held in memory.
#pragma once

#include "actors/data/clocked_batches.hpp"
#include "actors/data/libsvm_reader.hpp"
#include "actors/ps/sparse_batch.hpp"

namespace actorps {

// Compiled once, in libsvm_batches.cpp, rather than in every file that uses it.
extern template class clocked_batches<libsvm_reader, sparse_batch>;

/// Clock c is batch (c mod B) of part `part` of `parts` of the file (clocked_batches).
///
///   libsvm_batches data("train.libsvm", worker, workers, 256);
///   const sparse_batch& b = data.at(clock);  // valid until the next at()
using libsvm_batches = clocked_batches<libsvm_reader, sparse_batch>;

} // namespace actorps
