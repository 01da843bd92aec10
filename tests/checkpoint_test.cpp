// Checkpoints on disk: what a complete one holds, how a corrupt, truncated, lying or unfinished
// one is detected and the previous one used, pruning, and resuming a sync run bitwise.
#include "actors/model/mlp_plugin.hpp"
#include "actors/storage/checkpoint_lineage.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/parameter_init.hpp"
#include "tests/checkpoint_files.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shard_fixture.hpp"
#include "tests/simulation_fixture.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iterator>

using namespace actorps;
using actorps::test::final_parameters;
using actorps::test::synthetic_run;
using scratch = actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

/// Writes a complete checkpoint of run `run_id` at `clock` whose parameters are all `value`, as
/// the chief and the shards would; returns its directory.
fs::path write_checkpoint(const fs::path& root, int64_t clock, float value, int keep = 10,
                          const std::string& run_id = "") {
  auto spec = test::small_checkpoint_spec();
  auto dir = prepare_checkpoint_dir(root, clock, run_id);
  auto files = test::write_shard_files(dir, spec, clock, value, -value);
  run_checkpoint run;
  run.spec = spec;
  run.clock = clock;
  run.batch = 4;
  run.steps = 1000;
  run.positions = {{0, clock, 0, clock}, {1, clock, 0, clock}};
  run.run_id = run_id;
  commit_checkpoint(dir, clock, files, encode_run_checkpoint(run), keep);
  return dir;
}

float first_value(const loaded_checkpoint& ckpt) {
  auto view = decode_shard_checkpoint(ckpt.shards.at(0));
  REQUIRE(view);
  return view->blocks.at(0).values[0];
}

void flip_byte(const fs::path& file, std::size_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5a));
}

std::string skipped_text(const loaded_checkpoint& ckpt) {
  std::string out;
  for (const auto& s : ckpt.skipped) out += s + "\n";
  return out;
}

/// The bytes of a file, as the buffer a shard restores from.
wire_buffer read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return wire_buffer::from_bytes(bytes.data(), bytes.size());
}

} // namespace

TEST_CASE("a complete checkpoint lists every file with its size and CRC-32 and loads back") {
  scratch tmp;
  auto dir = write_checkpoint(fs::path(tmp.path), 100, 1.5f);
  CHECK(dir.filename() == "ckpt-000000000100");
  std::ifstream in(dir / manifest_name);
  auto manifest = nlohmann::json::parse(in);
  CHECK(manifest["clock"] == 100);
  REQUIRE(manifest["files"].size() == 3);  // two shards and run.capnp
  for (const auto& f : manifest["files"]) {
    auto path = dir / f["name"].get<std::string>();
    CHECK(fs::file_size(path) == f["bytes"].get<uint64_t>());
  }
  for (const auto& entry : fs::directory_iterator(dir))  // nothing left under a temporary name
    CHECK(entry.path().extension() != ".tmp");
  auto loaded = load_newest_checkpoint(fs::path(tmp.path));
  CHECK(loaded.clock == 100);
  CHECK(loaded.skipped.empty());
  CHECK(first_value(loaded) == 1.5f);
  auto view = decode_shard_checkpoint(loaded.shards[1]);
  REQUIRE(view);
  CHECK(view->optimizer_step == 100);
  CHECK(view->state.at(0).values[0] == -1.5f);  // the optimizer state travels too
}

TEST_CASE("a corrupt, truncated or lying newest checkpoint is reported and the previous used") {
  enum class damage { flipped_byte, truncated, manifest_lies, no_manifest, bad_manifest };
  for (auto d : {damage::flipped_byte, damage::truncated, damage::manifest_lies,
                 damage::no_manifest, damage::bad_manifest}) {
    CAPTURE(static_cast<int>(d));
    scratch tmp;
    write_checkpoint(fs::path(tmp.path), 100, 1.0f);
    auto newest = write_checkpoint(fs::path(tmp.path), 200, 2.0f);
    auto shard1 = newest / shard_file_name(1);
    std::string expect;
    switch (d) {
      case damage::flipped_byte:
        flip_byte(shard1, fs::file_size(shard1) / 2);
        expect = "(corrupt)";
        break;
      case damage::truncated:
        fs::resize_file(shard1, fs::file_size(shard1) - 64);
        expect = "truncated";
        break;
      case damage::manifest_lies: {
        std::ifstream in(newest / manifest_name);
        auto m = nlohmann::json::parse(in);
        m["files"][1]["bytes"] = m["files"][1]["bytes"].get<uint64_t>() + 8;
        std::ofstream(newest / manifest_name) << m.dump();
        expect = "the manifest says";
        break;
      }
      case damage::no_manifest:  // a crash between the shard files and the manifest
        fs::remove(newest / manifest_name);
        expect = "no MANIFEST.json";
        break;
      case damage::bad_manifest:
        std::ofstream(newest / manifest_name) << "{\"format\": ";
        expect = "not valid JSON";
        break;
    }
    auto loaded = load_newest_checkpoint(fs::path(tmp.path));
    CHECK(loaded.clock == 100);
    CHECK(first_value(loaded) == 1.0f);
    REQUIRE(loaded.skipped.size() == 1);
    CHECK(skipped_text(loaded).find("ckpt-000000000200") != std::string::npos);
    CHECK(skipped_text(loaded).find(expect) != std::string::npos);
    CHECK_THROWS_WITH_AS(load_checkpoint(newest), doctest::Contains(expect.c_str()), checkpoint_error);
  }
}

TEST_CASE("with no valid checkpoint the error lists why each one failed") {
  scratch tmp;
  CHECK_THROWS_WITH_AS(load_newest_checkpoint(fs::path(tmp.path)), doctest::Contains("no ckpt-* directories"),
                       checkpoint_error);
  auto dir = write_checkpoint(fs::path(tmp.path), 100, 1.0f);
  fs::remove(dir / run_file_name);
  CHECK_THROWS_WITH_AS(load_newest_checkpoint(fs::path(tmp.path)),
                       doctest::Contains("no valid checkpoint"), checkpoint_error);
  CHECK_THROWS_WITH_AS(load_newest_checkpoint(fs::path(tmp.path)), doctest::Contains("run.capnp: missing"),
                       checkpoint_error);
  CHECK_THROWS_WITH_AS(load_newest_checkpoint(fs::path(tmp.path) / "nowhere"),
                       doctest::Contains("no such checkpoint directory"), checkpoint_error);
}

TEST_CASE("--keep removes older checkpoints only once a newer one is complete") {
  scratch tmp;
  write_checkpoint(fs::path(tmp.path), 100, 1.0f, 2);
  write_checkpoint(fs::path(tmp.path), 200, 2.0f, 2);
  // an unfinished one (no manifest) does not count as complete: nothing older may go yet
  auto unfinished = prepare_checkpoint_dir(fs::path(tmp.path), 300);
  CHECK(fs::exists(fs::path(tmp.path) / "ckpt-000000000100"));
  write_checkpoint(fs::path(tmp.path), 400, 4.0f, 2);
  CHECK_FALSE(fs::exists(fs::path(tmp.path) / "ckpt-000000000100"));
  CHECK_FALSE(fs::exists(unfinished));  // older than the second newest complete one
  CHECK(fs::exists(fs::path(tmp.path) / "ckpt-000000000200"));
  CHECK(fs::exists(fs::path(tmp.path) / "ckpt-000000000400"));
  CHECK(load_newest_checkpoint(fs::path(tmp.path)).clock == 400);
}

TEST_CASE("--keep prunes only this run's checkpoints, whatever another run's clocks") {
  scratch tmp;
  const fs::path root(tmp.path);
  for (int64_t clock : {100, 200, 300}) write_checkpoint(root, clock, 1.0f, 10, "older");
  for (int64_t clock : {10, 20, 30, 40}) write_checkpoint(root, clock, 2.0f, 2, "newer");
  // before: the older run's higher clocks made --keep 2 remove every one of the newer run's
  for (int64_t clock : {30, 40, 100, 200, 300}) {
    CAPTURE(clock);
    CHECK(fs::exists(root / checkpoint_dir_name(clock) / manifest_name));
  }
  CHECK_FALSE(fs::exists(root / checkpoint_dir_name(10)));
  CHECK_FALSE(fs::exists(root / checkpoint_dir_name(20)));
  CHECK(run_id_of(root / checkpoint_dir_name(40)) == "newer");
  auto others = other_runs_checkpoints(root, "newer");
  REQUIRE(others.size() == 3);
  CHECK(others.front().filename() == checkpoint_dir_name(300));
}

TEST_CASE("an unfinished checkpoint names its run before any other file is written") {
  scratch tmp;
  auto dir = prepare_checkpoint_dir(fs::path(tmp.path), 20, "abc123");
  CHECK(run_id_of(dir) == "abc123");
  CHECK(other_runs_checkpoints(fs::path(tmp.path), "other").empty());  // no manifest: no checkpoint
}

TEST_CASE("an existing checkpoint directory is moved aside, never overwritten") {
  scratch tmp;
  auto first = write_checkpoint(fs::path(tmp.path), 100, 1.0f);
  auto bytes = fs::file_size(first / manifest_name);
  auto again = prepare_checkpoint_dir(fs::path(tmp.path), 100);
  CHECK(fs::is_empty(again));
  CHECK(fs::file_size(fs::path(tmp.path) / "ckpt-000000000100.old-1" / manifest_name) == bytes);
}

TEST_CASE("a checkpoint directory that cannot be created is refused with its name") {
  scratch tmp;
  std::ofstream(fs::path(tmp.path) / "a-file") << "x";
  CHECK_THROWS_WITH_AS(prepare_checkpoint_dir(fs::path(tmp.path) / "a-file" / "ckpts", 10),
                       doctest::Contains("a-file/ckpts: the checkpoint directory cannot be created"),
                       checkpoint_error);
}

TEST_CASE("a checkpoint of another model, cut, workers or optimizer cannot continue a run") {
  auto saved = test::small_checkpoint_spec();
  auto other = saved;
  CHECK(incompatibility(saved, other).empty());
  other.optimizer.learning_rate *= 2;  // rates, modes and lengths may change on resume
  other.mode = consistency::async;
  CHECK(incompatibility(saved, other).empty());
  other.model = mlp_model({6, 4, 3});
  CHECK(incompatibility(saved, other) == "the checkpoint's model is mlp:6-5-3, this run's is mlp:6-4-3");
  other = saved;
  other.shards = 3;  // the shard states are cut again (checkpoint_resize_test.cpp)
  CHECK(incompatibility(saved, other).empty());
  other.workers = 3;
  CHECK(incompatibility(saved, other).find("2 workers, this run 3") != std::string::npos);
  other = saved;
  other.optimizer.kind = optimizer_kind::adam;
  CHECK(incompatibility(saved, other).find("optimizer") != std::string::npos);
}

TEST_CASE("sync: N clocks, checkpoint, resume, N clocks equals 2N clocks bitwise") {
  constexpr int64_t n = 20;
  for (auto kind : {optimizer_kind::momentum, optimizer_kind::adam}) {
    CAPTURE(to_string(kind));
    scratch tmp;
    auto opts = synthetic_run(consistency::sync, 3, 2, 2 * n);
    opts.chief.spec.optimizer.kind = kind;
    opts.chief.spec.optimizer.learning_rate = kind == optimizer_kind::adam ? 0.002f : 0.05f;
    opts.chief.checkpoints.dir = fs::path(tmp.path).string();
    opts.chief.checkpoints.every = n;
    opts.chief.spec.checkpoint_every = n;
    auto resumed = opts;
    auto spec = opts.chief.spec;
    auto whole = simulate(std::move(opts));
    REQUIRE(whole);
    CHECK(whole->checkpoints == 2);  // at n and at 2n (the end)

    resumed.chief.checkpoints.dir = (fs::path(tmp.path) / "after").string();
    resumed.chief.checkpoints.resume = load_newest_checkpoint(fs::path(tmp.path) / "ckpt-000000000020");
    auto second_half = simulate(std::move(resumed));
    REQUIRE(second_half);
    CHECK(second_half->resumed_from == n);
    CHECK(second_half->samples == whole->samples);
    auto a = final_parameters(*whole, spec), b = final_parameters(*second_half, spec);
    REQUIRE(a.size() == b.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
    CHECK(differ == 0);
    // and the final checkpoints of both runs hold the same shard bytes
    auto last_a = load_newest_checkpoint(fs::path(tmp.path)), last_b = load_newest_checkpoint(fs::path(tmp.path) / "after");
    REQUIRE(last_a.clock == 2 * n);
    REQUIRE(last_b.clock == 2 * n);
    for (std::size_t s = 0; s < 2; ++s) {
      REQUIRE(last_a.shards[s].size_bytes() == last_b.shards[s].size_bytes());
      CHECK(std::memcmp(last_a.shards[s].bytes(), last_b.shards[s].bytes(),
                        last_a.shards[s].size_bytes()) == 0);
    }
  }
}

TEST_CASE("adam: a shard restored from its checkpoint after N updates takes update N+1 bitwise") {
  using actorps::test::shard_fixture;
  using actorps::test::timeout;
  constexpr int64_t n = 5;
  auto spec = actorps::test::tiny_spec(consistency::sync, 1);  // one update per push
  spec.optimizer.kind = optimizer_kind::adam;
  spec.optimizer.learning_rate = 0.01f;
  spec.total_clocks = 2 * n;
  spec.checkpoint_every = n;
  scratch tmp;
  shard_fixture whole(spec, shard_config{tmp.path, {}}), resumed(spec);
  auto push_at = [&](int64_t clock) {  // a gradient that differs per clock and per element
    std::vector<float> grad(whole.layout.total_floats());
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = std::sin(float(clock * 31 + i)) + 0.1f;
    return encode_push(0, clock, 0, whole.layout, grad.data());
  };
  for (int64_t c = 0; c < n; ++c) REQUIRE(whole.push_pull(push_at(c)));
  bool written = false;
  (*whole.self)->request(whole.shard, timeout, checkpoint_atom::value, tmp.path, n)
    .receive([&](file_record&) { written = true; }, [](caf::error&) {});
  REQUIRE(written);
  auto saved = read_bytes(fs::path(tmp.path) / shard_file_name(0));
  auto view = decode_shard_checkpoint(saved);
  REQUIRE(view);
  CHECK(view->optimizer_step == uint64_t(n));  // Adam's step travels with its moments

  caf::error err;
  (*resumed.self)->request(resumed.shard, timeout, restore_atom::value, saved,
                           std::vector<uint32_t>{0})
    .receive([](caf::ok_atom) {}, [&](caf::error& e) { err = e; });
  REQUIRE(err == caf::none);
  auto at_n = whole.snapshot();
  CHECK(resumed.snapshot() == at_n);
  auto a = whole.push_pull(push_at(n)), b = resumed.push_pull(push_at(n));
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a != at_n);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a->size(); ++i) differ += (*a)[i] != (*b)[i];
  CHECK(differ == 0);
}
