// actorps_bench_delta_checkpoint: what a delta checkpoint costs against a full one, on one
// shard's sparse table, through the same code a run uses (sparse_table::export_rows or
// changed_rows, encode_shard_checkpoint, write_file_durably, commit_checkpoint, load_chain).
//
// Default: a table of --rows rows (dim --dim, Adagrad) is written as a full checkpoint; then
// --deltas times, a random --touch share of its rows is pushed (the keys between two
// checkpoints) and a delta checkpoint written. Reports per checkpoint its bytes, its write time
// (export, encode, write and fsync, manifest; each part too) and the rows it holds; then a full
// checkpoint of the last clock written directly, and the time to restore the chain (load_chain: every file
// verified, the chain folded into whole states), checked byte for byte against that full one.
//
// --inspect DIR: instead, describes the checkpoints a run wrote under DIR (each ckpt-*): clock,
// kind, bytes, the rows its shard files hold, and for a delta the rows of the state it restores
// (so the share of rows it carries). Prints one JSON object.
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/sparse/row_optimizer.hpp"
#include "kernels/sparse/sparse_table.hpp"
#include "actors/ps/splitmix64.hpp"

#include "apps/bench/bench_main.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace actorps;
using ordered_json = nlohmann::ordered_json;

namespace {

struct options {
  uint64_t rows = 10000000;
  uint32_t dim = 8;
  double touch = 0.05;
  int deltas = 10;
  std::string dir;
  std::string inspect;
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

train_spec bench_spec(const options& o) {
  train_spec spec;
  spec.model.name = "delta-bench";
  spec.model.tensors = {{"bias", {1}, tensor_init::zeros, 0}};
  sparse_table_spec t;
  t.name = "emb";
  t.config.dim = o.dim;
  t.config.init = row_init::uniform;
  t.config.scale = 0.01f;
  t.config.optimizer.kind = row_optimizer_kind::adagrad;
  t.config.optimizer.learning_rate = 0.05f;
  spec.model.sparse_tables = {t};
  spec.shards = 1;
  spec.workers = 1;
  spec.total_clocks = 1000000;
  spec.checkpoint_every = 10;
  place_buckets(spec);
  return spec;
}

uint64_t rows_in(const wire_buffer& file) {
  auto view = decode_shard_checkpoint(file);
  if (!view) throw std::runtime_error(describe(view.error()));
  uint64_t n = 0;
  for (const auto& t : view->sparse) n += t.keys.size();
  return n;
}

/// Writes the checkpoint at `clock` of `table` (its changes since `since`, or whole with -1).
ordered_json write_one(const fs::path& root, const train_spec& spec, const block_layout& layout,
                       const sparse_table& table, int64_t clock, int64_t since,
                       checkpoint_link& chain) {
  auto started = std::chrono::steady_clock::now();
  auto dir = prepare_checkpoint_dir(root, clock, "bench");
  // as a shard does: the whole state kept, or (the chief said the next is a delta) only the
  // rows changed since, chosen by their last clock
  std::vector<sparse_table_rows> rows{since < 0 ? table.export_rows(clock)
                                                : table.changed_rows(since, clock)};
  const uint64_t n = rows[0].keys.size();
  const double cut_ms = ms_since(started);
  auto encoding = std::chrono::steady_clock::now();
  float bias = 0, state = 0;
  auto buf = encode_shard_checkpoint(spec, 0, clock, uint64_t(clock), clock - 1, layout, &bias,
                                     &state, optimizer_state_slots(spec.optimizer.kind), rows,
                                     since);
  rows.clear();
  const double encode_ms = ms_since(encoding);
  auto writing = std::chrono::steady_clock::now();
  auto rec = write_file_durably(dir / shard_file_name(0), buf.bytes(), buf.size_bytes());
  rec.delta_since = since;
  run_checkpoint run;
  run.spec = spec;
  run.clock = clock;
  run.batch = 1;
  run.steps = spec.total_clocks;
  run.positions = {{0, clock, 0, clock}};
  run.run_id = "bench";
  auto sha = commit_checkpoint(dir, clock, {rec}, encode_run_checkpoint(run), 0, "",
                               since < 0 ? checkpoint_link{} : chain);
  if (since < 0) chain = {clock, sha, clock, sha};
  else chain.predecessor_clock = clock, chain.predecessor_sha256 = sha;
  ordered_json out;
  out["clock"] = clock;
  out["kind"] = since < 0 ? "full" : "delta";
  out["bytes"] = rec.bytes;
  out["write_ms"] = ms_since(started);
  out["export_ms"] = cut_ms;    // the table's rows copied out (a delta: the changed ones)
  out["encode_ms"] = encode_ms;
  out["disk_ms"] = ms_since(writing);  // the file written and synced, run.capnp, the manifest
  out["rows"] = n;
  return out;
}

int run_table(const options& o) {
  auto spec = bench_spec(o);
  block_layout layout(spec);
  const auto root = fs::path(o.dir.empty() ? fs::temp_directory_path() / "actorps-delta-bench"
                                           : fs::path(o.dir));
  fs::remove_all(root);
  sparse_table table(spec.model.sparse_tables[0].config, 1, 0);
  std::vector<uint64_t> keys;
  std::vector<float> grads;
  auto push = [&](uint64_t first, uint64_t count, uint64_t stride, int64_t clock) {
    constexpr uint64_t batch = 65536;
    for (uint64_t at = 0; at < count; at += batch) {
      const uint64_t n = std::min(batch, count - at);
      keys.resize(n);
      for (uint64_t i = 0; i < n; ++i)
        keys[i] = splitmix64_mix(((first + (at + i) * stride) % o.rows) + 1);
      grads.assign(n * o.dim, 0.01f);
      table.apply(keys.data(), n, grads.data(), 1.0f, clock);
    }
  };
  auto started = std::chrono::steady_clock::now();
  push(0, o.rows, 1, 0);
  const double fill_ms = ms_since(started);
  ordered_json out;
  out["rows"] = o.rows;
  out["dim"] = o.dim;
  out["touch_share"] = o.touch;
  out["fill_ms"] = fill_ms;
  checkpoint_link chain;
  int64_t clock = 10;
  auto list = ordered_json::array();  // into `out` at the end: its keys live in a vector
  list.push_back(write_one(root, spec, layout, table, clock, -1, chain));
  const auto touched = static_cast<uint64_t>(double(o.rows) * o.touch);
  for (int d = 0; d < o.deltas; ++d) {
    // the rows pushed between two checkpoints: a strided slice, different each time
    push(splitmix64_mix(uint64_t(d)) % o.rows, touched, 7919, clock + 5);
    list.push_back(write_one(root, spec, layout, table, clock + 10, clock, chain));
    clock += 10;
  }
  // the last clock written whole, aside, against which the chain's restore is checked
  const auto whole_root = root / "whole";
  checkpoint_link unused;
  out["full_at_last_clock"] = write_one(whole_root, spec, layout, table, clock, -1, unused);
  started = std::chrono::steady_clock::now();
  auto restored = load_chain(root / checkpoint_dir_name(clock));
  out["restore_chain_ms"] = ms_since(started);
  out["restore_chain_links"] = restored.chain.size();
  started = std::chrono::steady_clock::now();
  auto whole = load_chain(whole_root / checkpoint_dir_name(clock));
  out["restore_full_ms"] = ms_since(started);
  out["restored_identical"] =
    restored.shards.size() == 1 && whole.shards.size() == 1
    && restored.shards[0].size_bytes() == whole.shards[0].size_bytes()
    && std::memcmp(restored.shards[0].bytes(), whole.shards[0].bytes(),
                   whole.shards[0].size_bytes()) == 0;
  std::vector<double> delta_bytes;
  for (const auto& c : list)
    if (c["kind"] == "delta") delta_bytes.push_back(c["bytes"].get<double>());
  std::sort(delta_bytes.begin(), delta_bytes.end());
  std::vector<double> all_bytes;
  for (const auto& c : list) all_bytes.push_back(c["bytes"].get<double>());
  std::sort(all_bytes.begin(), all_bytes.end());
  out["median_checkpoint_over_full"] =
    all_bytes[all_bytes.size() / 2] / list[0]["bytes"].get<double>();
  out["checkpoints"] = std::move(list);
  if (o.dir.empty()) fs::remove_all(root);
  std::printf("%s\n", out.dump(2).c_str());
  return out["restored_identical"].get<bool>() ? 0 : 1;
}

int run_inspect(const options& o) {
  auto list = ordered_json::array();
  std::vector<std::pair<int64_t, fs::path>> dirs;
  for (const auto& e : fs::directory_iterator(o.inspect)) {
    auto name = e.path().filename().string();
    auto clock = checkpoint_clock_of(name);
    if (clock && name == checkpoint_dir_name(*clock) && fs::exists(e.path() / manifest_name))
      dirs.emplace_back(*clock, e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& [clock, dir] : dirs) {
    auto own = load_checkpoint(dir);
    uint64_t bytes = 0, rows = 0;
    for (const auto& f : fs::directory_iterator(dir)) bytes += fs::file_size(f.path());
    for (const auto& f : own.shards) rows += rows_in(f);
    ordered_json c;
    c["clock"] = clock;
    c["kind"] = own.link.base_clock < 0 ? "full" : "delta";
    c["bytes"] = bytes;
    c["rows"] = rows;
    if (own.link.base_clock >= 0) {
      uint64_t state_rows = 0;
      for (const auto& f : load_chain(dir).shards) state_rows += rows_in(f);
      c["state_rows"] = state_rows;
      c["row_share"] = state_rows ? double(rows) / double(state_rows) : 0.0;
    } else {
      c["state_rows"] = rows;
      c["row_share"] = 1.0;
    }
    list.push_back(c);
  }
  ordered_json out;
  out["checkpoints"] = std::move(list);
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  po::options_description desc("actorps_bench_delta_checkpoint");
  desc.add_options()
    ("help", "this text")
    ("rows", po::value(&o.rows)->default_value(o.rows), "rows of the table")
    ("dim", po::value(&o.dim)->default_value(o.dim), "floats per row")
    ("touch", po::value(&o.touch)->default_value(o.touch),
     "share of the rows pushed between two checkpoints")
    ("deltas", po::value(&o.deltas)->default_value(o.deltas),
     "delta checkpoints after the full one")
    ("dir", po::value(&o.dir),
     "write the checkpoints here (default: a temporary directory, removed)")
    ("inspect", po::value(&o.inspect), "describe the checkpoints a run wrote under DIR instead");
  return run_benchmark("actorps_bench_delta_checkpoint", argc, argv, desc,
    [&] {
      if (o.rows == 0 || o.dim == 0) throw po::error("--rows and --dim must be positive");
      if (!(o.touch > 0 && o.touch <= 1)) throw po::error("--touch must be in (0, 1]");
      if (o.deltas < 1) throw po::error("--deltas must be at least 1");
    },
    [&] { return o.inspect.empty() ? run_table(o) : run_inspect(o); });
}
