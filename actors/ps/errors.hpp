// actorps' error codes: what a caf::error from the front door says when it is one of ours
// (its category, a CAF atom, is the runtime's: actors/protocol/errors.hpp).
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace actorps {

enum class errc : uint8_t {
  malformed_message = 1,  ///< not a Cap'n Proto message of the expected type, or truncated
  wrong_shard,            ///< addressed to another shard
  unknown_worker,         ///< worker id outside the run, or a worker that has left
  unknown_block,          ///< a block id this shard does not own
  wrong_element_count,    ///< a block whose float count differs from the spec
  missing_block,          ///< a push that does not carry every block of the shard once
  future_clock,           ///< a push for a clock the worker has not reached
  stale_clock,            ///< a push for a clock the worker already pushed
  non_finite_value,       ///< NaN or infinity in a gradient
  not_initialized,        ///< a shard asked to serve before the chief initialised it
  invalid_spec,           ///< a TrainSpec that cannot describe a run
  checkpoint_failed,      ///< a checkpoint could not be written, read or verified
  rolled_back,            ///< a request dropped because the run went back to a checkpoint
  shard_lost,             ///< a worker stopped because a shard it needs is gone
  unknown_table,          ///< a sparse table index outside the spec, or named twice in a message
  key_not_owned,          ///< a sparse key whose bucket another shard owns
  duplicate_key,          ///< a sparse key twice in one push
  run_interrupted,        ///< the chief stopped the run early (a signal); a restart goes on
  peer_unreachable,       ///< a task stayed unreachable (never joined, lost) past its timeout
  checkpoint_superseded,  ///< a checkpoint's snapshot was dropped for newer ones: one follows
  checkpoint_clock_passed,  ///< a clock off the schedule asked for after the shard passed it
  value_out_of_bounds,    ///< a finite gradient beyond --max-gradient, or an init or checkpoint
                          ///< parameter beyond --max-parameter (or not finite)
  outside_checkpoint_root,  ///< a checkpoint asked into a directory outside the shard's root
  not_authorised,         ///< a request the sender's task may not make (CAF messages:
                          ///< authorisation.hpp; the data link: link_authorisation.hpp)
  cluster_mismatch,       ///< a task joined with a cluster spec other than the chief's
  gradient_norm_beyond,   ///< a push's gradient norm beyond --gradient-norm-bound times the
                          ///< median of the shard's recent pushes (norm_bound.hpp)
  bad_data,               ///< a training data line a reader cannot take (its file and line said)
};

const char* to_string(errc code);

caf::error make_error(errc code);
caf::error make_error(errc code, std::string context);

/// Whether `err` is ours and says `code` (false for no error: CAF 0.17 reads an empty error's
/// category through a null pointer).
bool is_error(const caf::error& err, errc code);

/// The code `err` says when it is one of ours, else nullopt (no error, or CAF's own).
std::optional<errc> code_of(const caf::error& err);

/// "unknown_block: block 17 belongs to shard 1" — for log lines and CLI messages.
std::string describe(const caf::error& err);

} // namespace actorps
