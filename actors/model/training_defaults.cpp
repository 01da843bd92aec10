#include "actors/ps/training_defaults.hpp"

#include "kernels/optimizer.hpp"

#include <cstdio>
#include <stdexcept>

namespace actorps {

namespace {

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

} // namespace

training_settings resolve_training(const std::string& model, const training_defaults& defaults,
                                   const training_choices& chosen) {
  training_settings s;
  s.model = model;
  auto& v = s.values;
  v = defaults;
  auto take = [&](const auto& choice, auto& field, const char* name) {
    if (!choice) return;
    field = *choice;
    s.given.push_back(name);
  };
  take(chosen.optimizer, v.optimizer, "optimizer");
  // The model's rate is its optimizer's: with another optimizer, that one's default.
  if (v.optimizer != defaults.optimizer) v.lr = 0;
  take(chosen.lr, v.lr, "lr");
  if (v.lr == 0) v.lr = default_learning_rate(v.optimizer);
  take(chosen.momentum, v.momentum, "momentum");
  take(chosen.batch, v.batch, "batch");
  take(chosen.epochs, v.epochs, "epochs");
  if (chosen.table_optimizer) {
    s.table_optimizer = chosen.table_optimizer;
    s.given.push_back("table-optimizer");
    v.table_lr = 0;  // the model's table rate is for the tables' own optimizer
  }
  take(chosen.table_lr, v.table_lr, "table-lr");
  take(chosen.admit_after, v.admit_after, "admit-after");
  take(chosen.evict_after, v.evict_after, "evict-after");
  take(chosen.max_rows, v.max_rows, "max-rows-per-shard");
  take(chosen.admission_memory, v.admission_memory, "admission-memory");
  return s;
}

optimizer_config dense_optimizer(const training_settings& s, optimizer_config o) {
  o.kind = s.values.optimizer;
  o.learning_rate = s.values.lr;
  o.momentum = s.values.momentum;
  return o;
}

void apply_table_settings(const training_settings& s, model_spec& spec) {
  for (auto& table : spec.sparse_tables) {
    auto& cfg = table.config;
    if (s.table_optimizer) {
      cfg.optimizer = row_optimizer_config{};
      cfg.optimizer.kind = *s.table_optimizer;
      cfg.optimizer.learning_rate = default_row_learning_rate(*s.table_optimizer);
    }
    if (s.values.table_lr != 0) cfg.optimizer.learning_rate = s.values.table_lr;
    if (s.values.admit_after != -1) cfg.admit_after = static_cast<uint32_t>(s.values.admit_after);
    if (s.values.evict_after != -1) cfg.evict_after = static_cast<uint32_t>(s.values.evict_after);
    if (s.values.max_rows != -1) cfg.max_rows = static_cast<uint64_t>(s.values.max_rows);
    if (s.values.admission_memory != -1)
      cfg.admission_memory = static_cast<uint64_t>(s.values.admission_memory);
    if (auto why = invalid_table_config(cfg); !why.empty())
      throw std::invalid_argument("table " + table.name + ": " + why);
  }
}

std::string describe(const training_settings& s, const model_spec& spec, bool followed) {
  const auto& v = s.values;
  std::string line = "model=" + s.model + " optimizer=" + to_string(v.optimizer)
                     + " lr=" + number(v.lr);
  if (optimizer_hyper_parameters(v.optimizer) & hyper_momentum)
    line += " momentum=" + number(v.momentum);
  line += " batch=" + std::to_string(v.batch)
          + " epochs=" + (followed ? std::string("none (a followed stream)") : number(v.epochs));
  if (!spec.sparse_tables.empty()) {  // the first table's; the settings set them all alike
    const auto& table = spec.sparse_tables.front().config;
    line += std::string(" table_optimizer=") + to_string(table.optimizer.kind)
            + " table_lr=" + number(table.optimizer.learning_rate)
            + " admit_after=" + std::to_string(table.admit_after);
    if (table.evict_after > 0) line += " evict_after=" + std::to_string(table.evict_after);
    if (table.max_rows > 0) line += " max_rows_per_shard=" + std::to_string(table.max_rows);
    if (table.admission_memory > 0)
      line += " admission_memory=" + std::to_string(table.admission_memory);
  }
  if (s.given.empty()) return line + " (the model's defaults)";
  line += " (the model's defaults; given:";
  for (const auto& name : s.given) line += " --" + name;
  return line + ")";
}

} // namespace actorps
