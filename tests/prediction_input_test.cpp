// The input of `actorps predict`: IDX images scaled as the model was trained, raw float32 as it
// is, and which of the two a file is.
#include "actors/serving/prediction_input.hpp"

#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace actorps {
namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Two 28×28 IDX images whose pixel i is i % 256.
std::string two_idx_images() {
  std::string bytes("\0\0\x08\x03\0\0\0\x02\0\0\0\x1c\0\0\0\x1c", 16);
  for (int i = 0; i < 2 * 784; ++i) bytes.push_back(static_cast<char>(i % 256));
  return bytes;
}

} // namespace

TEST_CASE("prediction input: IDX pixels are divided by the model's input divisor") {
  test::scratch_dir scratch;
  const std::string path = scratch.path + "/two.idx";
  write_bytes(path, two_idx_images());
  for (auto format : {input_format::automatic, input_format::idx}) {
    const auto d = read_prediction_input(path, 784, 255.0f, format);
    CHECK(d.rows == 2);
    CHECK(d.cols == 784);
    CHECK(d.x[200] == 200 / 255.0f);
  }
  const auto unscaled = read_prediction_input(path, 784, 1.0f, input_format::automatic);
  CHECK(unscaled.x[200] == doctest::Approx(200.0f).epsilon(1e-6));
  const std::string too_wide = path + ": holds images of 784 pixels but the model takes 100 inputs";
  CHECK_THROWS_WITH_AS(read_prediction_input(path, 100, 255.0f, input_format::automatic),
                       too_wide.c_str(), input_error);
}

TEST_CASE("prediction input: raw float32 rows as they are, even when they start like IDX") {
  test::scratch_dir scratch;
  const std::string path = scratch.path + "/rows.f32";
  std::vector<float> values(2 * 5);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.1f * static_cast<float>(i);
  values[0] = 0.53125f;  // bytes 00 00 08 3f: an IDX-like start, but no IDX header
  write_bytes(path, std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  const auto d = read_prediction_input(path, 5, 255.0f, input_format::automatic);
  CHECK(d.rows == 2);
  CHECK(d.x == values);
  CHECK_THROWS_AS(read_prediction_input(path, 5, 255.0f, input_format::idx), input_error);
  CHECK_THROWS_WITH_AS(read_prediction_input(path, 3, 255.0f, input_format::raw),
                       (path + ": 40 bytes is not a whole number of rows of 3 float32 values "
                               "(12 bytes each)").c_str(),
                       input_error);
}

} // namespace actorps
