// Signed checkpoints (--checkpoint-key): a CRC is a checksum, not a signature, so a block
// scaled ×1000 and its CRC recomputed loads from an unsigned checkpoint; signed, it is refused,
// as is a manifest rewritten to match, an unsigned checkpoint read with a key and a signed one
// read without it. The accepted path: a signed run resumes, rolls back and exports with its key.
#include "actors/model/mlp_plugin.hpp"
#include "actors/protocol/digest.hpp"
#include "actors/storage/checkpoint_signing.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "tests/command_runner.hpp"
#include "tests/checkpoint_files.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace actorps;
using actorps::test::contains;
using actorps::test::run_actorps;
using actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

const std::string key = "0123456789abcdef0123456789abcdef\n";

/// A complete checkpoint at clock 100, every parameter 0.5, signed with `with_key` ("": not).
fs::path write_checkpoint(const fs::path& root, const std::string& with_key) {
  auto spec = test::small_checkpoint_spec();
  const int64_t clock = 100;
  auto dir = prepare_checkpoint_dir(root, clock);
  auto files = test::write_shard_files(dir, spec, clock, 0.5f, 0.0f);
  run_checkpoint run;
  run.spec = spec;
  run.clock = clock;
  run.batch = 4;
  run.steps = 1000;
  run.positions = {{0, clock, 0, clock}, {1, clock, 0, clock}};
  commit_checkpoint(dir, clock, files, encode_run_checkpoint(run), 10, with_key);
  return dir;
}

wire_buffer read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return wire_buffer::from_bytes(bytes.data(), bytes.size());
}

nlohmann::json read_manifest(const fs::path& dir) {
  nlohmann::json m;
  std::ifstream(dir / manifest_name) >> m;
  return m;
}

/// The forger's work: shard 0's first block ×1000, the file encoded again and its size and
/// CRC-32 put in the manifest; with `sha_too`, its SHA-256 as well.
void scale_first_block(const fs::path& dir, bool sha_too) {
  auto file = dir / shard_file_name(0);
  auto view = decode_shard_checkpoint(read_bytes(file));
  REQUIRE(view);
  std::vector<float> scaled(view->blocks[0].values, view->blocks[0].values + view->blocks[0].count);
  for (auto& v : scaled) v *= 1000;
  view->blocks[0].values = scaled.data();
  auto forged = encode_shard_checkpoint(view->spec, *view);
  auto rec = write_file_durably(file, forged.bytes(), forged.size_bytes());
  auto m = read_manifest(dir);
  for (auto& f : m["files"]) {
    if (f["name"] != shard_file_name(0)) continue;
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", rec.crc32);
    f["bytes"] = rec.bytes;
    f["crc32"] = crc;
    if (sha_too) {
      std::string bytes(reinterpret_cast<const char*>(forged.bytes()), forged.size_bytes());
      f["sha256"] = sha256_hex(bytes);
    }
  }
  std::ofstream(dir / manifest_name) << m.dump(2);
}

/// Sets the 4 bytes at `at` so that the CRC-32 of `bytes` becomes `target`: CRC-32 is linear
/// over GF(2), so each of those 32 bits flips a fixed set of CRC bits, and the bits that reach
/// `target` solve a 32 × 32 system. What anyone can do to a file guarded by a CRC alone.
void force_crc(std::string& bytes, std::size_t at, uint32_t target) {
  auto crc = [&] { return crc32_of(bytes.data(), bytes.size()); };
  auto flip = [&](int bit) { bytes[at + bit / 8] ^= static_cast<char>(1 << (bit % 8)); };
  std::memset(&bytes[at], 0, 4);
  const uint32_t base = crc();
  uint64_t rows[32] = {};  // row r: which of the 32 bits flip CRC bit r; bit 32: r must flip
  for (int b = 0; b < 32; ++b) {
    flip(b);
    const uint32_t column = crc() ^ base;
    flip(b);
    for (int r = 0; r < 32; ++r)
      if (column >> r & 1) rows[r] |= uint64_t(1) << b;
  }
  for (int r = 0; r < 32; ++r)
    if ((base ^ target) >> r & 1) rows[r] |= uint64_t(1) << 32;
  int pivot_of[32], rank = 0;
  for (int c = 0; c < 32; ++c) {
    int p = rank;
    while (p < 32 && !(rows[p] >> c & 1)) ++p;
    if (p == 32) continue;
    std::swap(rows[p], rows[rank]);
    for (int r = 0; r < 32; ++r)
      if (r != rank && (rows[r] >> c & 1)) rows[r] ^= rows[rank];
    pivot_of[rank++] = c;
  }
  for (int r = 0; r < rank; ++r)
    if (rows[r] >> 32 & 1) flip(pivot_of[r]);
  REQUIRE(crc() == target);
}

std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void put_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

float first_value(const loaded_checkpoint& ckpt) {
  auto view = decode_shard_checkpoint(ckpt.shards.at(0));
  REQUIRE(view);
  return view->blocks.at(0).values[0];
}

} // namespace

TEST_CASE("a signed checkpoint lists every file's SHA-256, is signed, and loads with its key") {
  scratch_dir tmp("actorps_signing");
  auto dir = write_checkpoint(tmp.path, key);
  auto m = read_manifest(dir);
  REQUIRE(m["files"].size() == 3);
  for (const auto& f : m["files"]) {
    std::ifstream in(dir / f["name"].get<std::string>(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(f["sha256"] == sha256_hex(bytes));  // the bytes on disk, by an independent reading
  }
  CHECK(m["signature"]["algorithm"] == "hmac-sha256");
  auto body = m;
  body.erase("signature");
  CHECK(m["signature"]["hmac"] == hmac_sha256_hex(key, body.dump()));
  auto loaded = load_checkpoint(dir, default_max_parameter, key);
  CHECK(loaded.clock == 100);
  CHECK(first_value(loaded) == 0.5f);
}

TEST_CASE("a block ×1000 with its CRC recomputed loads unsigned and is refused when signed") {
  scratch_dir tmp("actorps_signing");
  // the same checkpoint twice (its shard files are the same bytes), one unsigned, one signed
  auto open_dir = write_checkpoint(fs::path(tmp.path) / "unsigned", "");
  auto dir = write_checkpoint(fs::path(tmp.path) / "signed", key);
  const auto file = shard_file_name(0);
  const auto original = file_bytes(open_dir / file);
  REQUIRE(file_bytes(dir / file) == original);
  // the forger: shard 0's first block ×1000, then four bytes of another block's values set so
  // that the file has its old CRC-32 again; same size, same CRC, the manifest left alone
  const auto open_manifest = read_manifest(open_dir);
  scale_first_block(open_dir, false);
  const auto scaled = file_bytes(open_dir / file);
  REQUIRE(scaled.size() == original.size());
  const uint32_t crc = crc32_of(original.data(), original.size());
  const float half = 0.5f;
  bool loads = false;
  std::string forged;
  for (auto at = scaled.find(std::string(reinterpret_cast<const char*>(&half), 4));
       !loads && at != std::string::npos;
       at = scaled.find(std::string(reinterpret_cast<const char*>(&half), 4), at + 4)) {
    forged = scaled;
    force_crc(forged, at, crc);  // the patched value may be anything: try until it passes
    put_bytes(open_dir / file, forged);
    std::ofstream(open_dir / manifest_name) << open_manifest.dump(2);  // as it was
    try {
      loads = first_value(load_checkpoint(open_dir)) == 500.0f;
    } catch (const checkpoint_error&) {
    }
  }
  // unsigned: size and CRC-32 match the manifest, every check passes, the forgery is used
  REQUIRE(loads);
  CHECK(first_value(load_newest_checkpoint(fs::path(tmp.path) / "unsigned")) == 500.0f);
  // signed: the same file is refused, its SHA-256 not the signed manifest's
  put_bytes(dir / file, forged);
  CHECK_THROWS_WITH_AS(load_checkpoint(dir, default_max_parameter, key),
                       doctest::Contains("shard-0.capnp: SHA-256 differs from the signed "
                                         "manifest's"),
                       checkpoint_error);
  CHECK_THROWS_WITH_AS(load_newest_checkpoint(fs::path(tmp.path) / "signed", {},
                                              default_max_parameter, key),
                       doctest::Contains("no valid checkpoint"), checkpoint_error);
  // the manifest rewritten to list the forged file's size, CRC-32 and SHA-256: its signature
  // no longer matches
  auto rewritten = write_checkpoint(fs::path(tmp.path) / "rewritten", key);
  scale_first_block(rewritten, true);
  CHECK_THROWS_WITH_AS(load_checkpoint(rewritten, default_max_parameter, key),
                       doctest::Contains("MANIFEST.json: signature does not match"),
                       checkpoint_error);
}

TEST_CASE("an unsigned checkpoint read with a key, or a signed one without, is refused") {
  scratch_dir tmp("actorps_signing");
  auto plain = write_checkpoint(fs::path(tmp.path) / "plain", "");
  CHECK(read_manifest(plain).count("signature") == 0);
  CHECK_THROWS_WITH_AS(load_checkpoint(plain, default_max_parameter, key),
                       doctest::Contains("is not signed, and a checkpoint key is given"),
                       checkpoint_error);
  auto signed_dir = write_checkpoint(fs::path(tmp.path) / "signed", key);
  CHECK_THROWS_WITH_AS(load_checkpoint(signed_dir),
                       doctest::Contains("is signed (HMAC-SHA256) and no key was given"),
                       checkpoint_error);
  CHECK_THROWS_WITH_AS(load_checkpoint(signed_dir, default_max_parameter,
                                       "another key, 32 bytes long......"),
                       doctest::Contains("signature does not match"), checkpoint_error);
  auto stripped = read_manifest(signed_dir);  // the signature removed: now it is unsigned
  stripped.erase("signature");
  std::ofstream(signed_dir / manifest_name) << stripped.dump(2);
  CHECK_THROWS_WITH_AS(load_checkpoint(signed_dir, default_max_parameter, key),
                       doctest::Contains("is not signed"), checkpoint_error);
}

TEST_CASE("a checkpoint key file must hold 16 to 4096 bytes") {
  scratch_dir tmp("actorps_signing");
  const auto path = tmp.path + "/key";
  std::ofstream(path) << key;
  CHECK(read_checkpoint_key(path) == key);
  std::ofstream(path) << "short\n";
  CHECK_THROWS_WITH_AS(read_checkpoint_key(path),
                       doctest::Contains("6 bytes, a key needs at least 16"), checkpoint_error);
  std::ofstream(path) << std::string(5000, 'k');
  CHECK_THROWS_WITH_AS(read_checkpoint_key(path),
                       doctest::Contains("5000 bytes, more than the 4096"), checkpoint_error);
  // a FIFO: input_files_test.cpp
}

TEST_CASE("--checkpoint-key: a signed run resumes, rolls back and exports only with its key") {
  scratch_dir tmp("actorps_signing");
  const auto key_file = tmp.path + "/cluster.key";
  std::ofstream(key_file) << key;
  const auto root = tmp.path + "/ckpt";
  const std::string run = "simulate --dataset synthetic --model 784-32-10 --eval-every 0 "
                          "--no-progress --checkpoint-every 10 --checkpoint-dir " + root;
  // a shard lost at clock 45: the chief rolls back to a signed checkpoint, checked with the key
  // (the workers at 20 ms a clock, so that the checkpoints before it are complete by then)
  auto first = run_actorps(run + " --steps 60 --kill ps:0@clock=45 --slow worker:0=20 "
                           "--slow worker:1=20 --checkpoint-key " + key_file);
  INFO(first.output);
  REQUIRE(first.status == 0);
  CHECK(contains(first.output, "recoveries 1"));
  const std::string restored = "ps:0: restored to the checkpoint at clock ";
  const auto at = first.output.find(restored);
  REQUIRE(at != std::string::npos);
  CHECK(std::stoll(first.output.substr(at + restored.size())) >= 10);  // not the initial values
  const auto newest = fs::path(root) / "ckpt-000000000060";
  CHECK(read_manifest(newest)["signature"]["algorithm"] == "hmac-sha256");

  auto unkeyed = run_actorps(run + " --steps 80 --resume");
  INFO(unkeyed.output);
  CHECK(unkeyed.status == 2);
  CHECK(contains(unkeyed.output, "is signed (HMAC-SHA256) and no key was given to check it: give "
                                 "the cluster's --checkpoint-key"));
  auto resumed = run_actorps(run + " --steps 80 --resume --checkpoint-key " + key_file);
  INFO(resumed.output);
  CHECK(resumed.status == 0);
  CHECK(contains(resumed.output, "resuming from " + newest.string() + " (clock 60)"));

  const std::string out = tmp.path + "/export";
  auto refused = run_actorps("export --dataset synthetic --checkpoint " + root + " --export-dir "
                             + out);
  CHECK(refused.status == 2);
  CHECK(contains(refused.output, "no key was given"));
  CHECK_FALSE(fs::exists(out + "/1"));
  auto exported = run_actorps("export --dataset synthetic --checkpoint " + root + " --export-dir "
                              + out + " --checkpoint-key " + key_file);
  INFO(exported.output);
  CHECK(exported.status == 0);
  CHECK(fs::exists(out + "/1/model.capnp"));

  std::ofstream(key_file) << "too short";
  auto bad_key = run_actorps(run + " --steps 100 --resume --checkpoint-key " + key_file);
  CHECK(bad_key.status == 2);
  CHECK(contains(bad_key.output, "--checkpoint-key " + key_file + ": 9 bytes, a key needs at "
                                 "least 16"));
}
