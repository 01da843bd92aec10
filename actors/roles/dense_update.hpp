// One optimizer update of a shard's dense blocks (shard_state.hpp): written block by block into
// the spare buffers, each block's gradient checked as the optimizer reads it, and swapped in
// whole or not at all; and the push_pull's reply sent ahead in parts while it is written.
#pragma once

#include "actors/roles/shard_state.hpp"
#include "actors/protocol/reply_stream.hpp"

#include <caf/error.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorps::shard_internals {

/// One block's gradient in an update of the whole shard.
struct block_gradient {
  const block_info* block;
  const float* grad;
};

/// Names an update in a refusal's log line: built only when something is refused, not for every
/// push (a string of that length is an allocation).
using update_name = std::function<std::string()>;

/// What apply_dense did.
enum class dense_outcome {
  applied,
  gradient_refused,  ///< a gradient value beyond --max-gradient: the push is refused
  norm_refused,      ///< the gradient's norm beyond the shard's norm bound: the push is refused
  update_refused,    ///< the update would leave --max-parameter: counted, the clock counts
};

/// What an update does with its gradient's L2 norm (--gradient-norm-bound, norm_bound.hpp).
enum class norm_check {
  none,     ///< nothing (a sync clock's mean, the bound off)
  measure,  ///< measures it (norm()): a push whose norm was bounded before (replication)
  bound,    ///< measures it and refuses the push once it is beyond st.dense_norms' limit
};

/// A push_pull's reply sent ahead in parts while its update is written (reply_stream.hpp): the
/// reply is built by reference on params_next before the first block is applied, and each run
/// of about part_bytes() of applied blocks goes to the stream as soon as it is written. Its
/// clocks are the ones the push will leave (planned from a copy of the clock table).
struct reply_ahead {
  reply_stream* stream = nullptr;
  int64_t min_clock = -1;
  int64_t newest_clock = -1;
  wire_buffer reply;                   // on params_next; empty: not streamed after all
  std::vector<std::size_t> block_end;  // where each block's values end in the reply's bytes
  std::size_t sent = 0;                // bytes of the reply sent

  /// Builds the reply on `values` (params_next, just sized), kept by `lease`. A reply with a
  /// block copied into its structure (one not on a word) is not streamed: its first bytes
  /// would not be final before the last block.
  void start(const ps_shard_state& st, const float* values, std::shared_ptr<buffer_lease> lease);
  /// Block `i` (in the reply's order) is written: sends what is written since the last part
  /// once it is a part's worth, or the last block.
  void written(std::size_t i);
};

/// The plan to send the reply to `push` ahead, or none: only in ssp and async, for a push
/// pulling no rows whose pull the rule allows once it is finished, whose blocks come in the
/// reply's order, and a reply of at least two parts. (Sync answers after the mean; a pull of
/// rows is encoded for its request alone.)
std::optional<reply_ahead> plan_reply_ahead(const ps_shard_state& st, const push_view& push,
                                            reply_stream* stream);

/// One optimizer update of every block of the shard with rate `lr`, written block by block into
/// the spare buffers (every block at once, or each as a streamed push's bytes arrive) and
/// swapped in by finish() only when every gradient value is within `max_gradient` and every new
/// parameter within --max-parameter and every new state value finite. Otherwise nothing
/// changes, not even Adam's step: a gradient beyond its bound ends the update at that block
/// (block() false, refusal() says why; gradient_refused); an update beyond is counted in
/// updates_refused and logged by finish() (rate-limited; update_refused). Every block's gradient
/// is checked even after an update was found beyond: a bad value anywhere refuses the push.
/// With `ahead`, each block written goes ahead as part of the reply until one is found beyond.
class dense_update {
public:
  dense_update(ps_shard_state& st, float lr, float max_gradient, reply_ahead* ahead,
               norm_check norms = norm_check::none);

  /// Writes block `i` (in the shard's order) from gradient `g`. False: the gradient is beyond
  /// its bound, or its norm so far beyond the norm bound (norm_refused()), the push is refused
  /// (refusal()) and nothing changes. The norm is checked before a block is written: a block
  /// that takes it beyond is not sent ahead either.
  bool block(std::size_t i, const block_gradient& g);

  caf::error refusal() const { return refusal_; }
  bool norm_refused() const { return norm_refused_; }
  /// The L2 norm of the gradient of the blocks written (0 with norm_check::none).
  float norm() const;

  /// Every block written: swaps the update in, or counts and logs the update refused.
  dense_outcome finish(const update_name& what);

private:
  bool refuse(const block_gradient& g);

  ps_shard_state& st_;
  const float lr_;
  const float max_gradient_;
  reply_ahead* const ahead_;
  const int64_t step_;
  const norm_check norms_;
  const float limit_squared_;  // the norm bound's limit, squared (+inf: none)
  float sum_squared_ = 0;
  bool norm_refused_ = false;
  const block_info* beyond_ = nullptr;  // the first block whose update was refused
  caf::error refusal_;
};

/// A dense_update of every block of `grads` (each named once), all there. `norm`, when given,
/// is set to the gradient's L2 norm (norm_check other than none).
dense_outcome apply_dense(ps_shard_state& st, const std::vector<block_gradient>& grads, float lr,
                          const update_name& what, float max_gradient,
                          caf::error* refusal = nullptr, reply_ahead* ahead = nullptr,
                          norm_check norms = norm_check::none, float* norm = nullptr);

/// After a push's dense update of `clock` was swapped in: the newest clock, and the reply sent
/// ahead, which is the pull's answer too (the same bytes, sent whole as well) once the push is
/// finished at the clocks it was planned for.
void record_dense_applied(ps_shard_state& st, int64_t clock, const reply_ahead* ahead);

} // namespace actorps::shard_internals
