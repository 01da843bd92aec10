// The row optimizers' loops over one row; the per-element formulas are in kernels/math.hpp.
#include "kernels/sparse/row_optimizer.hpp"

#include "kernels/math.hpp"

#include <cmath>
#include <stdexcept>

namespace actorps {

std::optional<row_optimizer_kind> parse_row_optimizer_kind(const std::string& name) {
  if (name == "sgd") return row_optimizer_kind::sgd;
  if (name == "adagrad") return row_optimizer_kind::adagrad;
  if (name == "adam") return row_optimizer_kind::adam;
  if (name == "ftrl") return row_optimizer_kind::ftrl;
  return std::nullopt;
}

const char* to_string(row_optimizer_kind kind) {
  switch (kind) {
    case row_optimizer_kind::sgd: return "sgd";
    case row_optimizer_kind::adagrad: return "adagrad";
    case row_optimizer_kind::adam: return "adam";
    case row_optimizer_kind::ftrl: return "ftrl";
  }
  return "unknown";
}

uint32_t row_state_slots(row_optimizer_kind kind) {
  switch (kind) {
    case row_optimizer_kind::sgd: return 0;
    case row_optimizer_kind::adagrad: return 1;
    case row_optimizer_kind::adam: return 2;
    case row_optimizer_kind::ftrl: return 2;
  }
  throw std::invalid_argument("row_state_slots: unknown row optimizer kind");
}

namespace {

void require(bool ok, const char* field, const char* rule, float value) {
  if (!ok) {
    throw std::invalid_argument(std::string("row optimizer: ") + field + " must be " + rule +
                                ", got " + std::to_string(value));
  }
}

} // namespace

void validate_row_optimizer(const row_optimizer_config& cfg) {
  row_state_slots(cfg.kind);  // throws for a kind outside the enum
  require(std::isfinite(cfg.learning_rate) && cfg.learning_rate > 0, "learning_rate",
          "positive and finite", cfg.learning_rate);
  require(cfg.epsilon >= 0 && std::isfinite(cfg.epsilon), "epsilon", ">= 0", cfg.epsilon);
  switch (cfg.kind) {
    case row_optimizer_kind::sgd: break;
    case row_optimizer_kind::adagrad:
      require(cfg.initial_accumulator >= 0 && std::isfinite(cfg.initial_accumulator),
              "initial_accumulator", ">= 0", cfg.initial_accumulator);
      require(cfg.initial_accumulator > 0 || cfg.epsilon > 0, "initial_accumulator",
              "positive when epsilon is 0", cfg.initial_accumulator);
      break;
    case row_optimizer_kind::adam:
      require(cfg.beta1 >= 0 && cfg.beta1 < 1, "beta1", "in [0, 1)", cfg.beta1);
      require(cfg.beta2 >= 0 && cfg.beta2 < 1, "beta2", "in [0, 1)", cfg.beta2);
      break;
    case row_optimizer_kind::ftrl:
      require(cfg.ftrl_beta >= 0 && std::isfinite(cfg.ftrl_beta), "ftrl_beta", ">= 0",
              cfg.ftrl_beta);
      require(cfg.l1 >= 0 && std::isfinite(cfg.l1), "l1", ">= 0", cfg.l1);
      require(cfg.l2 >= 0 && std::isfinite(cfg.l2), "l2", ">= 0", cfg.l2);
      require(cfg.ftrl_beta > 0 || cfg.l2 > 0, "ftrl_beta", "positive when l2 is 0",
              cfg.ftrl_beta);
      break;
  }
}

void init_row_state(const row_optimizer_config& cfg, const float* row, float* state,
                    uint32_t dim) {
  switch (cfg.kind) {
    case row_optimizer_kind::sgd: return;
    case row_optimizer_kind::adagrad:
      for (uint32_t i = 0; i < dim; ++i) state[i] = cfg.initial_accumulator;
      return;
    case row_optimizer_kind::adam:
      for (uint32_t i = 0; i < 2 * dim; ++i) state[i] = 0.0f;
      return;
    case row_optimizer_kind::ftrl: {
      // With n = 0 the weight is −(z − sign(z)·l1) / (beta/alpha + l2); solved for z.
      const float denominator = cfg.ftrl_beta / cfg.learning_rate + cfg.l2;
      float* z = state;
      float* n = state + dim;
      for (uint32_t i = 0; i < dim; ++i) {
        const float w = row[i];
        z[i] = w == 0.0f ? 0.0f : -w * denominator - (w < 0.0f ? -cfg.l1 : cfg.l1);
        n[i] = 0.0f;
      }
      return;
    }
  }
  throw std::invalid_argument("init_row_state: unknown row optimizer kind");
}

void apply_row_update(const row_optimizer_config& cfg, float lr_scale, uint32_t step,
                      float* row, const float* grad, float* state, uint32_t dim) {
  const float lr = cfg.learning_rate * lr_scale;
  switch (cfg.kind) {
    case row_optimizer_kind::sgd:
      for (uint32_t i = 0; i < dim; ++i) math::sgd_step(row[i], grad[i], lr);
      return;
    case row_optimizer_kind::adagrad:
      for (uint32_t i = 0; i < dim; ++i) {
        math::adagrad_step(row[i], state[i], grad[i], lr, cfg.epsilon);
      }
      return;
    case row_optimizer_kind::adam: {
      if (step < 1) throw std::invalid_argument("apply_row_update: adam needs a 1-based step");
      const float correction1 = math::adam_bias_correction(cfg.beta1, step);
      const float correction2 = math::adam_bias_correction(cfg.beta2, step);
      float* m = state;
      float* v = state + dim;
      for (uint32_t i = 0; i < dim; ++i) {
        math::adam_step(row[i], m[i], v[i], grad[i], lr, cfg.beta1, cfg.beta2, cfg.epsilon,
                        correction1, correction2);
      }
      return;
    }
    case row_optimizer_kind::ftrl: {
      float* z = state;
      float* n = state + dim;
      for (uint32_t i = 0; i < dim; ++i) {
        math::ftrl_step(row[i], z[i], n[i], grad[i], lr, cfg.ftrl_beta, cfg.l1, cfg.l2);
      }
      return;
    }
  }
  throw std::invalid_argument("apply_row_update: unknown row optimizer kind");
}

} // namespace actorps
