#include "actors/data/ctr_batches.hpp"

#include <stdexcept>

namespace actorps {

ctr_batches::ctr_batches(const data_source& src, int part, int parts, int rows) {
  if (src.what == data_source::kind::criteo) {
    criteo_ = std::make_unique<criteo_batches>(src.train_path, part, parts, rows, src.follow);
  } else if (src.what == data_source::kind::logs) {
    schema_ = std::make_shared<const feature_schema>(load_feature_schema(src.schema_path));
    logs_ = std::make_unique<schema_batches>(src.train_path, part, parts, rows, src.follow,
                                             schema_, schema_read_options{src.delimiter});
  } else {
    throw std::invalid_argument("CTR batches come from criteo:PATH, or tsv:PATH or csv:PATH "
                                "with --schema");
  }
}

} // namespace actorps
