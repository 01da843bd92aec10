// Exports while training from the library: train() with export_dir, export_every and
// full_export_every writes the chain `--export-every` writes (a full version, then deltas), each
// delta folding to the model.capnp that a run exporting every version whole wrote at its clock,
// byte for byte, and the export after the run; the options are refused as the command refuses
// its flags, naming them.
#include "actors/data/load_split.hpp"
#include "actors/ps.hpp"
#include "actors/serving/export_chain.hpp"

#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

namespace actorps {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// metadata.json's "chain" of the version DIR/<v> (null when it has none).
json chain_of(const std::string& dir, uint64_t v) {
  auto meta = json::parse(bytes_of(dir + "/" + std::to_string(v) + "/metadata.json"));
  return meta.contains("chain") ? meta["chain"] : json();
}

/// The versions of an export directory, ascending.
std::vector<uint64_t> versions_of(const std::string& dir) {
  std::vector<uint64_t> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit))
      out.push_back(std::stoull(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// A sync DLRM run of 120 clocks with row eviction (deltas carry removed keys), an export
/// version every 10 clocks into `exports`, every `full_every`-th one full. A version whose
/// states come while the one before is still being written waits (no more is asked meanwhile,
/// so later clocks may be skipped); every version asked is written, and the first two (clocks
/// 10 and 20, the second asked as the first's states come) always are, so the two runs'
/// versions meet at least at clock 20, a delta in the chained run.
train_options dlrm_run(const std::string& data, const std::string& exports, int full_every) {
  train_options o;
  o.model = "dlrm:8:16:16";
  o.source.what = data_source::kind::criteo;
  o.source.train_path = data + "/train.tsv";
  o.source.test_path = data + "/test.tsv";
  o.mode = consistency::sync;
  o.batch = 64;
  o.steps = 120;
  o.admit_after = 1;
  o.evict_after = 3;
  o.threads = 2;
  o.export_dir = exports;
  o.export_every = 10;
  o.full_export_every = full_every;
  return o;
}

TEST_CASE("train() exports while training: a full version, deltas folding to full ones") {
  test::scratch_dir dir{"actorps_library_export"};
  const auto gen = test::run_actorps("gen-data criteo --out " + dir.path
                                     + " --rows 6000 --test-rows 500");
  REQUIRE_MESSAGE(gen.status == 0, gen.output);
  const auto a = dir.path + "/a", b = dir.path + "/b";
  // A model an export cannot hold is refused before training, naming the option.
  // (Every CTR model can; sparse-lr, on libsvm lines, exports its tensors and rows after its
  // run only.)
  REQUIRE(test::run_actorps("gen-data libsvm --out " + dir.path + " --rows 500 --test-rows 50")
            .status == 0);
  auto sparse = dlrm_run(dir.path, dir.path + "/sparse", 1);
  sparse.model = "sparse-lr";
  sparse.source.what = data_source::kind::libsvm;
  sparse.source.train_path = dir.path + "/train.libsvm";
  sparse.source.test_path = dir.path + "/test.libsvm";
  auto refused = train(sparse);
  REQUIRE_FALSE(refused);
  INFO(to_string(refused.error()));
  CHECK(test::contains(to_string(refused.error()), "--export-dir: the model sparse-lr"));
  auto whole = train(dlrm_run(dir.path, a, 1));   // every version full
  REQUIRE_MESSAGE(whole, to_string(whole.error()));
  auto chained = train(dlrm_run(dir.path, b, 100));  // a full one, then deltas
  REQUIRE_MESSAGE(chained, to_string(chained.error()));

  const auto av = versions_of(a), bv = versions_of(b);
  REQUIRE(av.size() >= 2);
  REQUIRE(bv.size() >= 3);
  // The first version while training is full; the last is the export after the run (no chain),
  // the same model in both runs (sync: the same settings give the same parameters).
  CHECK(chain_of(b, bv.front())["kind"] == "full");
  CHECK(chain_of(b, bv.back()).is_null());
  CHECK(bytes_of(b + "/" + std::to_string(bv.back()) + "/model.capnp")
        == bytes_of(a + "/" + std::to_string(av.back()) + "/model.capnp"));
  std::map<int64_t, uint64_t> full_at;  // a's versions while training by their clock
  for (auto v : av) {
    const auto chain = chain_of(a, v);
    if (chain.is_null()) continue;
    CHECK(chain["kind"] == "full");
    full_at[chain["clock"].get<int64_t>()] = v;
  }
  int deltas = 0, compared = 0;
  for (auto v : bv) {
    const auto chain = chain_of(b, v);
    if (chain.is_null() || chain["kind"] != "delta") continue;
    ++deltas;
    CHECK(chain["base"]["version"] == bv.front());
    CHECK_FALSE(fs::exists(b + "/" + std::to_string(v) + "/model.capnp"));
    const auto clock = chain["clock"].get<int64_t>();
    auto w = full_at.find(clock);
    if (w == full_at.end()) continue;  // skipped in a
    const auto folded = dir.path + "/folded-" + std::to_string(v);
    consolidate_chain(b + "/" + std::to_string(v), folded);
    CAPTURE(clock);
    CHECK(bytes_of(folded + "/1/model.capnp")
          == bytes_of(a + "/" + std::to_string(w->second) + "/model.capnp"));
    ++compared;
  }
  CHECK(deltas >= 1);
  CHECK(compared >= 1);
}

TEST_CASE("train() refuses export options as the command refuses its flags, naming them") {
  test::scratch_dir dir{"actorps_library_export"};
  auto refusal = [&](auto set) {
    train_options o;
    o.model = "mlp:784-16-10";
    o.source.what = data_source::kind::synthetic;
    o.source.train_rows = 512;
    o.source.test_rows = 128;
    o.steps = 3;
    o.threads = 2;
    set(o);
    auto result = train(o);
    REQUIRE_FALSE(result);
    return to_string(result.error());
  };
  CHECK(test::contains(refusal([](train_options& o) { o.export_every = -1; }), "export_every"));
  CHECK(test::contains(refusal([](train_options& o) { o.full_export_every = 0; }),
                 "--full-export-every must be at least 1 (got 0)"));
  CHECK(test::contains(refusal([](train_options& o) { o.export_every = 2; }),
                 "--export-every needs --export-dir"));
  std::ofstream(dir.path + "/file") << "x";
  CHECK(test::contains(refusal([&](train_options& o) { o.export_dir = dir.path + "/file/sub"; }),
                 "--export-dir cannot be written"));
  // Versions while training read the test split from the source: one given in memory is refused.
  CHECK(test::contains(refusal([&](train_options& o) {
                         o.test = load_split(o.source, false);
                         o.export_dir = dir.path + "/x";
                         o.export_every = 2;
                       }),
                       "export_every: the versions while training read the test split"));
  CHECK_FALSE(fs::exists(dir.path + "/x/1"));
}

} // namespace
} // namespace actorps
