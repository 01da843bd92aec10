// actorps_bench_delta_export: what a delta export version costs on a large CTR table, against
// how many rows changed, through the code a run uses: the shard's side (the state at the
// version's clock cut and encoded as a ShardCheckpoint) and the writer's (the states decoded,
// the changed rows made into a model, delta.capnp and metadata.json written, fsynced, published).
//
// A DLRM table (dim --dim) of --rows rows over Criteo's 26 fields is filled; then for each share
// in --touch, that share of its rows is pushed and one delta version written two ways:
//   changed   as runs write them: the shard picks the rows pushed since by their clock
//             (sparse_table::changed_rows) and sends those; the writer writes what it got;
//   compared  as runs wrote them before: the shard sends its whole table, the writer compares
//             every row with the previous version's table (diff_rows) to find the changed.
// Both give the same rows (checked). Also the full model.capnp of the table (encoded only: a full
// version adds model.onnx, the vocabularies and the test split's evaluation). Prints one JSON
// object.
#include "actors/ps/criteo_keys.hpp"
#include "actors/model/dlrm_plugin.hpp"
#include "actors/serving/ctr_model_file.hpp"
#include "actors/serving/export_after_run.hpp"
#include "actors/serving/export_chain.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/sparse/sparse_table.hpp"
#include "actors/ps/splitmix64.hpp"

#include "apps/bench/bench_main.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace actorps;
using ordered_json = nlohmann::ordered_json;

namespace {

struct options {
  uint64_t rows = 2000000;
  uint32_t dim = 16;
  std::string touch = "0.001,0.01,0.05,0.2";
  std::string dir;
  std::vector<double> shares;
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

train_spec bench_spec(const options& o) {
  train_spec spec;
  spec.model = dlrm_model(parse_dlrm_shape(std::to_string(o.dim) + ":16:16"));
  auto& cfg = spec.model.sparse_tables.at(0).config;
  cfg.admit_after = 0;  // every key pushed has a row
  cfg.evict_after = 0;
  spec.optimizer.kind = optimizer_kind::sgd;
  spec.shards = 1;
  spec.workers = 1;
  spec.total_clocks = 1000000;
  place_buckets(spec);
  return spec;
}

/// The i-th key of the table: a value of field i % 26.
uint64_t key_of(uint64_t i) {
  return criteo_key(static_cast<int>(i % 26), std::to_string(i));
}

int run(const options& o) {
  const auto spec = bench_spec(o);
  const block_layout layout(spec);
  const auto root = fs::path(o.dir.empty() ? fs::temp_directory_path() / "actorps-delta-export-bench"
                                           : fs::path(o.dir));
  fs::remove_all(root);
  fs::create_directories(root);
  sparse_table table(spec.model.sparse_tables[0].config, 1, 0);
  std::vector<float> dense(layout.shard_floats(0), 0.01f);
  std::vector<uint64_t> keys;
  std::vector<float> grads;
  auto push = [&](const std::vector<uint64_t>& which, int64_t clock) {
    grads.assign(which.size() * o.dim, 0.01f);
    table.apply(which.data(), which.size(), grads.data(), 1.0f, clock);
  };
  auto started = std::chrono::steady_clock::now();
  constexpr uint64_t batch = 65536;
  for (uint64_t at = 0; at < o.rows; at += batch) {
    keys.clear();
    for (uint64_t i = at; i < std::min(o.rows, at + batch); ++i) keys.push_back(key_of(i));
    push(keys, 1);
  }
  ordered_json out;
  out["rows"] = o.rows;
  out["dim"] = o.dim;
  out["fill_ms"] = ms_since(started);
  auto state = [&](int64_t clock, std::vector<sparse_table_rows> rows, int64_t since) {
    return encode_shard_checkpoint(spec, 0, clock, uint64_t(clock), clock, layout, dense.data(),
                                   nullptr, 0, rows, since);
  };

  // the full version's model.capnp, and the table as that version left it (for `compared`)
  started = std::chrono::steady_clock::now();
  auto whole = shard_state_changes({state(1, {table.export_rows(1)}, -1)}, spec, "bench");
  const auto full = encode_ctr_model(make_ctr_model(spec.model, whole.params.dense,
                                                    whole.params.tables[0]));
  out["full_model_capnp_bytes"] = full.size();
  out["full_model_capnp_ms"] = ms_since(started);
  gathered_rows previous = std::move(whole.params.tables[0]);

  chain_position pos;
  pos.delta = true;
  pos.base_version = 1;
  pos.base_clock = 1;
  pos.base_sha256 = std::string(64, '0');
  pos.predecessor_version = 1;
  pos.predecessor_sha256 = pos.base_sha256;
  auto list = ordered_json::array();
  int64_t clock = 1;
  for (double share : o.shares) {
    ++clock;
    // a share of the rows, spread over the table, pushed at this clock
    keys.clear();
    const auto every = static_cast<uint64_t>(1.0 / share);
    for (uint64_t i = splitmix64_mix(uint64_t(clock)) % every; i < o.rows; i += every)
      keys.push_back(key_of(i));
    push(keys, clock);
    pos.clock = clock;
    pos.predecessor_clock = clock - 1;
    ordered_json row;
    row["touch_share"] = share;
    row["rows_pushed"] = keys.size();
    const int64_t since = clock;  // the previous version's state held every earlier push

    // changed: the shard's cut, the writer's version
    started = std::chrono::steady_clock::now();
    auto cut = state(clock, {table.changed_rows(since, clock)}, since);
    const double shard_ms = ms_since(started);
    started = std::chrono::steady_clock::now();
    auto got = shard_state_changes({cut}, spec, "bench");
    auto done = write_delta_version((root / "changed").string(),
                                    make_ctr_model(spec.model, got.params.dense,
                                                   got.params.tables[0]),
                                    got.removed[0], pos, std::chrono::system_clock::now());
    row["changed"] = {{"rows_sent", got.rows}, {"state_bytes", cut.size_bytes()},
                      {"shard_ms", shard_ms}, {"writer_ms", ms_since(started)},
                      {"version_bytes", done.capnp_bytes + done.metadata_bytes}};
    const auto changed_keys = got.params.tables[0].keys;

    // compared: the whole state, each row compared with the previous version's
    started = std::chrono::steady_clock::now();
    auto all = state(clock, {table.export_rows(clock)}, -1);
    const double whole_shard_ms = ms_since(started);
    started = std::chrono::steady_clock::now();
    auto now = shard_state_changes({all}, spec, "bench");
    auto changes = diff_rows(previous, now.params.tables[0], o.dim);
    auto old = write_delta_version((root / "compared").string(),
                                   make_ctr_model(spec.model, now.params.dense, changes.rows),
                                   changes.removed, pos, std::chrono::system_clock::now());
    row["compared"] = {{"rows_sent", now.rows}, {"state_bytes", all.size_bytes()},
                       {"shard_ms", whole_shard_ms}, {"writer_ms", ms_since(started)},
                       {"version_bytes", old.capnp_bytes + old.metadata_bytes}};
    row["same_rows"] = changes.rows.keys == changed_keys && changes.removed.empty();
    previous = std::move(now.params.tables[0]);
    list.push_back(std::move(row));
  }
  out["versions"] = std::move(list);
  if (o.dir.empty()) fs::remove_all(root);
  std::printf("%s\n", out.dump(2).c_str());
  for (const auto& v : out["versions"])
    if (!v["same_rows"].get<bool>()) return 1;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  po::options_description desc("flags");
  desc.add_options()("help", "this text")(
    "rows", po::value(&o.rows)->default_value(o.rows), "rows in the table")(
    "dim", po::value(&o.dim)->default_value(o.dim), "floats per row")(
    "touch", po::value(&o.touch)->default_value(o.touch),
    "shares of the rows pushed before each delta, comma-separated, each in (0, 1]")(
    "dir", po::value(&o.dir), "where the versions go (default: a temporary directory, removed)");
  return run_benchmark(
    "actorps_bench_delta_export", argc, argv, desc,
    [&] {
      if (o.rows < 1000) throw po::error("--rows must be 1000 or more");
      if (o.dim < 1 || o.dim > 256) throw po::error("--dim must be in [1, 256]");
      std::stringstream in(o.touch);
      for (std::string part; std::getline(in, part, ',');) {
        double share = 0;
        try {
          share = std::stod(part);
        } catch (const std::exception&) {
          throw po::error("--touch: '" + part + "' is not a number");
        }
        if (!(share > 0 && share <= 1)) throw po::error("--touch: each share must be in (0, 1]");
        o.shares.push_back(share);
      }
      if (o.shares.empty()) throw po::error("--touch names no share");
    },
    [&] { return run(o); });
}
