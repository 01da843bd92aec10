// model.capnp format 3 (actors/serving/program_model.hpp): a model's tensors and rows only,
// read back exactly, damaged files refused naming what is wrong, and refused by the serving
// reader (predict, evaluate) with the reason.
#include "actors/serving/exported_model.hpp"
#include "actors/serving/program_model.hpp"
#include "actors/serving/served_model.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

namespace actorps {
namespace {

program_model two_tensors_one_table() {
  program_model m;
  m.name = "torch";
  m.tensors.push_back({"out.weight", {1, 3}, {0.5f, -1.25f, 2.0f}});
  m.tensors.push_back({"out.bias", {1}, {0.125f}});
  m.tables.push_back({"ids", 2, {3, 9, uint64_t(1) << 63}, {1, 2, 3, 4, 5, 6}});
  return m;
}

/// The offset of `needle`'s bytes in `bytes` (they occur once in these small messages).
std::size_t offset_of(const std::string& bytes, const void* needle, std::size_t size) {
  const auto at = bytes.find(std::string(static_cast<const char*>(needle), size));
  REQUIRE(at != std::string::npos);
  return at;
}

} // namespace

TEST_CASE("program model: tensors and rows read back exactly, damage refused by name") {
  const auto m = two_tensors_one_table();
  const auto bytes = encode_program_model(m);
  const auto back = decode_program_model(bytes, "m.capnp");
  CHECK(back.name == "torch");
  REQUIRE(back.tensors.size() == 2);
  CHECK(back.tensors[0].name == "out.weight");
  CHECK(back.tensors[0].shape == std::vector<uint32_t>{1, 3});
  CHECK(back.tensors[0].values == m.tensors[0].values);
  CHECK(back.tensors[1].values == m.tensors[1].values);
  REQUIRE(back.tables.size() == 1);
  CHECK(back.tables[0].keys == m.tables[0].keys);
  CHECK(back.tables[0].values == m.tables[0].values);
  CHECK(encode_program_model(back) == bytes);

  // keys out of order: the 9 overwritten with 2 (below the 3 before it)
  auto swapped = bytes;
  const uint64_t nine = 9, two = 2;
  std::memcpy(&swapped[offset_of(bytes, &nine, 8)], &two, 8);
  CHECK_THROWS_WITH_AS(decode_program_model(swapped, "m.capnp"),
                       "m.capnp: table 'ids': keys not strictly ascending at row 1",
                       model_file_error);
  // a NaN in a tensor
  auto poisoned = bytes;
  const float bias = 0.125f, nan = std::nanf("");
  std::memcpy(&poisoned[offset_of(bytes, &bias, 4)], &nan, 4);
  CHECK_THROWS_WITH_AS(decode_program_model(poisoned, "m.capnp"),
                       "m.capnp: tensor 'out.bias' holds a NaN or infinite value",
                       model_file_error);
  // truncated
  CHECK_THROWS_AS(decode_program_model(bytes.substr(0, bytes.size() - 8), "m.capnp"),
                  model_file_error);
  // the serving reader says what the file is and who serves it
  try {
    decode_served_model(bytes, "m.capnp");
    FAIL("a format 3 model was served");
  } catch (const model_file_error& e) {
    CHECK(std::string(e.what()) ==
          "m.capnp: torch is exported as its tensors and rows only (format 3): actorps serves "
          "MLPs, lr, dlrm, wdl and deepfm; the program that trained it serves this one "
          "(actorps.torch.load_export)");
  }
}

} // namespace actorps
