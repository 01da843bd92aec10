#include "actors/roles/planned_trainer.hpp"

#include <iterator>
#include <map>
#include <utility>

namespace actorps {

namespace {

class planned_trainer final : public trainer {
public:
  planned_trainer(data_plan plan, part_trainer_factory make)
      : plan_(std::move(plan)), make_(std::move(make)) {
    if (!plan_.empty()) segment(0);
  }

  step_loss step(int64_t i, const float* params, float* grad) override {
    const auto at = locate(plan_, i);
    return segment(at.segment).step(at.batch, params, grad);
  }

  void keys(int64_t i, std::vector<std::vector<uint64_t>>& per_table) override {
    const auto at = locate(plan_, i);
    segment(at.segment).keys(at.batch, per_table);
  }

  step_loss step(int64_t i, const float* params, float* grad,
                 std::vector<table_rows>& tables) override {
    const auto at = locate(plan_, i);
    return segment(at.segment).step(at.batch, params, grad, tables);
  }

  std::string device() const override {
    return made_.empty() ? "cpu" : made_.begin()->second.model->device();
  }

private:
  /// Segment s's trainer, made now if it is not yet. The worker asks for clock c + 1's keys
  /// right after stepping c, and may compute one clock ahead: the segment before is kept, those
  /// before it are dropped.
  trainer& segment(std::size_t s) {
    auto it = made_.find(s);
    if (it == made_.end()) {
      const auto& seg = plan_[s];
      it = made_.emplace(s, make_(seg.part, seg.parts)).first;
    }
    made_.erase(made_.begin(), made_.lower_bound(s == 0 ? 0 : s - 1));
    return *it->second.model;
  }

  data_plan plan_;
  part_trainer_factory make_;
  std::map<std::size_t, part_trainer> made_;
};

} // namespace

std::unique_ptr<trainer> make_planned_trainer(data_plan plan, part_trainer_factory make) {
  return std::make_unique<planned_trainer>(std::move(plan), std::move(make));
}

} // namespace actorps
