// The exported model.capnp (actors/serving/served_model.hpp) as `actorps predict` and `actorps
// evaluate` load it: format 1 (an MLP) or 2 (a CTR model), from a file anybody may hand them.
// A model that loads is run on a row, as predict runs it: whatever the file said, its tensors
// must fit its layers, or the forward pass reads outside them (AddressSanitizer says so).
#include "actors/serving/ctr_scoring.hpp"
#include "actors/serving/model_evaluation.hpp"
#include "actors/serving/served_model.hpp"
#include "kernels/backend_factory.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstdlib>
#include <variant>

namespace actorps {
namespace {

backend& cpu() {
  static auto be = make_backend(backend_kind::cpu);
  return *be;
}

/// Bounds the work of one input: a model that loads may still be large (the loader bounds
/// nothing but what the file holds, and the file is small).
constexpr std::size_t most_floats = std::size_t(1) << 22;

void run_mlp(const exported_model& model) {
  std::size_t widest = 0;
  for (int w : model.layers) widest = std::max<std::size_t>(widest, static_cast<std::size_t>(w));
  if (widest > most_floats) return;
  std::vector<float> row(static_cast<std::size_t>(model.layers.front()), 0.5f);
  auto probs = predict_probabilities(cpu(), model, row.data(), 1);
  if (probs.size() != static_cast<std::size_t>(model.layers.back())) std::abort();
}

/// Two rows: every key unknown (row 0 of each field), then each field's first known key.
void run_ctr(const ctr_model& model) {
  criteo_batch batch;
  batch.labels = {0.0f, 1.0f};
  constexpr std::size_t fields = criteo_categorical_fields;
  batch.dense.assign(2 * std::size_t(criteo_dense_fields), 0.25f);
  batch.keys.assign(2 * fields, 0);
  for (std::size_t f = 0; f < model.fields.size() && f < fields; ++f)
    if (!model.fields[f].keys.empty()) batch.keys[fields + f] = model.fields[f].keys.front();
  auto logits = ctr_logits(cpu(), model, batch);
  if (logits.size() != 2) std::abort();
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  served_model model;
  try {
    model = decode_served_model(std::string(reinterpret_cast<const char*>(data), size),
                                "model.capnp");
  } catch (const model_file_error&) {
    return 0;  // refused with a reason: what a malformed model must get
  }
  if (const auto* mlp = std::get_if<exported_model>(&model))
    run_mlp(*mlp);
  else
    run_ctr(std::get<ctr_model>(model));
  return 0;
}
