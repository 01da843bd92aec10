#include "export/prediction_input.hpp"

#include "export/file_bytes.hpp"
#include "kernels/optimizer.hpp"

#include <climits>
#include <cstring>

namespace actorps {

namespace {

bool looks_like_idx(const std::string& bytes) {
  const bool gzip = bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f
                    && static_cast<unsigned char>(bytes[1]) == 0x8b;
  const bool idx_ubyte = bytes.size() >= 3 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 8;
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
