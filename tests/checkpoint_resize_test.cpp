// A checkpoint's shard states cut for another shard count: every dense block with its optimizer
// slots and every sparse row (values, state, touches, Adam steps, clocks) and pending count lands
// on the shard the new placement names, nothing lost or doubled; an admission sketch becomes the
// counters' maximum over the old shards that held the new shard's buckets.
#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/placement_change.hpp"
#include "actors/storage/checkpoint_resize.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/sparse/row_optimizer.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <stdexcept>

using namespace actorps;

namespace {

constexpr uint32_t dim = 2;

/// A 2-shard spec: a small MLP cut into blocks of 4 floats, Adam (dense and rows, so both carry
/// state and steps), one table of rows of 2 floats counted in a sketch.
train_spec two_shard_spec() {
  train_spec spec;
  spec.model.name = "test";
  spec.model.tensors = {{"w", {4, 3}, tensor_init::zeros, 0}, {"b", {3}, tensor_init::zeros, 0}};
  spec.block_floats = 4;
  spec.shards = 2;
  spec.workers = 2;
  spec.mode = consistency::sync;
  spec.optimizer.kind = optimizer_kind::adam;
  sparse_table_spec table;
  table.name = "emb";
  table.config.dim = dim;
  table.config.optimizer.kind = row_optimizer_kind::adam;
  table.config.admit_after = 3;
  table.config.admission_memory = 1024;
  spec.model.sparse_tables.push_back(table);
  place_buckets(spec);
  return spec;
}

/// What a key's row holds, as written: recognisable from the key alone.
struct row_record {
  std::vector<float> values, state;
  uint32_t touches = 0, step = 0, clock = 0;
};

row_record record_of(uint64_t key) {
  const auto slots = row_state_slots(row_optimizer_kind::adam);
  row_record r;
  for (uint32_t i = 0; i < dim; ++i) r.values.push_back(float(key) + 0.25f * float(i));
  for (uint32_t i = 0; i < slots * dim; ++i) r.state.push_back(-float(key) - float(i));
  r.touches = uint32_t(key % 7 + 1);
  r.step = uint32_t(key % 5 + 1);
  r.clock = uint32_t(key % 11);
  return r;
}

/// Shard `s`'s file of a 2-shard checkpoint at clock 10: keys 1..300 with rows where the key is
/// even, pending (count key % 2 + 1) where odd; dense values 100 × shard + the float's place.
/// `descending`: its rows and pending keys written in falling key order (no shard writes them so).
wire_buffer old_shard(const train_spec& spec, int s, uint8_t sketch_fill, bool descending = false) {
  block_layout layout(spec);
  const auto slots = optimizer_state_slots(spec.optimizer.kind);
  std::vector<float> params(layout.shard_floats(s)), state(slots * params.size());
  for (auto id : layout.shard_blocks(s)) {
    const auto& b = layout.blocks()[id];
    for (uint32_t i = 0; i < b.size; ++i) {
      params[b.shard_offset + i] = float(b.offset + i);
      for (std::size_t k = 0; k < slots; ++k)
        state[slots * b.shard_offset + k * b.size + i] = float(b.offset + i) + 0.5f + float(k);
    }
  }
  sparse_table_rows rows;
  for (uint64_t k = 1; k <= 300; ++k) {
    const uint64_t key = descending ? 301 - k : k;
    if (spec.shard_of_key(key) != s) continue;
    if (key % 2 == 0) {
      auto r = record_of(key);
      rows.keys.push_back(key);
      rows.values.insert(rows.values.end(), r.values.begin(), r.values.end());
      rows.state.insert(rows.state.end(), r.state.begin(), r.state.end());
      rows.touches.push_back(r.touches);
      rows.steps.push_back(r.step);
      rows.clocks.push_back(r.clock);
    } else {
      rows.pending_keys.push_back(key);
      rows.pending_counts.push_back(uint32_t(key % 2 + 1));
    }
  }
  rows.sketch.depth = 4;
  rows.sketch.decay_at = uint64_t(s) + 5;
  rows.sketch.counters.assign(4 * 64, 0);
  for (std::size_t i = 0; i < rows.sketch.counters.size(); ++i)
    rows.sketch.counters[i] = uint8_t((i * (s + 1) + sketch_fill) % 9);
  return encode_shard_checkpoint(spec, s, 10, 40 + uint64_t(s), 9, layout, params.data(),
                                 state.data(), slots, {rows});
}

} // namespace

TEST_CASE("a checkpoint of 2 shards cut for 1, 3 and 5: every block, row and count on its owner") {
  const auto before = two_shard_spec();
  std::vector<wire_buffer> saved{old_shard(before, 0, 1), old_shard(before, 1, 4)};
  std::vector<shard_checkpoint_view> old;
  for (const auto& f : saved) old.push_back(*decode_shard_checkpoint(f));
  for (int shards : {1, 3, 5}) {
    CAPTURE(shards);
    auto spec = before;
    spec.shards = shards;
    spec.bucket_shards = resumed_placement(before, shards);
    CHECK(moved_count(before.bucket_shards, spec.bucket_shards)
          == (shards == 1 ? 2048u : shards == 3 ? 1365u : 4096u - 820u - 819u));
    REQUIRE(needs_resize(before, spec));
    auto files = resize_shard_files(saved, spec);
    REQUIRE(files.size() == std::size_t(shards));
    block_layout layout(spec);
    const auto slots = optimizer_state_slots(spec.optimizer.kind);
    std::map<uint64_t, int> rows_at, pending_at;
    std::size_t floats = 0;
    for (int s = 0; s < shards; ++s) {
      auto view = decode_shard_checkpoint(files[std::size_t(s)]);
      REQUIRE(view);
      CHECK(view->shard == s);
      CHECK(view->clock == 10);
      CHECK(view->optimizer_step == 41);  // the largest of the old shards'
      CHECK(view->newest_clock == 9);
      CHECK(view->spec.shards == shards);
      CHECK(view->spec.bucket_shards == spec.bucket_shards);
      // dense: the blocks block_layout gives this shard, each value and slot where it was
      const auto& ids = layout.shard_blocks(s);
      REQUIRE(view->blocks.size() == ids.size());
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto& b = layout.blocks()[ids[i]];
        REQUIRE(view->blocks[i].id == b.id);
        REQUIRE(view->state[i].count == slots * b.size);
        for (uint32_t k = 0; k < b.size; ++k) {
          CHECK(view->blocks[i].values[k] == float(b.offset + k));
          CHECK(view->state[i].values[k] == float(b.offset + k) + 0.5f);
        }
        floats += b.size;
      }
      // sparse: each row whole, on the shard owning its key, in key order
      const auto& t = view->sparse.at(0);
      CHECK(std::is_sorted(t.keys.begin(), t.keys.end()));
      for (std::size_t i = 0; i < t.keys.size(); ++i) {
        const auto key = t.keys[i];
        CHECK(spec.shard_of_key(key) == s);
        CHECK(rows_at.emplace(key, s).second);
        auto r = record_of(key);
        CHECK(std::vector<float>(t.values.begin() + long(i * dim),
                                 t.values.begin() + long((i + 1) * dim)) == r.values);
        CHECK(std::vector<float>(t.state.begin() + long(i * r.state.size()),
                                 t.state.begin() + long((i + 1) * r.state.size())) == r.state);
        CHECK(t.touches[i] == r.touches);
        CHECK(t.steps[i] == r.step);
        CHECK(t.clocks[i] == r.clock);
      }
      for (std::size_t i = 0; i < t.pending_keys.size(); ++i) {
        CHECK(spec.shard_of_key(t.pending_keys[i]) == s);
        CHECK(t.pending_counts[i] == t.pending_keys[i] % 2 + 1);
        CHECK(pending_at.emplace(t.pending_keys[i], s).second);
      }
      // the sketch: the maximum over the old shards that held a bucket now here
      bool from[2] = {false, false};
      for (std::size_t b = 0; b < spec.bucket_shards.size(); ++b)
        if (spec.bucket_shards[b] == s) from[before.bucket_shards[b]] = true;
      REQUIRE(t.sketch.counters.size() == old[0].sparse[0].sketch.counters.size());
      for (std::size_t i = 0; i < t.sketch.counters.size(); ++i) {
        uint8_t want = 0;
        for (int o = 0; o < 2; ++o)
          if (from[o]) want = std::max(want, old[std::size_t(o)].sparse[0].sketch.counters[i]);
        CHECK(t.sketch.counters[i] == want);
      }
    }
    CHECK(floats == layout.total_floats());
    CHECK(rows_at.size() == 150);     // the even keys of 1..300, each once
    CHECK(pending_at.size() == 150);  // the odd ones
  }
}

TEST_CASE("a cut in two steps: files cut in any order, rows in key order, the bytes that move") {
  const auto before = two_shard_spec();
  auto spec = before;
  spec.shards = 3;
  spec.bucket_shards = resumed_placement(before, 3);
  const std::vector<wire_buffer> sorted{old_shard(before, 0, 1), old_shard(before, 1, 4)};
  const auto whole = resize_shard_files(sorted, spec);
  // every new shard's file of `cut`, cut in the order given, is resize_shard_files' own
  auto cuts_the_same = [&](const shard_cut& cut, std::initializer_list<int> order) {
    for (int s : order) {
      CAPTURE(s);
      const auto file = cut.cut_for(s);
      const auto& want = whole[std::size_t(s)];
      REQUIRE(file.size_bytes() == want.size_bytes());
      CHECK(std::equal(file.bytes(), file.bytes() + file.size_bytes(), want.bytes()));
    }
  };
  // out of key order in the old files: sorted rather than merged, the same files
  const shard_cut cut({old_shard(before, 0, 1, true), old_shard(before, 1, 4, true)}, spec);
  cuts_the_same(cut, {2, 0, 1});
  // by hand: each moving block's values and slots; each moving row's key, 2 values, 4 Adam
  // slots (2 × 2 floats) and 3 counters; each moving pending key and its count
  const block_layout from(before), to(spec);
  const auto slots = optimizer_state_slots(spec.optimizer.kind);
  uint64_t bytes = 0;
  for (const auto& b : to.blocks())
    if (b.shard != from.blocks()[b.id].shard) bytes += sizeof(float) * (1 + slots) * b.size;
  for (uint64_t key = 1; key <= 300; ++key)
    if (spec.shard_of_key(key) != before.shard_of_key(key))
      bytes += key % 2 == 0 ? 8 + 4 * (dim + 2 * dim) + 12 : 8 + 4;
  CHECK(cut.moving_bytes() == bytes);
  CHECK(bytes > 0);
  CHECK_THROWS_AS(cut.cut_for(3), std::invalid_argument);
  // the files decoded elsewhere first (a live resize reads each on a core of its own)
  std::vector<shard_checkpoint_view> decoded;
  for (const auto& f : sorted) decoded.push_back(*decode_shard_checkpoint(f));
  const shard_cut read_before(sorted, decoded, spec);
  cuts_the_same(read_before, {0, 1, 2});
  CHECK(read_before.moving_bytes() == bytes);
  decoded.pop_back();
  CHECK_THROWS_WITH_AS(shard_cut(sorted, decoded, spec),
                       doctest::Contains("1 decoded files for 2 shard files"),
                       std::invalid_argument);
}

TEST_CASE("a live resize's part: only the dense blocks a shard gains, checked against both layouts") {
  const auto before = two_shard_spec();
  const std::vector<wire_buffer> saved{old_shard(before, 0, 1), old_shard(before, 1, 4)};
  const block_layout from(before);
  for (int shards : {1, 3}) {
    CAPTURE(shards);
    const auto spec = resized_spec(before, shards);
    const block_layout to(spec);
    const shard_cut cut(saved, spec);
    for (int s = 0; s < shards; ++s) {
      CAPTURE(s);
      const auto part_file = cut.part_for(s), whole_file = cut.cut_for(s);
      const auto part = decode_shard_checkpoint(part_file);
      const auto whole = decode_shard_checkpoint(whole_file);
      REQUIRE(part);
      REQUIRE(whole);
      // the blocks the new layout gives s that another old shard held, in its order, each with
      // the whole cut's values and slots; a shard the resize adds gets every one
      std::vector<uint32_t> gained, ids;
      for (auto id : to.shard_blocks(s))
        if (from.blocks()[id].shard != s) gained.push_back(id);
      for (const auto& b : part->blocks) ids.push_back(b.id);
      CHECK(ids == gained);
      if (s >= 2) CHECK(ids.size() == whole->blocks.size());
      for (std::size_t i = 0; i < part->blocks.size(); ++i) {
        const auto& w = to.shard_blocks(s);
        const auto at = std::size_t(std::find(w.begin(), w.end(), part->blocks[i].id) - w.begin());
        REQUIRE(at < whole->blocks.size());
        CHECK(std::equal(part->blocks[i].values, part->blocks[i].values + part->blocks[i].count,
                         whole->blocks[at].values));
        CHECK(std::equal(part->state[i].values, part->state[i].values + part->state[i].count,
                         whole->state[at].values));
      }
      REQUIRE(part->sparse.size() == 1);
      CHECK(part->sparse[0].keys == whole->sparse[0].keys);  // the tables as cut_for's
      CHECK(part->sparse[0].pending_keys == whole->sparse[0].pending_keys);
      CHECK_FALSE(check_shard_checkpoint(*part, to, s, 1e6f, &from));
    }
  }
  // 2 -> 1: shard 0 gains shard 1's blocks; what does not fit is refused, naming why
  const auto spec = resized_spec(before, 1);
  const block_layout to(spec);
  const shard_cut cut(saved, spec);
  const auto part_file = cut.part_for(0), whole_file = cut.cut_for(0);
  const auto part = *decode_shard_checkpoint(part_file);
  REQUIRE(!part.blocks.empty());
  CHECK(part.blocks.size() == from.shard_blocks(1).size());
  auto missing = part;
  missing.blocks.pop_back();
  missing.state.pop_back();
  CHECK(check_shard_checkpoint(missing, to, 0, 1e6f, &from)
        == make_error(errc::missing_block));
  // every block again, its own too: more blocks than it gains
  CHECK(check_shard_checkpoint(*decode_shard_checkpoint(whole_file), to, 0, 1e6f, &from)
        == make_error(errc::missing_block));
  // a part whose first gained block is replaced by one it keeps
  auto kept_block = part;
  for (auto id : to.shard_blocks(0))
    if (from.blocks()[id].shard == 0) {
      kept_block.blocks[0].id = id;
      break;
    }
  CHECK(check_shard_checkpoint(kept_block, to, 0, 1e6f, &from)
        == make_error(errc::wrong_element_count));
  auto short_block = part;
  short_block.blocks[0].count -= 1;
  CHECK(check_shard_checkpoint(short_block, to, 0, 1e6f, &from)
        == make_error(errc::wrong_element_count));
  CHECK(check_shard_checkpoint(part, to, 1, 1e6f, &from) == make_error(errc::wrong_shard));
  // its values are the floats' places: beyond a bound of 0.5 most of them
  CHECK(check_shard_checkpoint(part, to, 0, 0.5f, &from)
        == make_error(errc::value_out_of_bounds));
}

TEST_CASE("a live resize's hand-overs hold only the blocks that leave: the same parts, and refusals") {
  const auto before = two_shard_spec();
  const std::vector<wire_buffer> saved{old_shard(before, 0, 1), old_shard(before, 1, 4)};
  const block_layout from(before);
  // old shard o's hand-over: only the blocks the new layout gives another shard
  auto leaving = [&](int o, const block_layout& to, int64_t drop_id = -1) {
    auto view = *decode_shard_checkpoint(saved[std::size_t(o)]);
    shard_checkpoint_view out = view;
    out.blocks.clear();
    out.state.clear();
    for (std::size_t i = 0; i < view.blocks.size(); ++i) {
      const auto id = view.blocks[i].id;
      if (to.blocks()[id].shard == o || int64_t(id) == drop_id) continue;
      out.blocks.push_back(view.blocks[i]);
      out.state.push_back(view.state[i]);
    }
    return encode_shard_checkpoint(before, out);
  };
  auto decoded = [](const std::vector<wire_buffer>& files) {
    std::vector<shard_checkpoint_view> out;
    for (const auto& f : files) out.push_back(*decode_shard_checkpoint(f));
    return out;
  };
  for (int shards : {1, 2, 3}) {
    CAPTURE(shards);
    const auto spec = resized_spec(before, shards);
    const block_layout to(spec);
    const std::vector<wire_buffer> handed{leaving(0, to), leaving(1, to)};
    std::size_t sent = 0;  // exactly the blocks that change shard
    for (const auto& f : handed) sent += decode_shard_checkpoint(f)->blocks.size();
    CHECK(sent == moved_count(from.owners(), to.owners()));
    const shard_cut whole(saved, spec);
    const shard_cut cut(handed, decoded(handed), spec, shard_cut::dense_files::leaving_only);
    CHECK(cut.moving_bytes() == whole.moving_bytes());
    for (int s = 0; s < shards; ++s) {
      CAPTURE(s);
      const auto a = cut.part_for(s), b = whole.part_for(s);
      REQUIRE(a.size_bytes() == b.size_bytes());
      CHECK(std::memcmp(a.bytes(), b.bytes(), a.size_bytes()) == 0);
      const auto& mine = to.shard_blocks(s);
      if (std::any_of(mine.begin(), mine.end(),  // it keeps a block no file holds
                      [&](uint32_t id) { return from.blocks()[id].shard == s; }))
        CHECK_THROWS_WITH_AS(cut.cut_for(s), doctest::Contains("which did not hand it over"),
                             std::invalid_argument);
    }
    // the files as a checkpoint's (every block somewhere) would be refused the same way
    CHECK_THROWS_WITH_AS(shard_cut(handed, decoded(handed), spec),
                         doctest::Contains("no shard holds block"), std::invalid_argument);
  }
  // 2 -> 1: a block that leaves shard 1, left out of its hand-over, is refused by name
  const auto spec = resized_spec(before, 1);
  const block_layout to(spec);
  const auto gone = from.shard_blocks(1).front();
  const std::vector<wire_buffer> handed{leaving(0, to), leaving(1, to, gone)};
  const auto why = "block " + std::to_string(gone) + " moves from shard 1 to shard 0";
  CHECK_THROWS_WITH_AS(
    shard_cut(handed, decoded(handed), spec, shard_cut::dense_files::leaving_only),
    doctest::Contains(why.c_str()), std::invalid_argument);
}

TEST_CASE("a checkpoint taken under a carried dense placement restores into any size") {
  auto before = two_shard_spec();
  // the placement a live resize would record: every block on shard 1 but block 0
  const auto blocks = block_layout(before).blocks().size();
  before.block_shards.assign(blocks, 1);
  before.block_shards[0] = 0;
  std::vector<wire_buffer> saved{old_shard(before, 0, 1), old_shard(before, 1, 4)};
  CHECK(decode_shard_checkpoint(saved[0])->blocks.size() == 1);
  CHECK(decode_shard_checkpoint(saved[0])->spec.block_shards == before.block_shards);
  for (int shards : {1, 2, 3}) {
    CAPTURE(shards);
    auto spec = before;
    spec.shards = shards;
    spec.bucket_shards = resumed_placement(before, shards);
    spec.block_shards.clear();  // the largest-first rule of the new size
    REQUIRE(needs_resize(before, spec));  // at 2 shards too: the placement differs
    auto files = resize_shard_files(saved, spec);
    block_layout layout(spec);
    std::size_t floats = 0;
    for (int s = 0; s < shards; ++s) {
      auto view = decode_shard_checkpoint(files[std::size_t(s)]);
      REQUIRE(view);
      REQUIRE(view->blocks.size() == layout.shard_blocks(s).size());
      for (std::size_t i = 0; i < view->blocks.size(); ++i) {
        const auto& b = layout.blocks()[layout.shard_blocks(s)[i]];
        CHECK(view->blocks[i].id == b.id);
        for (uint32_t k = 0; k < b.size; ++k) CHECK(view->blocks[i].values[k] == float(b.offset + k));
        floats += b.size;
      }
    }
    CHECK(floats == layout.total_floats());
  }
  // the same placement written explicitly or left to the rule needs no cut
  auto lpt = two_shard_spec();
  auto explicit_lpt = lpt;
  explicit_lpt.block_shards = block_layout(lpt).owners();
  CHECK_FALSE(needs_resize(lpt, explicit_lpt));
  CHECK_FALSE(needs_resize(before, before));
}

TEST_CASE("cutting a checkpoint refuses files that do not make one") {
  const auto before = two_shard_spec();
  std::vector<wire_buffer> saved{old_shard(before, 0, 1), old_shard(before, 1, 4)};
  auto spec = before;
  spec.shards = 3;
  spec.bucket_shards = resumed_placement(before, 3);
  // a file missing: shard 1's blocks and buckets are held by no one
  CHECK_THROWS_WITH_AS(resize_shard_files({saved[0]}, spec),
                       doctest::Contains("1 shard files written by a run of 2 shards"),
                       std::invalid_argument);
  // the same shard twice
  CHECK_THROWS_WITH_AS(resize_shard_files({saved[0], saved[0]}, spec),
                       doctest::Contains("file 1 holds shard 0"), std::invalid_argument);
  // another number of buckets hashes keys elsewhere
  auto other = spec;
  other.bucket_shards.resize(1024);
  CHECK_THROWS_WITH_AS(resize_shard_files(saved, other), doctest::Contains("buckets"),
                       std::invalid_argument);
  // the same placement and size need no cut
  CHECK_FALSE(needs_resize(before, before));
}
