// A push_pull's payload read while it arrives (actors/protocol/arriving_push.hpp), as a shard and
// a TLS link read one after its first part: the first byte picks how many of its bytes are in,
// in words (selector × size / 255, rounded down to a word); the rest is the payload. What is
// read must not depend on the bytes that have not arrived: the payload is read twice, the bytes
// past those in zero in one copy and 0xff in the other, and the two reads must agree (Cap'n
// Proto's pointer walks are in its library, which AddressSanitizer does not see into); in the
// first copy those bytes are also poisoned, so a read of one by our own code is a finding at
// once. A push read so must point every block into the payload and end each where its values
// do, and, once the payload is whole, be told apart from or found the same as its whole decode
// (check_read_early) without failing.
#include "actors/protocol/arriving_push.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace actorps {
namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "arriving_push_fuzz: %s\n", what);
  std::abort();
}

void check(const arriving_push& got, const wire_buffer& buf) {
  const auto* begin = buf.bytes();
  const auto size = buf.size_bytes();
  if (got.ends.size() != got.push.blocks.size()) broken("a block without its end");
  for (std::size_t i = 0; i < got.ends.size(); ++i) {
    const auto& b = got.push.blocks[i];
    const auto* at = reinterpret_cast<const uint8_t*>(b.values);
    if (at < begin || at > begin + size) broken("a block's values outside the payload");
    const auto from = static_cast<std::size_t>(at - begin);
    if (got.ends[i] != from + b.count * sizeof(float) || got.ends[i] > size)
      broken("a block's end is not where its values end in the payload");
  }
}

/// Whether two reads of the same first bytes agree: both none, or the same fields and blocks at
/// the same offsets of their buffers.
bool same(const std::optional<arriving_push>& a, const wire_buffer& in_a,
          const std::optional<arriving_push>& b, const wire_buffer& in_b) {
  if (!a || !b) return !a && !b;
  const auto& x = a->push;
  const auto& y = b->push;
  if (x.worker != y.worker || x.clock != y.clock || x.shard != y.shard
      || x.incarnation != y.incarnation || x.sparse.size() != y.sparse.size()
      || x.pull_keys.size() != y.pull_keys.size() || x.blocks.size() != y.blocks.size()
      || a->ends != b->ends)
    return false;
  for (std::size_t i = 0; i < x.blocks.size(); ++i) {
    auto at_a = reinterpret_cast<const uint8_t*>(x.blocks[i].values) - in_a.bytes();
    auto at_b = reinterpret_cast<const uint8_t*>(y.blocks[i].values) - in_b.bytes();
    if (x.blocks[i].id != y.blocks[i].id || x.blocks[i].count != y.blocks[i].count || at_a != at_b)
      return false;
  }
  return true;
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  fuzz::selected in;
  if (!fuzz::select(data, size, 256, in)) return 0;
  auto buf = wire_buffer::from_bytes(in.data, in.size);
  constexpr std::size_t word = sizeof(capnp::word);
  const std::size_t arrived = buf.size_bytes() * in.choice / 255 / word * word;
  const std::size_t late_bytes = buf.size_bytes() - arrived;
  auto other = wire_buffer::from_bytes(in.data, in.size);
  std::memset(const_cast<uint8_t*>(other.bytes()) + arrived, 0xff, late_bytes);
  auto* late = const_cast<uint8_t*>(buf.bytes()) + arrived;
  std::memset(late, 0, late_bytes);
  ASAN_POISON_MEMORY_REGION(late, late_bytes);
  if (arrived_structure(buf, arrived) > arrived) broken("a structure past what arrived");
  auto got = read_arriving_push(buf, arrived);
  ASAN_UNPOISON_MEMORY_REGION(late, late_bytes);
  auto again = read_arriving_push(other, arrived);
  if (!same(got, buf, again, other)) broken("what is read depends on bytes not yet in");
  if (got) {
    check(*got, buf);
    std::memcpy(late, in.data + arrived, std::min(late_bytes, in.size - std::min(arrived, in.size)));
    (void)check_read_early(got->push, buf);
  }
  return 0;
}
