#include "actors/chief/tfrecord.hpp"

#include <boost/crc.hpp>

namespace actorps {

namespace {

void append_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

} // namespace

uint32_t crc32c(std::string_view data) {
  // Boost.CRC's table-driven CRC with the Castagnoli polynomial, reflected in and out.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void append_tfrecord(std::string& out, std::string_view data) {
  const auto start = out.size();
  append_le(out, data.size(), 8);
  const uint32_t length_crc = masked_crc32c(std::string_view(out).substr(start, 8));
  append_le(out, length_crc, 4);
  out.append(data);
  append_le(out, masked_crc32c(data), 4);
}

} // namespace actorps
