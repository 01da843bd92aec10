// TFRecord framing, the container of TensorBoard's event files: each record is its length
// (uint64, little-endian), the masked CRC-32C of those 8 bytes, the data, and the masked
// CRC-32C of the data. Readers check both checksums and stop at the first record that fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace actorps {

/// CRC-32C (Castagnoli, reflected, as iSCSI and ext4 use it) of `data`.
uint32_t crc32c(std::string_view data);

/// The CRC as TFRecord stores it, rotated and offset, so that a checksum of bytes holding
/// checksums is not trivially zero: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::string_view data);

/// Appends one record holding `data` to `out`.
void append_tfrecord(std::string& out, std::string_view data);

} // namespace actorps
