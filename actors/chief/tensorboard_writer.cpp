#include "actors/chief/tensorboard_writer.hpp"

#include <algorithm>
#include <cmath>

namespace actorps {

namespace {

using json = nlohmann::ordered_json;

/// The number under `key`, if the event has one (a non-finite figure is kept as one).
bool number(const json& event, const char* key, double& out) {
  auto i = event.find(key);
  if (i == event.end() || !i->is_number()) return false;
  out = i->get<double>();
  return true;
}

} // namespace

tensorboard_writer::tensorboard_writer(const std::string& dir) : file_(dir) {}

void tensorboard_writer::on_event(const json& event) {
  auto kind = event.find("event");
  if (!event.is_object() || kind == event.end() || !kind->is_string()) return;
  double clock = 0;
  if (number(event, "clock", clock)) last_step_ = static_cast<int64_t>(clock);
  const auto& name = kind->get_ref<const std::string&>();
  if (name == "train") return on_train(event);
  if (name == "eval") return on_eval(event);
  if (name == "summary") return on_summary(event);
  static const std::map<std::string, std::string> counted = {
    {"failure", "failures"}, {"recovery", "recoveries"}, {"failover", "failovers"},
    {"rereplicated", "rereplications"}, {"standby_lost", "standbys_lost"},
    {"skipped", "workers_skipped"}, {"checkpoint", "checkpoints"},
    {"checkpoint_failed", "checkpoint_failures"}};
  if (auto i = counted.find(name); i != counted.end()) count(i->second, event);
}

void tensorboard_writer::on_train(const json& event) {
  double loss = 0, samples = 0, staleness = 0, wall_s = 0;
  if (number(event, "loss", loss)) loss_sum_ += loss, ++loss_count_;
  if (number(event, "samples", samples)) samples_ += samples;
  if (number(event, "staleness", staleness)) max_staleness_ = std::max(max_staleness_, staleness);
  // A report of clock c is the (c+1)-th clock trained: plotted at c + 1, where an evaluation
  // of the parameters after it sits.
  const int64_t step = last_step_ + 1;
  if (step <= train_step_ || loss_count_ == 0) return;
  train_step_ = step;
  std::vector<tf_scalar> values{{"train/loss", float(loss_sum_ / double(loss_count_))},
                                {"train/max_staleness", float(max_staleness_)}};
  if (number(event, "wall_s", wall_s) && wall_s > 0)
    values.push_back({"train/samples_per_s", float(samples_ / wall_s)});
  file_.add(train_step_, values);
  loss_sum_ = 0;
  loss_count_ = 0;
}

void tensorboard_writer::on_eval(const json& event) {
  std::vector<tf_scalar> values;
  for (const char* key : {"test_accuracy", "test_loss", "test_auc", "test_logloss", "test_gauc",
                          "test_calibration"})
    if (double v = 0; number(event, key, v))
      values.push_back({std::string("test/") + (key + 5), float(v)});
  // --slice-auc: a plot per slice (the same slices each evaluation: the test rows are fixed),
  // those of one class only (no AUC) left out
  auto slices = event.find("test_slice_auc");
  if (slices != event.end() && slices->is_array())
    for (const auto& s : *slices)
      if (double v = 0; s.is_object() && s.contains("key") && s["key"].is_string()
                        && number(s, "auc", v) && std::isfinite(v))
        values.push_back({"test/slice_auc/" + s["key"].get<std::string>(), float(v)});
  file_.add(last_step_, values);
  file_.flush();
}

void tensorboard_writer::on_summary(const json& event) {
  double clocks = 0;
  if (number(event, "clocks", clocks)) last_step_ = static_cast<int64_t>(clocks);
  auto rows = event.find("sparse_rows");  // [[rows of table 0, ...] per shard]
  if (rows != event.end() && rows->is_array()) {
    double total = 0;
    for (const auto& shard : *rows)
      if (shard.is_array())
        for (const auto& table : shard)
          if (table.is_number()) total += table.get<double>();
    file_.add(last_step_, {{"shards/rows", float(total)}});
  }
  file_.flush();
}

void tensorboard_writer::count(const std::string& name, const json& event) {
  std::vector<tf_scalar> values{{"events/" + name, float(++counts_[name])}};
  double ms = 0;
  if ((name == "recoveries" || name == "failovers") && number(event, "ms", ms))
    values.push_back({name == "recoveries" ? "events/recovery_ms" : "events/failover_ms",
                      float(ms)});
  file_.add(last_step_, values);
}

} // namespace actorps
