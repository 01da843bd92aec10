#include "actors/chief/tf_event.hpp"

#include <cstring>

namespace actorps {

namespace {

// Protocol-buffer wire types.
constexpr uint32_t varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5;

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_key(std::string& out, uint32_t field, uint32_t wire_type) {
  put_varint(out, (uint64_t{field} << 3) | wire_type);
}

template <class T>
void put_fixed(std::string& out, uint32_t field, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  put_key(out, field, sizeof(T) == 8 ? fixed64 : fixed32);
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian on every host actorps builds for
  out.append(reinterpret_cast<const char*>(bytes), sizeof(T));
}

void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_key(out, field, length_delimited);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string event_head(double wall_time) {
  std::string event;
  put_fixed(event, 1, wall_time);
  return event;
}

} // namespace

std::string encode_file_version_event(double wall_time) {
  auto event = event_head(wall_time);
  put_bytes(event, 3, "brain.Event:2");
  return event;
}

std::string encode_scalars_event(double wall_time, int64_t step,
                                 const std::vector<tf_scalar>& values) {
  std::string summary;
  for (const auto& v : values) {
    std::string value;
    put_bytes(value, 1, v.tag);
    put_fixed(value, 2, v.value);
    put_bytes(summary, 1, value);
  }
  auto event = event_head(wall_time);
  put_key(event, 2, varint);
  put_varint(event, static_cast<uint64_t>(step));  // int64: a negative step takes 10 bytes
  put_bytes(event, 5, summary);
  return event;
}

} // namespace actorps
