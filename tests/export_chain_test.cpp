// Export chains without a run (export/export_chain.hpp): what changed between two tables, and
// back; a chain folded to the model its newest version stands for; a damaged newest delta
// skipped and named; a link of another chain, a duplicate and a gap refused naming the link.
#include "actors/ps/criteo_keys.hpp"
#include "actors/model/dlrm_plugin.hpp"
#include "actors/serving/ctr_model_file.hpp"
#include "actors/serving/export_chain.hpp"
#include "actors/serving/model_export.hpp"

#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace actorps {
namespace {

constexpr int dim = 3;

gathered_rows rows_of(std::vector<uint64_t> keys, float base) {
  gathered_rows out;
  out.keys = std::move(keys);
  for (std::size_t i = 0; i < out.keys.size() * dim; ++i) out.values.push_back(base + float(i));
  return out;
}

/// A dlrm:3:4:5 model with dense parameters `d`·i and the given table.
struct chain_case {
  model_spec spec = dlrm_model(parse_dlrm_shape("3:4:5"));
  std::vector<float> dense(float d) const {
    std::vector<float> out;
    for (std::size_t i = 0; i < spec.total_floats(); ++i) out.push_back(d * float(i % 50));
    return out;
  }
  ctr_model model(float d, const gathered_rows& table) const {
    return make_ctr_model(spec, dense(d), table);
  }
};

std::vector<uint64_t> keys(std::initializer_list<std::pair<int, const char*>> values) {
  std::vector<uint64_t> out;
  for (auto [field, value] : values) out.push_back(criteo_key(field, value));
  std::sort(out.begin(), out.end());
  return out;
}

/// Writes delta version of `after` over `before` (the version `pred`, whose data file has
/// `pred_sha`) on base 1.
export_result write_delta(const std::string& dir, const chain_case& c, float d,
                          const gathered_rows& before, const gathered_rows& after,
                          const export_result& base, uint64_t pred, int64_t pred_clock,
                          const std::string& pred_sha, int64_t clock) {
  auto changes = diff_rows(before, after, dim);
  chain_position pos;
  pos.delta = true;
  pos.clock = clock;
  pos.base_version = base.version;
  pos.base_clock = 10;
  pos.base_sha256 = base.model_sha256;
  pos.predecessor_version = pred;
  pos.predecessor_clock = pred_clock;
  pos.predecessor_sha256 = pred_sha;
  return write_delta_version(dir, c.model(d, changes.rows), changes.removed, pos,
                             std::chrono::system_clock::now());
}

} // namespace

TEST_CASE("export chain: the rows changed and the keys removed, applied, give the newer table") {
  // 1 removed, 2 the same, 3 changed, 4 new, 5 the same
  gathered_rows before{{1, 2, 3, 5}, {1, 1, 1, 2, 2, 2, 3, 3, 3, 5, 5, 5}};
  gathered_rows after{{2, 3, 4, 5}, {2, 2, 2, 3, 3, 7, 4, 4, 4, 5, 5, 5}};
  const auto changes = diff_rows(before, after, dim);
  CHECK(changes.rows.keys == std::vector<uint64_t>{3, 4});
  CHECK(changes.rows.values == std::vector<float>{3, 3, 7, 4, 4, 4});
  CHECK(changes.removed == std::vector<uint64_t>{1});
  const auto applied = apply_changes(before, changes, dim);
  CHECK(applied.keys == after.keys);
  CHECK(applied.values == after.values);
  CHECK(diff_rows(after, after, dim).rows.keys.empty());
}

TEST_CASE("export chain: folded to its newest version, damage skipped, another chain's refused") {
  const test::scratch_dir scratch{"actorps_export_chain"};
  const std::string dir = scratch.path + "/export";
  const chain_case c;
  const auto t1 = rows_of(keys({{0, "a"}, {0, "b"}, {3, "x"}, {25, "z"}}), 1);
  auto t2 = rows_of(keys({{0, "a"}, {3, "x"}, {3, "y"}, {25, "z"}}), 1);  // b gone, y new
  t2.values[0] = 42;                                                      // a's row changed
  auto t3 = t2;
  t3.values[t3.values.size() - 1] = -5;  // z's row changed

  chain_position full;
  full.clock = 10;
  const auto v1 = write_ctr_version(c.model(0.01f, t1), "{\"chain\":" + chain_json(full) + "}",
                                    dir);
  const auto v2 = write_delta(dir, c, 0.02f, t1, t2, v1, v1.version, 10, v1.model_sha256, 20);
  const auto v3 = write_delta(dir, c, 0.03f, t2, t3, v1, v2.version, 20, v2.model_sha256, 30);
  REQUIRE(v3.version == 3);
  CHECK_FALSE(std::filesystem::exists(v2.path + "/model.capnp"));

  auto chain = load_export_chain(dir);
  CHECK(chain.skipped.empty());
  CHECK(chain.version == 3);
  CHECK(chain.clock == 30);
  CHECK(chain.deltas == 2);
  CHECK(encode_ctr_model(std::get<ctr_model>(chain.model)) == encode_ctr_model(c.model(0.03f, t3)));
  // the chain ending at a version of it
  CHECK(encode_ctr_model(std::get<ctr_model>(load_export_chain(v2.path).model))
        == encode_ctr_model(c.model(0.02f, t2)));
  // consolidated: one full version holding what a full export at clock 30 holds
  const auto folded = consolidate_chain(dir, scratch.path + "/folded");
  CHECK(folded.model_sha256 == write_ctr_version(c.model(0.03f, t3), "{}", scratch.path + "/full")
                                 .model_sha256);

  SUBCASE("a damaged newest delta is skipped, named; the chain before it is served") {
    std::ofstream(v3.path + "/delta.capnp", std::ios::app) << "x";
    chain = load_export_chain(dir);
    REQUIRE(chain.skipped.size() == 1);
    CHECK(chain.skipped[0].rfind(v3.path + ": ", 0) == 0);
    CHECK(chain.skipped[0].find("delta.capnp: SHA-256") != std::string::npos);
    CHECK(chain.version == 2);
    CHECK(encode_ctr_model(std::get<ctr_model>(chain.model))
          == encode_ctr_model(c.model(0.02f, t2)));
  }
  SUBCASE("a delta that names another predecessor's bytes is refused, naming both links") {
    const auto v4 = write_delta(dir, c, 0.04f, t3, t3, v1, v3.version, 30, v2.model_sha256, 40);
    try {
      load_export_chain(dir);
      FAIL("a link of another chain was accepted");
    } catch (const export_chain_error& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find(v4.path + " builds on " + v3.path + " with SHA-256 " + v2.model_sha256)
            != std::string::npos);
    }
  }
  SUBCASE("a delta of its predecessor's clock is refused as a duplicate, naming it") {
    const auto v4 = write_delta(dir, c, 0.04f, t3, t3, v1, v3.version, 30, v3.model_sha256, 30);
    try {
      load_export_chain(dir);
      FAIL("a delta of its predecessor's clock was accepted");
    } catch (const export_chain_error& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find(v4.path + " holds clock 30, not after its predecessor " + v3.path)
            != std::string::npos);
      CHECK(msg.find("a duplicate, or out of order") != std::string::npos);
    }
  }
  SUBCASE("a gap is refused, naming the link") {
    std::filesystem::remove_all(v2.path);
    try {
      load_export_chain(dir);
      FAIL("a chain with a gap was accepted");
    } catch (const export_chain_error& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find(v3.path + " builds on " + v2.path + " (clock 20), which is missing")
            != std::string::npos);
    }
  }
}

} // namespace actorps
