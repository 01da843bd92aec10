#include "actors/data/libsvm_batches.hpp"

namespace actorps {

template class clocked_batches<libsvm_reader, sparse_batch>;

} // namespace actorps
