// record_reader: a shared-memory record read front to back as a socket would be, across the
// pieces of a record built by reference, into places that cut the pieces anywhere.
#include "actors/link/record_reader.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <numeric>

using namespace actorps;

namespace {

/// A record of three pieces: a head of 2 words, then runs of 3 and 1 words of `source`.
wire_buffer three_pieces(const std::vector<capnp::word>& source) {
  auto parts = std::make_shared<wire_buffer::gathered>();
  parts->head = wire_buffer::allocate(2);
  parts->head_words = 2;
  std::memset(static_cast<void*>(parts->head.get()), 0xab, 2 * sizeof(capnp::word));
  parts->external.push_back(kj::arrayPtr(source.data(), 3));
  parts->external.push_back(kj::arrayPtr(source.data() + 3, 1));
  return wire_buffer{std::shared_ptr<const wire_buffer::gathered>(std::move(parts))};
}

} // namespace

TEST_CASE("record reader: places cut anywhere read the pieces' bytes in order, then no more") {
  std::vector<capnp::word> source(4);
  auto* bytes = reinterpret_cast<uint8_t*>(source.data());
  std::iota(bytes, bytes + 32, uint8_t(1));
  record_reader reader{three_pieces(source)};
  CHECK(reader.holds());
  CHECK(reader.size_bytes() == 48);
  uint8_t out[48] = {};
  // 5 + 20 bytes (the head and into the first run), then 23 (across the second run's start).
  iovec first[2] = {{out, 5}, {out + 5, 20}};
  REQUIRE(reader.read(first, 2));
  iovec second{out + 25, 23};
  REQUIRE(reader.read(&second, 1));
  for (int i = 0; i < 16; ++i) CHECK(out[i] == 0xab);
  for (int i = 0; i < 32; ++i) CHECK(out[16 + i] == bytes[i]);
  uint8_t more = 0;
  iovec past{&more, 1};
  CHECK_FALSE(reader.read(&past, 1));  // the record is read whole: a longer frame is malformed
  reader.release();
  CHECK_FALSE(reader.holds());
}

TEST_CASE("record reader: a read longer than the record fails, an empty record is still held") {
  std::vector<capnp::word> source(4);
  record_reader reader{three_pieces(source)};
  std::vector<uint8_t> out(49);
  iovec all{out.data(), out.size()};
  CHECK_FALSE(reader.read(&all, 1));
  record_reader empty{wire_buffer{}};
  CHECK(empty.holds());  // reading from it, not from the socket: its first read fails
  uint8_t one = 0;
  iovec v{&one, 1};
  CHECK_FALSE(empty.read(&v, 1));
}
