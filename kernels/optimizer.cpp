// The optimizers' loops over a block, one template for every row of the optimizer table
// (optimizer_table.hpp); the per-element formulas are in kernels/math.hpp.
#include "kernels/optimizer.hpp"

#include "kernels/cpu_clones.hpp"
#include "kernels/optimizer_table.hpp"
#include "kernels/table_names.hpp"

#include <cstring>
#include <stdexcept>

namespace actorps {

std::optional<optimizer_kind> parse_optimizer_kind(const std::string& name) {
  std::optional<optimizer_kind> out;
  for_each_optimizer([&](auto row) {
    if (name == decltype(row)::name) out = decltype(row)::kind;
  });
  return out;
}

const char* to_string(optimizer_kind kind) {
  const char* out = "unknown";
  visit_optimizer(kind, [&](auto row) { out = decltype(row)::name; });
  return out;
}

std::string optimizer_names() { return table_names<optimizer_table>(); }

std::size_t optimizer_state_slots(optimizer_kind kind) {
  std::size_t out = 0;
  if (!visit_optimizer(kind, [&](auto row) { out = decltype(row)::slots; }))
    throw std::invalid_argument("optimizer_state_slots: unknown optimizer kind");
  return out;
}

uint8_t optimizer_hyper_parameters(optimizer_kind kind) {
  uint8_t out = hyper_none;
  visit_optimizer(kind, [&](auto row) { out = decltype(row)::hyper; });
  return out;
}

float default_learning_rate(optimizer_kind kind) {
  float out = 0.05f;
  visit_optimizer(kind, [&](auto row) { out = decltype(row)::default_learning_rate; });
  return out;
}

namespace {

/// 1 when |p| is beyond the bound whose bits are `limit` (or p is NaN, inf), else 0: on the bits,
/// as value_bounds.cpp's all_within, so that the check vectorises inside the update's loop.
inline int32_t beyond(float p, int32_t limit) {
  int32_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  return static_cast<int32_t>((bits & 0x7fffffff) > limit);
}

/// 1 when s is NaN or inf (exponent all ones), else 0.
inline int32_t not_finite(float s) {
  int32_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  return static_cast<int32_t>((bits & 0x7f800000) == 0x7f800000);
}

/// Bits of what an update loop found: 1 a new value beyond its bound, 2 a gradient beyond its.
constexpr int32_t update_bad = 1, gradient_bad = 2;

/// One element's state, read from its slots (slot k of element i at state[k·n + i]) into
/// registers and written back: a fixed-size array the compiler keeps in registers.
template <std::size_t Slots>
struct element_state {
  float s[Slots > 0 ? Slots : 1];
  void load(const float* state, std::size_t n, std::size_t i) {
    for (std::size_t k = 0; k < Slots; ++k) s[k] = state[k * n + i];
  }
  void store(float* state, std::size_t n, std::size_t i) const {
    for (std::size_t k = 0; k < Slots; ++k) state[k * n + i] = s[k];
  }
  /// 1 when a slot is NaN or inf.
  int32_t bad() const {
    int32_t out = 0;
    for (std::size_t k = 0; k < Slots; ++k) out |= not_finite(s[k]);
    return out;
  }
};

/// f(Row{}) for the row of `kind`, always inlined, down to the loop: inside a CPU clone
/// (cpu_clones.hpp) the loop must be compiled into the clone, for its instruction set, and a
/// call through visit_optimizer's lambdas was not inlined there (an SGD update 3x slower).
template <std::size_t I = 0, class F>
[[gnu::always_inline]] inline auto with_row(optimizer_kind kind, F&& f) {
  using row = std::tuple_element_t<I, optimizer_table>;
  if constexpr (I + 1 == optimizer_count) {
    if (kind != row::kind) throw std::invalid_argument("unknown optimizer kind");
    return f(row{});
  } else {
    if (kind == row::kind) return f(row{});
    return with_row<I + 1>(kind, std::forward<F>(f));
  }
}

/// The in-place update with optimizer `Row`.
template <class Row>
[[gnu::always_inline]] inline void update_loop(const optimizer_config& cfg, float lr, int64_t step, float* param,
                 const float* grad, float* state, std::size_t n) {
  // Prepared once: the loop's stores could alias cfg as far as the compiler knows, and
  // reloading it every element kept the loop from vectorising.
  const auto c = Row::prepare(cfg, lr, step);
  for (std::size_t i = 0; i < n; ++i) {
    element_state<Row::slots> e;
    e.load(state, n, i);
    Row::step(param[i], e.s, grad[i], c);
    e.store(state, n, i);
  }
}

/// The checked update's loop with optimizer `Row`. The bounds are ORed up in the same loop, on
/// values still in registers: a separate pass over the outputs cost as much again as an SGD
/// update. With CheckGradient the gradient's bound too, on the value the update reads anyway:
/// one more compare per element, where a pass of its own read the whole gradient a second time.
/// Always inlined: each CPU clone below compiles its own copy for its instruction set.
template <class Row, bool CheckGradient>
[[gnu::always_inline]] inline int32_t checked_row_loop(
  const optimizer_config& cfg, float lr, int64_t step, const float* param_in,
  const float* state_in, const float* grad, float* param_out, float* state_out, std::size_t n,
  int32_t limit, int32_t grad_limit) {
  const auto c = Row::prepare(cfg, lr, step);
  int32_t bad = 0, bad_grad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float p = param_in[i], g = grad[i];
    element_state<Row::slots> e;
    e.load(state_in, n, i);
    Row::step(p, e.s, g, c);
    param_out[i] = p;
    e.store(state_out, n, i);
    bad |= beyond(p, limit) | e.bad();
    if constexpr (CheckGradient) bad_grad |= beyond(g, grad_limit);
  }
  return (bad ? update_bad : 0) | (bad_grad ? gradient_bad : 0);
}

template <bool CheckGradient>
[[gnu::always_inline]] inline int32_t checked_update_loop(
  const optimizer_config& cfg, float lr, int64_t step, const float* param_in,
  const float* state_in, const float* grad, float* param_out, float* state_out, std::size_t n,
  float max_parameter, float max_gradient) {
  int32_t limit, grad_limit;
  std::memcpy(&limit, &max_parameter, sizeof limit);
  std::memcpy(&grad_limit, &max_gradient, sizeof grad_limit);
  return with_row<>(cfg.kind, [&](auto row) {
    return checked_row_loop<decltype(row), CheckGradient>(cfg, lr, step, param_in, state_in, grad,
                                                          param_out, state_out, n, limit,
                                                          grad_limit);
  });
}

} // namespace

void apply_update(const optimizer_config& cfg, float lr, int64_t step, float* param,
                  const float* grad, float* state, std::size_t n) {
  with_row<>(cfg.kind, [&](auto row) {
    update_loop<decltype(row)>(cfg, lr, step, param, grad, state, n);
  });
}

// The checked updates are cloned for AVX2 (cpu_clones.hpp): 4 floats wide, an SGD update with
// its bound checks is compute-bound (2.5 memcpys of its payload at 1 MiB).

ACTORPS_CPU_CLONES
bool apply_update_checked(const optimizer_config& cfg, float lr, int64_t step,
                          const float* param_in, const float* state_in, const float* grad,
                          float* param_out, float* state_out, std::size_t n, float max_parameter) {
  return checked_update_loop<false>(cfg, lr, step, param_in, state_in, grad, param_out,
                                    state_out, n, max_parameter, 0.0f) == 0;
}

ACTORPS_CPU_CLONES
update_check apply_pushed_update(const optimizer_config& cfg, float lr, int64_t step,
                                 const float* param_in, const float* state_in, const float* grad,
                                 float* param_out, float* state_out, std::size_t n,
                                 float max_parameter, float max_gradient) {
  auto found = checked_update_loop<true>(cfg, lr, step, param_in, state_in, grad, param_out,
                                         state_out, n, max_parameter, max_gradient);
  if (found & gradient_bad) return update_check::gradient_beyond;
  return found ? update_check::update_beyond : update_check::applied;
}

bool all_finite(const float* values, std::size_t n) {
  // OR-reduce "exponent all ones" over the bits: vectorises, unlike a chain of isfinite().
  uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

} // namespace actorps
