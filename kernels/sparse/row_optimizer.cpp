// The row optimizers' entry points, each a look-up in the table (row_optimizer_table.hpp).
#include "kernels/sparse/row_optimizer.hpp"

#include "kernels/sparse/row_optimizer_table.hpp"
#include "kernels/table_names.hpp"

#include <cmath>
#include <stdexcept>

namespace actorps {

namespace {

/// Calls f(Row{}) for the row of `kind`; throws std::invalid_argument naming `who` for a kind
/// of no row (a value cast from outside the enum).
template <class F>
void with_row(row_optimizer_kind kind, const char* who, F&& f) {
  if (!visit_row_optimizer(kind, f))
    throw std::invalid_argument(std::string(who) + ": unknown row optimizer kind "
                                + std::to_string(static_cast<int>(kind)));
}

} // namespace

std::optional<row_optimizer_kind> parse_row_optimizer_kind(const std::string& name) {
  std::optional<row_optimizer_kind> kind;
  for_each_row_optimizer([&](auto row) {
    if (name == decltype(row)::name) kind = decltype(row)::kind;
  });
  return kind;
}

const char* to_string(row_optimizer_kind kind) {
  const char* name = "unknown";
  visit_row_optimizer(kind, [&](auto row) { name = decltype(row)::name; });
  return name;
}

std::string row_optimizer_names() { return table_names<row_optimizer_table>(); }

uint32_t row_state_slots(row_optimizer_kind kind) {
  uint32_t slots = 0;
  with_row(kind, "row_state_slots", [&](auto row) { slots = decltype(row)::slots; });
  return slots;
}

bool row_counts_steps(row_optimizer_kind kind) {
  bool counts = false;
  with_row(kind, "row_counts_steps", [&](auto row) { counts = decltype(row)::counts_steps; });
  return counts;
}

float default_row_learning_rate(row_optimizer_kind kind) {
  float lr = 0;
  with_row(kind, "default_row_learning_rate",
           [&](auto row) { lr = decltype(row)::default_learning_rate; });
  return lr;
}

void validate_row_optimizer(const row_optimizer_config& cfg) {
  with_row(cfg.kind, "validate_row_optimizer", [&](auto row) {
    math::detail::require(std::isfinite(cfg.learning_rate) && cfg.learning_rate > 0,
                                    "learning_rate", "positive and finite", cfg.learning_rate);
    math::detail::require(math::detail::non_negative(cfg.epsilon), "epsilon",
                                    ">= 0", cfg.epsilon);
    decltype(row)::validate(cfg);
  });
}

void init_row_state(const row_optimizer_config& cfg, const float* row, float* state,
                    uint32_t dim) {
  with_row(cfg.kind, "init_row_state", [&](auto r) { decltype(r)::init(cfg, row, state, dim); });
}

void apply_row_update(const row_optimizer_config& cfg, float lr_scale, uint32_t step,
                      float* row, const float* grad, float* state, uint32_t dim) {
  const float lr = cfg.learning_rate * lr_scale;
  with_row(cfg.kind, "apply_row_update",
           [&](auto r) { decltype(r)::update(cfg, lr, step, row, grad, state, dim); });
}

} // namespace actorps
