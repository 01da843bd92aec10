// A parameter shard's clock table, and the consistency rule read from it.
//
// For each worker: how many clocks it has finished (pushed), whether it is live, and which
// incarnation (spawn) of it may push. min = the smallest finished clock over live workers; a
// pull for clock c is allowed when min >= c - bound (sync: bound 0; ssp: s; async: -1, never
// held).
//
// The operations that can raise min (finish, leave, admit) return the progress clock from
// before they ran, so that the shard reacts to a rise in one place (sync apply, snapshots,
// held pulls). Rejoin never raises it. Callers check the preconditions of each operation (the
// shard turns a violation into a dropped message); the table does not re-check them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace actorps {

class clock_table {
public:
  /// min() while no worker is live: nothing holds a pull back then.
  static constexpr int64_t no_live_workers = std::numeric_limits<int64_t>::max();

  clock_table() = default;

  /// `workers` workers, every one live at `clock`, expected with `incarnations` (missing
  /// entries: 0); `bound` is the staleness bound, -1 for none.
  clock_table(std::size_t workers, int64_t clock, int32_t bound,
              std::vector<uint32_t> incarnations = {});

  /// A table as another shard's was (a standby taking over its primary's, replication.hpp):
  /// worker w has finished finished[w] clocks (pushed[w] pushed here; empty: as finished), is
  /// live when live[w] != 0, and pushes as incarnations[w]. Each has one entry per worker.
  clock_table(std::vector<int64_t> finished, const std::vector<uint32_t>& live, int32_t bound,
              std::vector<uint32_t> incarnations, std::vector<int64_t> pushed = {});

  /// Whether `worker` is live (as a 0/1 per worker, what the constructor above takes).
  std::vector<uint32_t> live_flags() const { return std::vector<uint32_t>(live_.begin(), live_.end()); }
  const std::vector<int64_t>& finished_clocks() const { return finished_; }
  const std::vector<int64_t>& pushed_clocks() const { return pushed_; }
  const std::vector<uint32_t>& incarnations() const { return incarnation_; }

  std::size_t workers() const { return finished_.size(); }
  bool known(int32_t worker) const {
    return worker >= 0 && static_cast<std::size_t>(worker) < finished_.size();
  }
  /// False for a worker the table does not know.
  bool live(int32_t worker) const { return known(worker) && live_[worker]; }
  std::size_t live_count() const;
  /// Clocks `worker` has finished, i.e. the clock it computes next.
  int64_t finished(int32_t worker) const { return finished_[worker]; }
  /// Clocks `worker` has pushed here (or was at when the table was made): what finished() says
  /// before a rejoin or an admit moves it to where a replacement enters.
  int64_t pushed(int32_t worker) const { return pushed_[worker]; }
  uint32_t incarnation(int32_t worker) const { return incarnation_[worker]; }

  int64_t min() const { return min_; }
  /// Where the run is: min, or with no live worker the furthest any worker got.
  int64_t progress() const;
  /// Whether a pull for `clock` may be answered now.
  bool allowed(int64_t clock) const { return bound_ < 0 || min_ >= clock - bound_; }

  /// Live `worker` has finished `clock` (== finished(worker)): it is at clock + 1. Returns the
  /// progress clock before.
  int64_t finish(int32_t worker, int64_t clock);
  /// Live `worker` is gone: min stops waiting for it. Returns the progress clock before.
  int64_t leave(int32_t worker);
  /// A replacement for `worker`, which left: live at the progress clock p, which it holds min at
  /// until admitted; or, when `holds_push` (its predecessor's push of the clock still
  /// accumulated is kept, to be applied with that clock's mean), at the clock after that push
  /// when that is later. Returns where it is live.
  int64_t rejoin(int32_t worker, bool holds_push = false);
  /// The rejoined `worker` enters at `clock` (>= the p rejoin gave it), and only pushes of
  /// `incarnation` are its own. Returns the progress clock before.
  int64_t admit(int32_t worker, int64_t clock, uint32_t incarnation);

private:
  void recompute_min();

  std::vector<int64_t> finished_;
  std::vector<int64_t> pushed_;
  std::vector<bool> live_;
  std::vector<uint32_t> incarnation_;
  int64_t min_ = no_live_workers;
  int32_t bound_ = 0;
};

} // namespace actorps
