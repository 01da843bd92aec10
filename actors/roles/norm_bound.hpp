// A robust running bound on the norms of the gradients a shard takes (--gradient-norm-bound):
// a push whose gradient norm is far beyond what the workers have been sending is refused.
//
// --max-gradient bounds each value and stops only absurd ones; a worker's certificate still let
// its holder push 1000.0 everywhere as itself. This bounds the push as a whole: its L2 norm may
// reach k times the median norm of the last `window` pushes the shard took (from every worker),
// and no more. The median moves with training (large early, smaller later) and is robust: while
// fewer than half of the pushes in the window are one sender's, that sender cannot raise it, and
// refused pushes never enter it. The lower median is taken, so a sender of exactly half the
// pushes (one of two workers) cannot either. Until `warmup` pushes were taken nothing is
// refused: the first clocks' gradients, legitimately large, set the scale. A median of 0 (every
// recent gradient zero) bounds nothing either.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace actorps {

class norm_bound {
public:
  /// Norms the median is taken over: the most recent pushes taken.
  static constexpr std::size_t window = 64;
  /// Pushes taken before the bound applies.
  static constexpr std::size_t warmup = 16;

  /// `k`: how many times the recent median a norm may be; 0: no bound.
  explicit norm_bound(float k = 0) : k_(k) {}

  /// The largest norm a push may have now: +inf when off, warming up, or the median is 0.
  float limit() const { return limit_; }
  /// The median the limit is k times (0 until warmed up).
  float median() const { return median_; }
  float k() const { return k_; }

  /// Keeps the norm of a push taken (accepted): the limit follows.
  void taken(float norm);

  /// The largest norm / median of a push taken since warm-up: how near the bound training came
  /// (a statistic for choosing k).
  float largest_ratio() const { return largest_ratio_; }

private:
  float k_;
  std::vector<float> recent_;  // a ring of the last `window` norms taken
  std::size_t next_ = 0;
  std::size_t taken_ = 0;
  float median_ = 0;
  float limit_ = std::numeric_limits<float>::infinity();
  float largest_ratio_ = 0;
  std::vector<float> scratch_;  // for the median
};

} // namespace actorps
