// A checkpoint directory as `--resume` and a rollback load it (actors/storage): MANIFEST.json,
// the run-id file, run.capnp and the shard files, each checked, decoded and checked against
// the others and the directory's name; then the run's identity against the resuming run's.
//
// The input is the directory's files joined by fuzz::file_separator: MANIFEST.json, run-id,
// run.capnp, shard-0.capnp, shard-1.capnp, ... The first byte picks how the manifest is made:
// 0, the input's own (its JSON, sizes and checksums are what is fuzzed); 1, one the harness
// writes with the right sizes and checksums of the files given, so that the fuzzer reaches the
// decoders and the consistency checks behind the checksums.
#include "actors/storage/checkpoint_lineage.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "actors/storage/run_identity.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace actorps {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t most_shards = 8;

/// The manifest commit_checkpoint would write for these files.
std::string true_manifest(int64_t clock, const std::vector<std::pair<std::string, std::string>>& files) {
  nlohmann::json manifest{{"format", "actorps-checkpoint"}, {"version", 1}, {"clock", clock},
                          {"run_id", "0123456789abcdef"}, {"created", "2025-01-01T00:00:00Z"}};
  auto& list = manifest["files"] = nlohmann::json::array();
  for (const auto& [name, bytes] : files) {
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", crc32_of(bytes.data(), bytes.size()));
    list.push_back({{"name", name}, {"bytes", bytes.size()}, {"crc32", crc}});
  }
  return manifest.dump(2) + "\n";
}

/// The resuming run: what identity_difference compares a loaded checkpoint with.
run_identity resuming_run() {
  run_identity id;
  id.spec.model.name = "mlp:4-3-2";
  id.spec.model.tensors = {{"dense0/kernel", {4, 3}, tensor_init::uniform, 0.5},
                           {"dense0/bias", {3}, tensor_init::zeros, 0}};
  id.batch = 8;
  id.dataset = "synthetic";
  id.train_rows = 64;
  return id;
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  fuzz::selected in;
  if (!fuzz::select(data, size, 2, in)) return 0;
  auto parts = fuzz::split(in.text(), fuzz::file_separator);
  if (parts.size() > 3 + most_shards) return 0;
  parts.resize(std::max<std::size_t>(parts.size(), 3));
  // The directory is named for the clock run.capnp claims (else 0), as a real one would be:
  // what the consistency checks compare the files against.
  int64_t clock = 0;
  if (auto run = decode_run_checkpoint(wire_buffer::from_bytes(parts[2].data(), parts[2].size())))
    clock = run->clock;
  auto root = fuzz::scratch_dir() / "root";
  std::error_code ec;
  fs::remove_all(root, ec);
  auto dir = root / checkpoint_dir_name(clock);
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::string>> files{{run_file_name, parts[2]}};
  for (std::size_t s = 3; s < parts.size(); ++s)
    files.emplace_back(shard_file_name(static_cast<int32_t>(s - 3)), parts[s]);
  for (const auto& [name, bytes] : files) fuzz::write_file(dir / name, bytes);
  if (!parts[1].empty()) fuzz::write_file(dir / run_id_file_name, parts[1]);
  fuzz::write_file(dir / manifest_name, in.choice == 0 ? parts[0] : true_manifest(clock, files));
  (void)run_id_of(dir);
  try {
    auto loaded = load_newest_checkpoint(root);
    auto run = decode_run_checkpoint(loaded.run_bytes);
    if (!run) {
      std::fprintf(stderr, "checkpoint_fuzz: a loaded run.capnp does not decode again\n");
      std::abort();
    }
    (void)identity_difference(*run, resuming_run());
  } catch (const checkpoint_error&) {
    // refused, with the reason: what a corrupt checkpoint must get
  }
  return 0;
}
