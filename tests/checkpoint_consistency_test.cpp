// A checkpoint's content must agree with itself and with its directory: checksums only say the
// files are as written, so a checkpoint rewritten consistently (every clock set to 10^12, a
// data position of worker 99, negative counts; every checksum redone) must still be refused,
// and the previous checkpoint used.
#include "actors/model/mlp_plugin.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "tests/checkpoint_files.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <iterator>

using namespace actorps;
using scratch = actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

constexpr int batch = 4;
constexpr int64_t train_rows = 64;  // 32 rows per worker: 8 batches an epoch

train_spec spec_of_run() {
  train_spec spec;
  spec.model = mlp_model({6, 5, 3});
  spec.block_floats = 8;
  spec.shards = 2;
  spec.workers = 2;
  spec.total_clocks = 100;
  return spec;
}

/// A complete checkpoint at `clock` as the chief and the shards write it.
fs::path write_checkpoint(const fs::path& root, int64_t clock) {
  auto spec = spec_of_run();
  auto dir = prepare_checkpoint_dir(root, clock, "run-a");
  auto files = test::write_shard_files(dir, spec, clock, 0.5f, 0.0f);
  run_checkpoint run;
  run.spec = spec;
  run.clock = clock;
  run.batch = batch;
  run.steps = spec.total_clocks;
  run.samples = clock * batch * spec.workers;
  for (int32_t w = 0; w < spec.workers; ++w) run.positions.push_back({w, clock, clock / 8, clock % 8});
  run.run_id = "run-a";
  run.dataset = "synthetic";
  run.train_rows = train_rows;
  commit_checkpoint(dir, clock, files, encode_run_checkpoint(run), 10);
  return dir;
}

wire_buffer read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return wire_buffer::from_bytes(bytes.data(), bytes.size());
}

/// Rewrites a checkpoint as a careful liar would: `edit_run` and `edit_shard` change the decoded
/// files, which are encoded again, and the manifest gets their new sizes and checksums (and
/// `manifest_clock` when >= 0).
void rewrite(const fs::path& dir, const std::function<void(run_checkpoint&)>& edit_run,
             const std::function<void(shard_checkpoint_view&, train_spec&)>& edit_shard,
             int64_t manifest_clock = -1) {
  std::ifstream in(dir / manifest_name);
  auto manifest = nlohmann::json::parse(in);
  in.close();
  if (manifest_clock >= 0) manifest["clock"] = manifest_clock;
  for (auto& entry : manifest["files"]) {
    auto name = entry["name"].get<std::string>();
    auto old = read_bytes(dir / name);
    wire_buffer fresh;
    if (name == run_file_name) {
      auto run = decode_run_checkpoint(old);
      REQUIRE(run);
      edit_run(*run);
      fresh = encode_run_checkpoint(*run);
    } else {
      auto view = decode_shard_checkpoint(old);
      REQUIRE(view);
      auto spec = view->spec;
      edit_shard(*view, spec);
      fresh = encode_shard_checkpoint(spec, *view);
    }
    auto rec = write_file_durably(dir / name, fresh.bytes(), fresh.size_bytes());
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", rec.crc32);
    entry["bytes"] = rec.bytes;
    entry["crc32"] = crc;
  }
  std::ofstream(dir / manifest_name) << manifest.dump(2);
}

} // namespace

TEST_CASE("a checkpoint rewritten consistently is refused and the previous one used") {
  const int64_t lie = 1000000000000;  // 10^12
  // A block's values with one set to `bad`, kept alive until the rewrite has encoded them.
  std::vector<std::vector<float>> kept;
  auto poisoned = [&](const block_view& b, float bad) {
    kept.emplace_back(b.values, b.values + b.count);
    kept.back()[b.count / 2] = bad;
    return kept.back().data();
  };
  struct lie_case {
    const char* what;
    std::function<void(run_checkpoint&)> run;
    std::function<void(shard_checkpoint_view&, train_spec&)> shard;
    int64_t manifest_clock;
    const char* refusal;
  };
  auto same_run = [](run_checkpoint&) {};
  auto same_shard = [](shard_checkpoint_view&, train_spec&) {};
  std::vector<lie_case> cases{
    {"every clock 10^12",
     [&](run_checkpoint& r) {
       r.clock = lie;
       for (auto& p : r.positions) p.clock = lie;
     },
     [&](shard_checkpoint_view& v, train_spec&) { v.clock = lie; }, lie,
     "is from clock 1000000000000, its directory's is 20"},
    {"a position of worker 99", [](run_checkpoint& r) { r.positions[1].worker = 99; }, same_shard,
     -1, "data position 1 is worker 99's, expected worker 1"},
    {"a position outside the data",
     [](run_checkpoint& r) {
       for (auto& p : r.positions) p.epoch = 0, p.batch_in_epoch = 20;
     },
     same_shard, -1, "lies outside worker 0's 32 rows in batches of 4"},
    {"negative samples", [](run_checkpoint& r) { r.samples = -5; }, same_shard, -1,
     "counts -5 samples"},
    {"samples beyond the clocks", [](run_checkpoint& r) { r.samples = 1 << 30; }, same_shard, -1,
     "samples, outside 0..800"},
    {"a length unlike the spec's", [](run_checkpoint& r) { r.steps = 5000; }, same_shard, -1,
     "says the run is 5000 clocks long, its spec 100"},
    {"a negative wall time", [](run_checkpoint& r) { r.wall_s = -1; }, same_shard, -1,
     "wall time"},
    {"a shard of another length", same_run,
     [](shard_checkpoint_view&, train_spec& spec) { spec.total_clocks = 7; }, -1,
     "its spec's length (7 clocks"},
    {"a shard updated in the future", same_run,
     [&](shard_checkpoint_view& v, train_spec&) { v.newest_clock = lie; }, -1,
     "its newest update is from clock 1000000000000"},
    {"a parameter of 3e38", same_run,
     [&](shard_checkpoint_view& v, train_spec&) {
       v.blocks[1].values = poisoned(v.blocks[1], 3e38f);
     },
     -1, "shard-0.capnp: value_out_of_bounds: tensor dense0/kernel (block 2) holds 3e+38"},
    {"a NaN parameter", same_run,
     [&](shard_checkpoint_view& v, train_spec&) {
       v.blocks.back().values = poisoned(v.blocks.back(), std::nanf(""));
     },
     -1, "holds nan, beyond the parameter bound"},
    {"nothing (the rewrite itself is faithful)", same_run, same_shard, -1, ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    scratch tmp;
    write_checkpoint(fs::path(tmp.path), 10);
    auto newest = write_checkpoint(fs::path(tmp.path), 20);
    rewrite(newest, c.run, c.shard, c.manifest_clock);
    auto loaded = load_newest_checkpoint(fs::path(tmp.path));
    if (std::string(c.refusal).empty()) {
      CHECK(loaded.clock == 20);
      continue;
    }
    CHECK(loaded.clock == 10);
    REQUIRE(loaded.skipped.size() == 1);
    CHECK(loaded.skipped[0].find(c.refusal) != std::string::npos);
    CHECK_THROWS_WITH_AS(load_checkpoint(newest), doctest::Contains(c.refusal), checkpoint_error);
  }
}
