// link_connection over a stream that moves a few bytes per call and blocks in between, as a
// non-blocking socket may: frames come out whole, replies go out byte for byte in order, the
// frame limit stops a payload before it is allocated.
#include "actors/link/link_connection.hpp"

#include <caf/sec.hpp>
#include <doctest/doctest.h>

#include <cstring>
#include <string>

using namespace actorps;

namespace {

/// Reads from `in` and writes to `out` at most `step` bytes per call, and every other call
/// would block.
class trickling_stream final : public byte_stream {
public:
  trickling_stream(std::string& in, std::string& out, std::size_t step)
    : in_(in), out_(out), step_(step) {}

  result read(void* data, std::size_t n) override {
    if ((blocked_ = !blocked_)) return {outcome::would_block, 0, 0, false};
    if (in_.empty()) return {outcome::closed, 0, 0, false};
    auto k = std::min({n, step_, in_.size()});
    std::memcpy(data, in_.data(), k);
    in_.erase(0, k);
    return {outcome::progress, k, 0, false};
  }

  result write(const iovec* parts, int count) override {
    if ((blocked_ = !blocked_)) return {outcome::would_block, 0, 0, true};
    std::size_t k = 0;
    for (int i = 0; i < count && k < step_; ++i) {
      auto take = std::min(parts[i].iov_len, step_ - k);
      out_.append(static_cast<const char*>(parts[i].iov_base), take);
      k += take;
    }
    return {outcome::progress, k, 0, false};
  }

  int fd() const override { return -1; }

private:
  std::string& in_;
  std::string& out_;
  std::size_t step_;
  bool blocked_ = false;
};

std::string bytes_of(const frame_header& h) {
  return std::string(reinterpret_cast<const char*>(&h), sizeof h);
}

} // namespace

TEST_CASE("link_connection reads frames and writes replies a few bytes at a time") {
  std::string in, out;
  std::string payload(64, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = char(i * 7);
  in = bytes_of(make_header(frame_kind::hello, 0, 0, 5000))
       + bytes_of(make_header(frame_kind::push_pull, 9, 0, 0, payload.size())) + payload
       + bytes_of(make_header(frame_kind::pull, 10, 1, 2));
  link_connection conn{std::make_unique<trickling_stream>(in, out, 7), "test"};
  std::vector<std::pair<frame_header, wire_buffer>> frames;
  for (int calls = 0; calls < 1000; ++calls) {
    frame_header h;
    wire_buffer p;
    std::string why;
    auto st = conn.read_frame(1024, h, p, why);
    if (st == link_connection::read_status::frame) frames.emplace_back(h, p);
    if (st == link_connection::read_status::closed) break;
    REQUIRE((st == link_connection::read_status::frame || st == link_connection::read_status::blocked));
  }
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].first.kind == uint16_t(frame_kind::hello));
  CHECK(frames[0].first.b == 5000);
  CHECK(frames[1].first.id == 9);
  REQUIRE(frames[1].second.size_bytes() == payload.size());
  CHECK(std::memcmp(frames[1].second.bytes(), payload.data(), payload.size()) == 0);
  CHECK(frames[2].first.a == 1);
  CHECK(frames[2].first.b == 2);

  // Two replies and a failure, written 7 bytes per call: the same bytes as written whole.
  auto reply = wire_buffer::from_bytes(payload.data(), payload.size());
  conn.queue(frame_kind::reply, 9, reply);
  conn.queue_failure(10, caf::make_error(caf::sec::request_timeout, "too slow"));
  conn.queue(frame_kind::reply, 11, wire_buffer{});
  auto expected = bytes_of(make_header(frame_kind::reply, 9, 0, 0, payload.size())) + payload;
  auto err = caf::make_error(caf::sec::request_timeout);
  expected += bytes_of(make_header(frame_kind::failure, 10, err.code(),
                                   int64_t(uint64_t(err.category())), 8)) + "too slow";
  expected += bytes_of(make_header(frame_kind::reply, 11));
  CHECK(conn.unsent_bytes() == expected.size());
  CHECK(conn.wants_write());
  int calls = 0;
  while (conn.flush() != link_connection::write_status::done && ++calls < 1000) {}
  CHECK(out == expected);
  CHECK(conn.unsent_bytes() == 0);
  CHECK(conn.unsent_frames() == 0);
  CHECK_FALSE(conn.wants_write());
}

TEST_CASE("link_connection stops at a frame over the limit, then reads it once the limit allows") {
  std::string in, out;
  in = bytes_of(make_header(frame_kind::push_pull, 1, 0, 0, 4096)) + std::string(4096, 'x');
  link_connection conn{std::make_unique<trickling_stream>(in, out, 1000), "test"};
  frame_header h;
  wire_buffer p;
  std::string why;
  auto st = conn.read_frame(1024, h, p, why);
  while (st == link_connection::read_status::blocked) st = conn.read_frame(1024, h, p, why);
  REQUIRE(st == link_connection::read_status::too_large);
  CHECK(h.size == 4096);
  CHECK(in.size() == 4096);  // nothing of the payload was read
  do {
    st = conn.read_frame(8192, h, p, why);
  } while (st == link_connection::read_status::blocked);
  REQUIRE(st == link_connection::read_status::frame);
  CHECK(p.size_bytes() == 4096);
  CHECK(p.bytes()[4095] == 'x');
}

TEST_CASE("link_connection refuses a header that is no actorps frame") {
  std::string in(40, '\xff'), out;
  link_connection conn{std::make_unique<trickling_stream>(in, out, 64), "test"};
  frame_header h;
  wire_buffer p;
  std::string why;
  auto st = conn.read_frame(1024, h, p, why);
  while (st == link_connection::read_status::blocked) st = conn.read_frame(1024, h, p, why);
  CHECK(st == link_connection::read_status::bad_header);
  CHECK(why == "not an actorps data frame (bad magic)");
}
