// The dense optimizers, one row each: what the runtime knows of an optimizer (its name, the
// floats of state it keeps per parameter, its default learning rate, the hyper-parameters it
// reads) beside its rule, the per-element formula of kernels/math.hpp it applies. Parsing,
// naming, state sizes, defaults, the shards' update loops and what an export records all read
// this table; a new optimizer is a row here, its formula in math.hpp, its kind
// (actors/ps/optimizer.hpp) and a schema enumerant of the same name (schema/actorps.capnp: the
// wire carries the kind), and a test; a kind or enumerant missing or misnamed fails the build
// (the static_asserts below and in actors/protocol/schema_enums.cpp).
#pragma once

#include "kernels/enumerator_name.hpp"
#include "kernels/math.hpp"
#include "kernels/optimizer.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace actorps {

namespace optimizers {

// Each row: kind, name, slots (floats of state per parameter, laid out slot after slot),
// default learning rate, hyper-parameters read; `constants` is what an update computes once
// (not per element) and `step` one element's update, its state in s[0, slots).

struct sgd {
  static constexpr optimizer_kind kind = optimizer_kind::sgd;
  static constexpr const char* name = "sgd";
  static constexpr std::size_t slots = 0;
  static constexpr float default_learning_rate = 0.1f;
  static constexpr uint8_t hyper = hyper_none;
  struct constants {
    float lr;
  };
  static constants prepare(const optimizer_config&, float lr, int64_t) { return {lr}; }
  [[gnu::always_inline]] static void step(float& p, float*, float g, const constants& c) { math::sgd_step(p, g, c.lr); }
};

struct momentum {
  static constexpr optimizer_kind kind = optimizer_kind::momentum;
  static constexpr const char* name = "momentum";
  static constexpr std::size_t slots = 1;
  static constexpr float default_learning_rate = 0.05f;
  static constexpr uint8_t hyper = hyper_momentum;
  struct constants {
    float lr, momentum;
  };
  static constants prepare(const optimizer_config& cfg, float lr, int64_t) {
    return {lr, cfg.momentum};
  }
  [[gnu::always_inline]] static void step(float& p, float* s, float g, const constants& c) {
    math::momentum_step(p, s[0], g, c.lr, c.momentum);
  }
};

struct adam {
  static constexpr optimizer_kind kind = optimizer_kind::adam;
  static constexpr const char* name = "adam";
  static constexpr std::size_t slots = 2;  // m, v
  static constexpr float default_learning_rate = 0.001f;
  static constexpr uint8_t hyper = hyper_betas | hyper_epsilon;
  struct constants {
    float lr, beta1, beta2, epsilon, correction1, correction2;
  };
  /// Throws std::invalid_argument for a step below 1 (the bias correction is 1-based).
  static constants prepare(const optimizer_config& cfg, float lr, int64_t step) {
    if (step < 1)
      throw std::invalid_argument("adam needs a 1-based step, got " + std::to_string(step));
    return {lr,
            cfg.beta1,
            cfg.beta2,
            cfg.epsilon,
            math::adam_bias_correction(cfg.beta1, step),
            math::adam_bias_correction(cfg.beta2, step)};
  }
  [[gnu::always_inline]] static void step(float& p, float* s, float g, const constants& c) {
    math::adam_step(p, s[0], s[1], g, c.lr, c.beta1, c.beta2, c.epsilon, c.correction1,
                    c.correction2);
  }
};

struct adagrad {
  static constexpr optimizer_kind kind = optimizer_kind::adagrad;
  static constexpr const char* name = "adagrad";
  static constexpr std::size_t slots = 1;  // the accumulator
  static constexpr float default_learning_rate = 0.05f;
  static constexpr uint8_t hyper = hyper_epsilon;
  struct constants {
    float lr, epsilon;
  };
  static constants prepare(const optimizer_config& cfg, float lr, int64_t) {
    return {lr, cfg.epsilon};
  }
  [[gnu::always_inline]] static void step(float& p, float* s, float g, const constants& c) {
    math::adagrad_step(p, s[0], g, c.lr, c.epsilon);
  }
};

} // namespace optimizers

/// The table, in the order of optimizer_kind (and of the schema's Optimizer enum).
using optimizer_table = std::tuple<optimizers::sgd, optimizers::momentum, optimizers::adam,
                                   optimizers::adagrad>;

inline constexpr std::size_t optimizer_count = std::tuple_size_v<optimizer_table>;

namespace detail {
template <std::size_t... I>
constexpr bool rows_in_kind_order(std::index_sequence<I...>) {
  return ((static_cast<std::size_t>(std::tuple_element_t<I, optimizer_table>::kind) == I) && ...);
}
} // namespace detail
static_assert(detail::rows_in_kind_order(std::make_index_sequence<optimizer_count>{}),
              "row i of the optimizer table is optimizer_kind i");
// The enum follows the table: a kind without a row fails here, as a row of no kind fails to
// compile; schema_enums.cpp holds the schema's Optimizer to the table the same way.
static_assert(rows_name_enumerators<optimizer_kind, optimizer_table>(
                std::make_index_sequence<optimizer_count>{}),
              "optimizer_kind i is named as row i of the optimizer table, and has no more values");

/// Calls f(Row{}) for the row of `kind` and returns true; false for a kind of no row.
template <class F>
bool visit_optimizer(optimizer_kind kind, F&& f) {
  return std::apply(
    [&](auto... rows) { return ((decltype(rows)::kind == kind ? (f(rows), true) : false) || ...); },
    optimizer_table{});
}

/// Calls f(Row{}) for every row, in order.
template <class F>
void for_each_optimizer(F&& f) {
  std::apply([&](auto... rows) { (f(rows), ...); }, optimizer_table{});
}

} // namespace actorps
