#include "actors/model/plugin.hpp"

#include <stdexcept>

namespace actorps {

step_loss trainer::step(int64_t, const float*, float*) {
  throw std::logic_error("this trainer trains sparse tables: call step() with them");
}

void trainer::keys(int64_t, std::vector<std::vector<uint64_t>>&) {}

step_loss trainer::step(int64_t clock, const float* params, float* grad,
                        std::vector<table_rows>&) {
  return step(clock, params, grad);
}

eval_metrics evaluation::evaluate(const float*) {
  throw std::logic_error("this evaluation reads sparse tables: call evaluate() with them");
}

void evaluation::keys(std::vector<std::vector<uint64_t>>&) {}

eval_metrics evaluation::evaluate(const float* params, const std::vector<table_rows>&) {
  return evaluate(params);
}

std::string model_plugin::check_source(data_source::kind what) const {
  if (!streamed(what)) return "";
  return "it trains on rows handed over in memory (fashion-mnist, synthetic, csv), not on a "
         "file each worker streams (libsvm, criteo)";
}

} // namespace actorps
