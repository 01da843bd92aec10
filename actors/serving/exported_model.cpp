#include "actors/serving/exported_model.hpp"

#include "actors/protocol/model_spec.hpp"  // to_string(layers)
#include "actors/serving/model_readers.hpp"
#include "actors/serving/served_model.hpp"
#include "kernels/optimizer.hpp"
#include "schema/model_export.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cmath>
#include <cstring>
#include <sstream>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "tensor values are little-endian float32, copied in host order");

namespace actorps {

namespace {

constexpr uint32_t max_width = 1u << 24;

} // namespace

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

exported_model read_mlp_model(exported::ExportedModel::Reader root, const std::string& origin) {
  auto fail = [&](const std::string& what) { return model_file_error(origin + ": " + what); };
  exported_model model;
  for (auto w : root.getLayers()) {
    if (w == 0 || w > max_width) throw fail("layer width " + std::to_string(w) + " out of range");
    model.layers.push_back(static_cast<int>(w));
  }
  if (model.layers.size() < 2)
    throw fail("the spec has " + std::to_string(model.layers.size())
               + " layer widths, a model needs at least 2");
  if (root.getHiddenActivation() != exported::Activation::RELU
      || root.getOutputActivation() != exported::Activation::SOFTMAX)
    throw fail("unsupported activations: this actorps runs relu hidden layers and a softmax "
               "output");
  model.input_divisor = root.getInputDivisor();
  if (!(model.input_divisor > 0) || !std::isfinite(model.input_divisor))
    throw fail("input divisor " + std::to_string(model.input_divisor) + " is not positive");

  const auto slots = tensor_slots(model.layers);
  const auto spec = "layers " + to_string(model.layers);
  auto tensors = root.getTensors();
  if (tensors.size() != slots.size())
    throw fail("the spec (" + spec + ") needs " + std::to_string(slots.size())
               + " tensors, the file has " + std::to_string(tensors.size()));
  for (std::size_t t = 0; t < slots.size(); ++t) {  // sizes first: allocate only what fits
    auto tensor = tensors[static_cast<unsigned>(t)];
    const auto& slot = slots[t];
    if (std::string(tensor.getName().cStr()) != slot.name)
      throw fail("tensor " + std::to_string(t) + " is named '" + tensor.getName().cStr()
                 + "', expected " + slot.name);
    std::vector<std::size_t> shape;
    for (auto d : tensor.getShape()) shape.push_back(d);
    if (shape != slot.shape)
      throw fail("tensor " + slot.name + " has shape " + shape_text(shape) + " but the spec ("
                 + spec + ") needs " + shape_text(slot.shape));
    if (tensor.getValues().size() != slot.size * sizeof(float))
      throw fail("tensor " + slot.name + " has " + std::to_string(tensor.getValues().size())
                 + " bytes of values, its shape " + shape_text(slot.shape) + " needs "
                 + std::to_string(slot.size * sizeof(float)));
  }
  model.parameters.resize(slots.back().offset + slots.back().size);
  for (std::size_t t = 0; t < slots.size(); ++t) {
    auto values = tensors[static_cast<unsigned>(t)].getValues();
    float* dst = model.parameters.data() + slots[t].offset;
    std::memcpy(dst, values.begin(), values.size());
    if (!all_finite(dst, slots[t].size))
      throw fail("tensor " + slots[t].name + " holds a NaN or infinite value");
  }
  return model;
}

std::vector<tensor_slot> tensor_slots(const std::vector<int>& layers) {
  // Computed from the widths alone (not through block_layout, whose blocks a hostile file with
  // huge widths could make explode); tests pin the names and offsets to block_layout's.
  if (layers.size() < 2) throw std::invalid_argument("a model needs at least two layer widths");
  std::vector<tensor_slot> slots;
  std::size_t offset = 0;
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    const auto in = static_cast<std::size_t>(layers[l]);
    const auto out = static_cast<std::size_t>(layers[l + 1]);
    const auto prefix = "dense" + std::to_string(l);
    slots.push_back({prefix + "/kernel", {in, out}, offset, in * out});
    offset += in * out;
    slots.push_back({prefix + "/bias", {out}, offset, out});
    offset += out;
  }
  return slots;
}

std::string encode_exported_model(const exported_model& model) {
  const auto slots = tensor_slots(model.layers);
  const auto total = slots.back().offset + slots.back().size;
  if (model.parameters.size() != total)
    throw std::invalid_argument("encode_exported_model: " + std::to_string(model.parameters.size())
                                + " parameters, layers " + to_string(model.layers) + " need "
                                + std::to_string(total));
  capnp::MallocMessageBuilder builder(static_cast<unsigned>(total / 2 + 64 * slots.size() + 256));
  auto root = builder.initRoot<exported::ExportedModel>();
  root.setFormatVersion(mlp_format_version);
  auto layers = root.initLayers(static_cast<unsigned>(model.layers.size()));
  for (unsigned i = 0; i < model.layers.size(); ++i)
    layers.set(i, static_cast<uint32_t>(model.layers[i]));
  root.setHiddenActivation(exported::Activation::RELU);
  root.setOutputActivation(exported::Activation::SOFTMAX);
  root.setInputDivisor(model.input_divisor);
  auto tensors = root.initTensors(static_cast<unsigned>(slots.size()));
  for (unsigned t = 0; t < slots.size(); ++t) {
    auto tensor = tensors[t];
    tensor.setName(slots[t].name);
    auto shape = tensor.initShape(static_cast<unsigned>(slots[t].shape.size()));
    for (unsigned d = 0; d < slots[t].shape.size(); ++d)
      shape.set(d, static_cast<uint32_t>(slots[t].shape[d]));
    auto values = tensor.initValues(static_cast<unsigned>(slots[t].size * sizeof(float)));
    std::memcpy(values.begin(), model.parameters.data() + slots[t].offset, values.size());
  }
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

exported_model decode_exported_model(const std::string& bytes, const std::string& origin) {
  return as_mlp(decode_served_model(bytes, origin), origin);
}

exported_model read_exported_model(const std::string& path) {
  return as_mlp(read_served_model(path), path);
}

exported_model load_model_directory(const std::string& dir) {
  return as_mlp(load_served_model(dir), dir + "/" + model_capnp_name);
}

} // namespace actorps
