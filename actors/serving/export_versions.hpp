// --export-every CLOCKS of `actorps simulate` and `actorps chief`: export versions written while
// training into --export-dir, a chain of them (export_chain.hpp, EXPORT_FORMAT.md). The
// chief hands each version's shard states to the writer made here (chief.hpp's export_config);
// every --full-export-every-th version is full, the ones between are deltas of the one before:
// the shards send the rows changed since it, which the writer writes as they come.
#pragma once

#include "actors/serving/export_after_run.hpp"  // export_request; chief_config (chief.hpp)

namespace actorps {

/// The chief's export_config for `request` (its dir, spec and data): a version every `every`
/// global clocks, every `full_every`-th one full (1: every one). A CTR model's versions between
/// full ones are deltas; an MLP's are all full (its parameters are all dense). A full version is
/// evaluated on the test split as the export after the run is (loaded once, when first needed);
/// a delta is not.
export_config export_versions(const export_request& request, int64_t every, int full_every);

} // namespace actorps
