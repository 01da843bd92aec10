#include "actors/serving/prediction_input.hpp"

#include "actors/serving/file_bytes.hpp"
#include "kernels/optimizer.hpp"

#include <climits>
#include <cstring>

namespace actorps {

namespace {

/// Whether the file starts with an IDX header of uint8 data (00 00 08, then 1-4 dimensions) or
/// a gzip header (1f 8b, deflate, no reserved flag bits). Read as raw little-endian float32,
/// either would be a first value below 1e-19 in magnitude, which no scaled input holds.
bool looks_like_idx(const std::string& bytes) {
  if (bytes.size() < 4) return false;
  const auto b = [&](int i) { return static_cast<unsigned char>(bytes[i]); };
  const bool gzip = b(0) == 0x1f && b(1) == 0x8b && b(2) == 8 && (b(3) & 0xe0) == 0;
  const bool idx_ubyte = b(0) == 0 && b(1) == 0 && b(2) == 8 && b(3) >= 1 && b(3) <= 4;
  return gzip || idx_ubyte;
}

dataset read_idx(const std::string& path, int cols, float input_divisor) {
  dataset d;
  try {
    d = load_idx_images(path);
  } catch (const dataset_error& e) {
    throw input_error(e.what());
  }
  if (d.cols != cols)
    throw input_error(path + ": holds images of " + std::to_string(d.cols)
                      + " pixels but the model takes " + std::to_string(cols) + " inputs");
  if (input_divisor != pixel_divisor)  // load_idx_images divided by pixel_divisor already
    for (auto& v : d.x) v = v * pixel_divisor / input_divisor;
  return d;
}

dataset read_raw(const std::string& path, const std::string& bytes, int cols) {
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  if (bytes.empty()) throw input_error(path + ": empty file, no images");
  if (bytes.size() % row_bytes != 0)
    throw input_error(path + ": " + std::to_string(bytes.size()) + " bytes is not a whole number "
                      "of rows of " + std::to_string(cols) + " float32 values ("
                      + std::to_string(row_bytes) + " bytes each)");
  if (bytes.size() / row_bytes > static_cast<std::size_t>(INT_MAX))
    throw input_error(path + ": too many rows");
  dataset d;
  d.rows = static_cast<int>(bytes.size() / row_bytes);
  d.cols = cols;
  d.x.resize(bytes.size() / sizeof(float));
  std::memcpy(d.x.data(), bytes.data(), bytes.size());  // little-endian float32, host order
  if (!all_finite(d.x.data(), d.x.size()))
    throw input_error(path + ": holds a NaN or infinite value (raw float32 input must be finite)");
  return d;
}

} // namespace

std::optional<input_format> parse_input_format(const std::string& text) {
  if (text == "auto") return input_format::automatic;
  if (text == "idx") return input_format::idx;
  if (text == "raw") return input_format::raw;
  return std::nullopt;
}

dataset read_prediction_input(const std::string& path, int cols, float input_divisor,
                              input_format format) {
  std::string bytes;
  try {
    bytes = read_file_bytes(path);
  } catch (const file_read_error& e) {
    throw input_error(e.what());
  }
  if (format == input_format::idx || (format == input_format::automatic && looks_like_idx(bytes)))
    return read_idx(path, cols, input_divisor);
  return read_raw(path, bytes, cols);
}

} // namespace actorps
