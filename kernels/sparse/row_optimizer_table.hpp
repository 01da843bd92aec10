// The row optimizers, one row each, named as the dense table names its rows
// (kernels/optimizer_table.hpp): kind, name, slots (floats of state per value, laid out slot
// after slot), default learning rate, and the rule: what a configuration must satisfy, the
// state a new row starts with, one row's update. Parsing, naming, state sizes, validation, the
// sparse table's loops and its checkpoints all read this table; a new row optimizer is a row
// here, its per-element formula in kernels/math.hpp, its kind (actors/ps/row_optimizer.hpp) and
// a schema enumerant of the same name (schema/actorps.capnp's SparseTableSpec.Optimizer), and a
// test; a kind or enumerant missing or misnamed fails the build (the static_asserts below and
// in actors/protocol/schema_enums.cpp).
//
// "adam" means the same in both tables: the bias correction counts the updates of the value it
// corrects. Every dense value is updated on every step, so the dense table counts steps once per
// tensor; rows are touched at different rates, so a row counts its own (`counts_steps`: the
// sparse table keeps a step per row and hands it to `update`).
#pragma once

#include "kernels/enumerator_name.hpp"
#include "kernels/math.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace actorps {

namespace row_optimizers {

namespace detail {
inline void require(bool ok, const char* field, const char* rule, float value) {
  if (!ok) {
    throw std::invalid_argument(std::string("row optimizer: ") + field + " must be " + rule +
                                ", got " + std::to_string(value));
  }
}
inline bool non_negative(float v) { return v >= 0 && v <= std::numeric_limits<float>::max(); }
} // namespace detail

struct sgd {
  static constexpr row_optimizer_kind kind = row_optimizer_kind::sgd;
  static constexpr const char* name = "sgd";
  static constexpr uint32_t slots = 0;
  static constexpr bool counts_steps = false;
  static constexpr float default_learning_rate = 0.05f;
  static void validate(const row_optimizer_config&) {}
  static void init(const row_optimizer_config&, const float*, float*, uint32_t) {}
  static void update(const row_optimizer_config&, float lr, uint32_t, float* row,
                     const float* grad, float*, uint32_t dim) {
    for (uint32_t i = 0; i < dim; ++i) math::sgd_step(row[i], grad[i], lr);
  }
};

struct adagrad {
  static constexpr row_optimizer_kind kind = row_optimizer_kind::adagrad;
  static constexpr const char* name = "adagrad";
  static constexpr uint32_t slots = 1;  // the accumulator
  static constexpr bool counts_steps = false;
  static constexpr float default_learning_rate = 0.05f;
  static void validate(const row_optimizer_config& cfg) {
    detail::require(detail::non_negative(cfg.initial_accumulator), "initial_accumulator", ">= 0",
                    cfg.initial_accumulator);
    // A zero gradient would divide 0 by 0.
    detail::require(cfg.initial_accumulator > 0 || cfg.epsilon > 0, "initial_accumulator",
                    "positive when epsilon is 0", cfg.initial_accumulator);
  }
  static void init(const row_optimizer_config& cfg, const float*, float* state, uint32_t dim) {
    for (uint32_t i = 0; i < dim; ++i) state[i] = cfg.initial_accumulator;
  }
  static void update(const row_optimizer_config& cfg, float lr, uint32_t, float* row,
                     const float* grad, float* state, uint32_t dim) {
    for (uint32_t i = 0; i < dim; ++i) math::adagrad_step(row[i], state[i], grad[i], lr, cfg.epsilon);
  }
};

struct adam {
  static constexpr row_optimizer_kind kind = row_optimizer_kind::adam;
  static constexpr const char* name = "adam";
  static constexpr uint32_t slots = 2;  // m, v
  static constexpr bool counts_steps = true;
  static constexpr float default_learning_rate = 0.05f;
  static void validate(const row_optimizer_config& cfg) {
    detail::require(cfg.beta1 >= 0 && cfg.beta1 < 1, "beta1", "in [0, 1)", cfg.beta1);
    detail::require(cfg.beta2 >= 0 && cfg.beta2 < 1, "beta2", "in [0, 1)", cfg.beta2);
  }
  static void init(const row_optimizer_config&, const float*, float* state, uint32_t dim) {
    for (uint32_t i = 0; i < 2 * dim; ++i) state[i] = 0.0f;
  }
  /// Throws std::invalid_argument for step 0 (the bias correction is 1-based).
  static void update(const row_optimizer_config& cfg, float lr, uint32_t step, float* row,
                     const float* grad, float* state, uint32_t dim) {
    if (step < 1) throw std::invalid_argument("apply_row_update: adam needs a 1-based step");
    const float correction1 = math::adam_bias_correction(cfg.beta1, step);
    const float correction2 = math::adam_bias_correction(cfg.beta2, step);
    float* m = state;
    float* v = state + dim;
    for (uint32_t i = 0; i < dim; ++i) {
      math::adam_step(row[i], m[i], v[i], grad[i], lr, cfg.beta1, cfg.beta2, cfg.epsilon,
                      correction1, correction2);
    }
  }
};

struct ftrl {
  static constexpr row_optimizer_kind kind = row_optimizer_kind::ftrl;
  static constexpr const char* name = "ftrl";
  static constexpr uint32_t slots = 2;  // z, n
  static constexpr bool counts_steps = false;
  static constexpr float default_learning_rate = 0.05f;  // alpha
  static void validate(const row_optimizer_config& cfg) {
    detail::require(detail::non_negative(cfg.ftrl_beta), "ftrl_beta", ">= 0", cfg.ftrl_beta);
    detail::require(detail::non_negative(cfg.l1), "l1", ">= 0", cfg.l1);
    detail::require(detail::non_negative(cfg.l2), "l2", ">= 0", cfg.l2);
    // The first weight would divide by 0.
    detail::require(cfg.ftrl_beta > 0 || cfg.l2 > 0, "ftrl_beta", "positive when l2 is 0",
                    cfg.ftrl_beta);
  }
  /// z is the value from which the weight formula gives back row[i], so a randomly initialised
  /// row keeps its values until its first update instead of being snapped to 0.
  static void init(const row_optimizer_config& cfg, const float* row, float* state,
                   uint32_t dim) {
    // With n = 0 the weight is −(z − sign(z)·l1) / (beta/alpha + l2); solved for z.
    const float denominator = cfg.ftrl_beta / cfg.learning_rate + cfg.l2;
    float* z = state;
    float* n = state + dim;
    for (uint32_t i = 0; i < dim; ++i) {
      const float w = row[i];
      z[i] = w == 0.0f ? 0.0f : -w * denominator - (w < 0.0f ? -cfg.l1 : cfg.l1);
      n[i] = 0.0f;
    }
  }
  /// `lr`'s part beyond the table's rate (a push's share of a clock in ssp and async: 1 / live
  /// workers) scales the gradient: alpha divides the whole weight (math::ftrl_weight), so a
  /// share taken as alpha would rescale the row by its last push's share (a row last pushed by
  /// the one worker of three still training came out 3 times as large).
  static void update(const row_optimizer_config& cfg, float lr, uint32_t, float* row,
                     const float* grad, float* state, uint32_t dim) {
    float* z = state;
    float* n = state + dim;
    const float share = lr / cfg.learning_rate;  // exactly 1 for lr == cfg.learning_rate
    for (uint32_t i = 0; i < dim; ++i)
      math::ftrl_step(row[i], z[i], n[i], share * grad[i], cfg.learning_rate, cfg.ftrl_beta,
                      cfg.l1, cfg.l2);
  }
};

} // namespace row_optimizers

/// The table, in the order of row_optimizer_kind (and of the schema's SparseTableSpec.Optimizer).
using row_optimizer_table =
  std::tuple<row_optimizers::sgd, row_optimizers::adagrad, row_optimizers::adam,
             row_optimizers::ftrl>;

inline constexpr std::size_t row_optimizer_count = std::tuple_size_v<row_optimizer_table>;

namespace detail {
template <std::size_t... I>
constexpr bool row_optimizers_in_kind_order(std::index_sequence<I...>) {
  return ((static_cast<std::size_t>(std::tuple_element_t<I, row_optimizer_table>::kind) == I)
          && ...);
}
} // namespace detail
static_assert(detail::row_optimizers_in_kind_order(std::make_index_sequence<row_optimizer_count>{}),
              "row i of the row optimizer table is row_optimizer_kind i");
// The enum follows the table, as the dense one's does (kernels/optimizer_table.hpp).
static_assert(rows_name_enumerators<row_optimizer_kind, row_optimizer_table>(
                std::make_index_sequence<row_optimizer_count>{}),
              "row_optimizer_kind i is named as row i of the row optimizer table, and has no more "
              "values");

/// Calls f(Row{}) for the row of `kind` and returns true; false for a kind of no row.
template <class F>
bool visit_row_optimizer(row_optimizer_kind kind, F&& f) {
  return std::apply(
    [&](auto... rows) { return ((decltype(rows)::kind == kind ? (f(rows), true) : false) || ...); },
    row_optimizer_table{});
}

/// Calls f(Row{}) for every row, in order.
template <class F>
void for_each_row_optimizer(F&& f) {
  std::apply([&](auto... rows) { (f(rows), ...); }, row_optimizer_table{});
}

} // namespace actorps
