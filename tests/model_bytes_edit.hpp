// Damaging an ExportedModel message on purpose: the tests of how readers refuse bad models.
#pragma once

#include "schema/model_export.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <string>

namespace actorps::test {

/// `good` (an ExportedModel message in flat-array form) after `edit` of its root builder,
/// re-serialised.
template <class Edit>
std::string edited_model(const std::string& good, Edit&& edit) {
  auto words = kj::heapArray<capnp::word>(good.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), good.data(), good.size());
  capnp::FlatArrayMessageReader reader(words);
  capnp::MallocMessageBuilder builder;
  builder.setRoot(reader.getRoot<exported::ExportedModel>());
  edit(builder.getRoot<exported::ExportedModel>());
  const auto out = capnp::messageToFlatArray(builder);
  const auto bytes = out.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

} // namespace actorps::test
