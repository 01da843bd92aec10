// One worker's minibatches of a Criteo file, by clock (clocked_batches over criteo_reader): what
// a CTR model streams, so that the same clock gives the same rows after a resume or a rollback.
#pragma once

#include "actors/data/clocked_batches.hpp"
#include "actors/data/criteo_reader.hpp"
#include "actors/ps/criteo_batch.hpp"

namespace actorps {

// Compiled once, in criteo_reader.cpp, rather than in every file that uses it.
extern template class clocked_batches<criteo_reader, criteo_batch>;

/// Clock c is batch (c mod B) of part `part` of `parts` of the file (clocked_batches).
///
///   criteo_batches data("train.tsv.gz", worker, workers, 4096);
///   const criteo_batch& b = data.at(clock);  // valid until the next at()
using criteo_batches = clocked_batches<criteo_reader, criteo_batch>;

} // namespace actorps
