// What TensorBoard plots of a run: the metrics events (metrics.hpp) as scalars in an event
// file (tensorboard_file.hpp), step = the event's clock. The figures are the metrics file's:
//   eval      test/accuracy, test/loss (binary models also test/auc, test/logloss); flushed,
//             so a TensorBoard watching the directory follows the run
//   train     one point per new highest clock (a report of clock c at step c + 1, the clocks
//             trained): train/loss (the mean of the reports since the
//             last point), train/samples_per_s (this run's samples over its training time, as
//             the progress line), train/max_staleness
//   summary   shards/rows (every sparse table's rows, all shards), then flushed
//   failure, recovery, failover, rereplicated, standby_lost, skipped, checkpoint,
//   checkpoint_failed   their count so far as events/<name>s; recovery and failover also
//             their duration (events/recovery_ms, events/failover_ms)
#pragma once

#include "actors/chief/metrics.hpp"
#include "actors/chief/tensorboard_file.hpp"

#include <map>
#include <memory>
#include <string>

namespace actorps {

class tensorboard_writer : public metrics_observer {
public:
  /// Opens a new event file in `dir` (tensorboard_file's constructor: throws naming it).
  explicit tensorboard_writer(const std::string& dir);

  const std::string& path() const { return file_.path(); }
  void on_event(const nlohmann::ordered_json& event) override;
  void flush() override { file_.flush(); }

private:
  void on_train(const nlohmann::ordered_json& event);
  void on_eval(const nlohmann::ordered_json& event);
  void on_summary(const nlohmann::ordered_json& event);
  void count(const std::string& name, const nlohmann::ordered_json& event);

  tensorboard_file file_;
  int64_t last_step_ = 0;        ///< the newest clock seen: the step of events without one
  int64_t train_step_ = -1;      ///< the step of the newest train point
  double loss_sum_ = 0;          ///< train reports since that point
  int64_t loss_count_ = 0;
  double samples_ = 0;           ///< this run's samples so far
  double max_staleness_ = 0;
  std::map<std::string, int64_t> counts_;  ///< events/<name> so far
};

} // namespace actorps
