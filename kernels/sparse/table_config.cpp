#include "actors/ps/sparse_table_config.hpp"

#include "kernels/sparse/admission_sketch.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace actorps {

std::optional<row_init> parse_row_init(const std::string& name) {
  if (name == "zeros") return row_init::zeros;
  if (name == "uniform") return row_init::uniform;
  if (name == "normal") return row_init::normal;
  return std::nullopt;
}

const char* to_string(row_init init) {
  switch (init) {
    case row_init::zeros: return "zeros";
    case row_init::uniform: return "uniform";
    case row_init::normal: return "normal";
  }
  return "unknown";
}

std::string invalid_table_config(const sparse_table_config& cfg) {
  if (cfg.dim == 0) return "dim must be at least 1";
  if (!std::isfinite(cfg.scale) || cfg.scale < 0)
    return "scale must be finite and >= 0, got " + std::to_string(cfg.scale);
  const uint64_t stride = uint64_t(cfg.dim) * (1 + row_state_slots(cfg.optimizer.kind));
  if (stride > std::numeric_limits<uint32_t>::max() - 4)  // and the row's key, clock, touches
    return "dim " + std::to_string(cfg.dim) + " is too large";
  if (cfg.admission_memory > 0) {
    if (cfg.admit_after < 2 || cfg.admit_after > admission_sketch::max_count)
      return "admission_memory needs admit_after in [2, " +
             std::to_string(admission_sketch::max_count) + "], got " +
             std::to_string(cfg.admit_after);
    if (cfg.admission_memory > (uint64_t(1) << 40))  // a typo, not a sketch: refused, not allocated
      return "admission_memory must be at most 2^40 bytes, got " +
             std::to_string(cfg.admission_memory);
    if (cfg.admission_memory < admission_sketch::min_bytes)
      return "admission_memory must be at least " + std::to_string(admission_sketch::min_bytes) +
             " bytes, got " + std::to_string(cfg.admission_memory);
  }
  try {
    validate_row_optimizer(cfg.optimizer);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

} // namespace actorps
