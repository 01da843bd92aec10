// One worker's CTR minibatches by clock, whichever way the log is laid out: Criteo's fixed
// layout (criteo:PATH) or a log a feature schema describes (tsv:PATH or csv:PATH with
// --schema). What the CTR models stream.
#pragma once

#include "actors/data/criteo_batches.hpp"
#include "actors/data/schema_reader.hpp"
#include "actors/ps/data_source.hpp"

#include <cstdint>
#include <memory>

namespace actorps {

class ctr_batches {
public:
  /// Part `part` of `parts` of src's training file in batches of `rows` (clocked_batches),
  /// followed when src.follow. For a log, loads src.schema_path; throws schema_error for a bad
  /// schema, std::invalid_argument for a source of another kind.
  ctr_batches(const data_source& src, int part, int parts, int rows);

  /// The batch of `clock` (clocked_batches::at).
  const criteo_batch& at(int64_t clock) { return criteo_ ? criteo_->at(clock) : logs_->at(clock); }

  /// The log's schema; null for Criteo's layout.
  const feature_schema* schema() const { return schema_.get(); }

private:
  std::shared_ptr<const feature_schema> schema_;
  std::unique_ptr<criteo_batches> criteo_;
  std::unique_ptr<schema_batches> logs_;
};

} // namespace actorps
