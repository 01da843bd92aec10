// Whole in-process runs of a model with a sparse table: a probe plug-in whose keys depend only on
// (worker, clock), checked against a plain single-process loop applying the mean sparse
// gradient, against itself resumed from a checkpoint, and after a shard is killed.
#include "actors/chief/metrics.hpp"
#include "actors/ps/model_registry.hpp"
#include "actors/storage/checkpoint_resize.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/sparse/key_dedup.hpp"
#include "actors/ps/splitmix64.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/simulation_fixture.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

namespace actorps {

namespace {

namespace fs = std::filesystem;
using scratch = test::scratch_dir;
using test::synthetic_run;

constexpr uint32_t probe_dim = 4;
constexpr int probe_keys_per_batch = 12;

/// Keys 1..40 with repeats, a function of (worker, clock) alone.
std::vector<uint64_t> probe_keys(int worker, int64_t clock) {
  std::vector<uint64_t> keys;
  for (int i = 0; i < probe_keys_per_batch; ++i)
    keys.push_back(1 + splitmix64_mix(uint64_t(worker) * 1000003u + uint64_t(clock) * 101u + i) % 40);
  return keys;
}

float probe_target(uint64_t key, uint32_t j) { return float(key % 7) * 0.1f + float(j) * 0.01f; }

/// Pulls each row it uses toward a target of its key: grad = (row - target) / 4 per use.
class probe_trainer : public trainer {
public:
  explicit probe_trainer(int worker) : worker_(worker) {}
  void keys(int64_t clock, std::vector<std::vector<uint64_t>>& per_table) override {
    per_table[0] = probe_keys(worker_, clock);
  }
  step_loss step(int64_t clock, const float* params, float* grad,
                 std::vector<table_rows>& tables) override {
    auto keys = probe_keys(worker_, clock);
    auto& t = tables[0];
    step_loss loss;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      for (uint32_t j = 0; j < probe_dim; ++j) {
        auto at = std::size_t(t.inverse[i]) * probe_dim + j;
        auto d = t.values[at] - probe_target(keys[i], j);
        t.grads[at] += d * 0.25f;
        loss.loss_sum += 0.5 * d * d;
      }
    }
    grad[0] = params[0] - 0.5f;
    loss.rows = static_cast<int64_t>(keys.size());
    return loss;
  }

private:
  int worker_;
};

class probe_evaluation : public evaluation {
public:
  void keys(std::vector<std::vector<uint64_t>>& per_table) override {
    for (uint64_t k = 1; k <= 40; ++k) per_table[0].push_back(k);
  }
  eval_metrics evaluate(const float*, const std::vector<table_rows>& tables) override {
    const auto& t = tables[0];
    double sq = 0;
    for (std::size_t r = 0; r < t.keys.size(); ++r)
      for (uint32_t j = 0; j < probe_dim; ++j) {
        auto d = t.values[r * probe_dim + j] - probe_target(t.keys[r], j);
        sq += d * d;
      }
    eval_metrics m;
    m.rows = static_cast<int64_t>(t.keys.size());
    m.loss = sq / double(m.rows);
    m.auc = 1.0 / (1.0 + m.loss);  // not an AUC: a number that travels where one would
    return m;
  }
};

sparse_table_spec probe_table() {
  sparse_table_spec t;
  t.name = "emb";
  t.config.dim = probe_dim;
  t.config.init = row_init::uniform;
  t.config.scale = 0.1f;
  t.config.optimizer.kind = row_optimizer_kind::adagrad;
  t.config.optimizer.learning_rate = 0.2f;
  return t;
}

class probe_plugin : public model_plugin {
public:
  model_spec spec() const override {
    return {"sparse-probe", {{"bias", {1}, tensor_init::zeros, 0}}, {probe_table()}};
  }
  std::string check_data(int, int) const override { return ""; }
  std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const override {
    return std::make_unique<probe_trainer>(ctx.worker);
  }
  std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset>) const override {
    return std::make_unique<probe_evaluation>();
  }
};

/// A synthetic run (its data unused) of the probe with checkpoints under `dir` every `every`.
simulation_options probe_run(consistency mode, int workers, int64_t steps, const fs::path& dir,
                             int64_t every) {
  register_model("sparse-probe", [](const std::string&) { return std::make_unique<probe_plugin>(); });
  auto opts = synthetic_run(mode, workers, 2, steps, 2);
  auto& c = opts.chief;
  c.spec.model = probe_plugin().spec();
  c.spec.optimizer.kind = optimizer_kind::sgd;
  c.checkpoints.dir = dir.string();
  c.checkpoints.every = every;
  c.spec.checkpoint_every = every;
  return opts;
}

/// Every row in the newest checkpoint under `dir`, from all shards: key → values.
std::map<uint64_t, std::vector<float>> checkpoint_rows(const fs::path& dir) {
  auto ckpt = load_newest_checkpoint(dir);
  std::map<uint64_t, std::vector<float>> rows;
  for (const auto& file : ckpt.shards) {
    auto saved = decode_shard_checkpoint(file);
    REQUIRE(saved);
    REQUIRE(saved->sparse.size() == 1);
    const auto& t = saved->sparse[0];
    for (std::size_t i = 0; i < t.keys.size(); ++i)
      rows[t.keys[i]].assign(t.values.begin() + i * probe_dim, t.values.begin() + (i + 1) * probe_dim);
  }
  return rows;
}

/// Removes the rows of `keys` from `table` by hand (through its checkpoint form), as if their
/// keys had never been pushed.
void drop_rows(sparse_table& table, const std::set<uint64_t>& keys) {
  auto all = table.export_rows();
  sparse_table_rows kept;
  const std::size_t dim = table.config().dim, state = all.keys.empty() ? 0 : all.state.size() / all.keys.size();
  for (std::size_t i = 0; i < all.keys.size(); ++i) {
    if (keys.count(all.keys[i])) continue;
    kept.keys.push_back(all.keys[i]);
    kept.values.insert(kept.values.end(), all.values.begin() + i * dim, all.values.begin() + (i + 1) * dim);
    kept.state.insert(kept.state.end(), all.state.begin() + i * state, all.state.begin() + (i + 1) * state);
    kept.touches.push_back(all.touches[i]);
  }
  table.import_rows(kept);
}

/// The plain loop: every clock, each worker's gradient at the same rows, summed per key in
/// worker order, times 1/W, applied once. With `evict_after` > 0, before each clock's reads
/// (and at the end), the rows not pushed in the last evict_after clocks are dropped by hand
/// (the table itself evicts nothing); `evictions` counts them.
std::map<uint64_t, std::vector<float>> reference_rows(int workers, int64_t clocks, uint64_t seed,
                                                      uint32_t evict_after = 0,
                                                      uint64_t* evictions = nullptr) {
  auto table = probe_table();
  sparse_table ref(table.config, seed, 0);
  std::vector<std::unique_ptr<trainer>> trainers;
  for (int w = 0; w < workers; ++w) trainers.push_back(std::make_unique<probe_trainer>(w));
  float bias = 0, bias_grad = 0;
  std::map<uint64_t, int64_t> last_pushed;
  auto evict = [&](int64_t now) {
    std::set<uint64_t> gone;
    for (auto it = last_pushed.begin(); it != last_pushed.end();) {
      if (evict_after > 0 && now - it->second > int64_t(evict_after)) {
        gone.insert(it->first);
        it = last_pushed.erase(it);
      } else {
        ++it;
      }
    }
    if (gone.empty()) return;
    if (evictions) *evictions += gone.size();
    drop_rows(ref, gone);
  };
  for (int64_t c = 0; c < clocks; ++c) {
    evict(c);
    std::map<uint64_t, std::vector<float>> sum;
    for (int w = 0; w < workers; ++w) {
      std::vector<std::vector<uint64_t>> keys(1);
      trainers[w]->keys(c, keys);
      std::vector<table_rows> rows(1);
      rows[0].dim = probe_dim;
      dedup_keys(keys[0].data(), keys[0].size(), rows[0].keys, rows[0].inverse);
      rows[0].values.resize(rows[0].keys.size() * probe_dim);
      rows[0].grads.assign(rows[0].keys.size() * probe_dim, 0.0f);
      ref.read(rows[0].keys.data(), rows[0].keys.size(), rows[0].values.data());
      trainers[w]->step(c, &bias, &bias_grad, rows);
      for (std::size_t r = 0; r < rows[0].keys.size(); ++r) {
        auto& acc = sum[rows[0].keys[r]];
        acc.resize(probe_dim, 0.0f);
        for (uint32_t j = 0; j < probe_dim; ++j) acc[j] += rows[0].grads[r * probe_dim + j];
      }
    }
    std::vector<uint64_t> keys;
    std::vector<float> mean;
    for (auto& [k, g] : sum) {
      keys.push_back(k);
      for (auto v : g) mean.push_back(v * (1.0f / float(workers)));
    }
    ref.apply(keys.data(), keys.size(), mean.data(), 1.0f);
    for (auto k : keys) last_pushed[k] = c;
  }
  evict(clocks);
  auto all = ref.export_rows();
  std::map<uint64_t, std::vector<float>> rows;
  for (std::size_t i = 0; i < all.keys.size(); ++i)
    rows[all.keys[i]].assign(all.values.begin() + i * probe_dim, all.values.begin() + (i + 1) * probe_dim);
  return rows;
}

double max_abs_diff(const std::map<uint64_t, std::vector<float>>& a,
                    const std::map<uint64_t, std::vector<float>>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    REQUIRE(it != b.end());
    for (uint32_t j = 0; j < probe_dim; ++j)
      worst = std::max(worst, double(std::fabs(v[j] - it->second[j])));
  }
  return worst;
}

/// The shard files of the newest checkpoint under `dir`, byte for byte.
std::vector<std::string> checkpoint_bytes(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& f : load_newest_checkpoint(dir).shards)
    out.emplace_back(reinterpret_cast<const char*>(f.bytes()), f.size_bytes());
  return out;
}

} // namespace

TEST_CASE("sync: W workers' sparse rows equal a single-process loop applying the mean gradient") {
  constexpr int workers = 3;
  constexpr int64_t clocks = 30;
  scratch dir;
  auto opts = probe_run(consistency::sync, workers, clocks, dir.path, clocks);
  auto seed = opts.chief.spec.seed;
  auto run = simulate(std::move(opts));
  REQUIRE(run);
  auto got = checkpoint_rows(dir.path);
  auto want = reference_rows(workers, clocks, seed);
  CHECK(got.size() > 30);  // most of the 40 keys were pushed
  CHECK(max_abs_diff(got, want) <= 1e-6);
  // the rows per shard in the summary are the checkpoint's, and the evaluator read all 40 keys
  uint64_t rows = 0;
  for (const auto& s : run->shard_stats_list) rows += s.table_rows.at(0);
  CHECK(rows == got.size());
  CHECK(run->final_test_auc > 0.5);
}

TEST_CASE("sync: a sparse run resumed from its checkpoint ends with the same rows bit for bit") {
  constexpr int64_t n = 12;
  scratch whole_dir, resumed_dir;
  auto whole = simulate(probe_run(consistency::sync, 2, 2 * n, whole_dir.path, n));
  REQUIRE(whole);
  auto opts = probe_run(consistency::sync, 2, 2 * n, resumed_dir.path, n);
  opts.chief.checkpoints.resume = load_newest_checkpoint(fs::path(whole_dir.path) / checkpoint_dir_name(n));
  auto resumed = simulate(std::move(opts));
  REQUIRE(resumed);
  CHECK(resumed->resumed_from == n);
  auto a = checkpoint_bytes(whole_dir.path), b = checkpoint_bytes(resumed_dir.path);
  REQUIRE(a.size() == 2);
  CHECK(a == b);
}

/// probe_run with every row evicted after `clocks` clocks without a push.
static simulation_options evicting(simulation_options opts, uint32_t clocks) {
  opts.chief.spec.model.sparse_tables.at(0).config.evict_after = clocks;
  return opts;
}

TEST_CASE("sync eviction: rows evicted and re-created equal a loop that evicts them by hand") {
  constexpr int workers = 3;
  constexpr int64_t clocks = 30;
  constexpr uint32_t after = 2;
  scratch dir, files;
  const auto metrics = (fs::path(files.path) / "metrics.jsonl").string();
  auto opts = evicting(probe_run(consistency::sync, workers, clocks, dir.path, clocks), after);
  opts.chief.metrics = std::make_shared<metrics_file>(metrics);
  auto seed = opts.chief.spec.seed;
  auto run = simulate(std::move(opts));
  REQUIRE(run);
  uint64_t evictions = 0;
  auto got = checkpoint_rows(dir.path);
  auto want = reference_rows(workers, clocks, seed, after, &evictions);
  CHECK(evictions > 10);  // keys went quiet, and most came back
  CHECK(max_abs_diff(got, want) <= 1e-6);  // the same keys, the same values
  CHECK(reference_rows(workers, clocks, seed).size() > got.size());  // eviction mattered

  // The run's own account: rows now and at their peak, evicted, pending, bytes, per shard.
  auto summary = test::metrics_summary(metrics);
  REQUIRE(summary.is_object());
  REQUIRE(summary["sparse_rows"].size() == 2);
  uint64_t rows = 0, peak = 0, evicted = 0;
  for (int s = 0; s < 2; ++s) {
    CAPTURE(s);
    auto now = summary["sparse_rows"][s][0].get<uint64_t>();
    auto most = summary["sparse_rows_peak"][s][0].get<uint64_t>();
    CHECK(most >= now);
    CHECK(summary["pending_keys"][s].get<uint64_t>() == 0);
    CHECK(summary["table_bytes"][s].get<uint64_t>() > 0);
    rows += now;
    peak += most;
    evicted += summary["rows_evicted"][s].get<uint64_t>();
  }
  // Every eviction of the loop happened on a shard, or is a stale row its sweep had not
  // reached yet (in no checkpoint, read by nobody).
  CHECK(rows >= got.size());
  CHECK(evicted + (rows - got.size()) == evictions);
  CHECK(peak > got.size());
}

TEST_CASE("sync eviction: a run resumed from its checkpoint evicts as the run without restart") {
  // Rows last pushed before the checkpoint's clock: restored with another clock, they would
  // live longer (or go sooner) than in the run without the restart, and end differently.
  constexpr int64_t n = 12;
  scratch whole_dir, resumed_dir;
  auto whole = simulate(evicting(probe_run(consistency::sync, 2, 2 * n, whole_dir.path, n), 3));
  REQUIRE(whole);
  auto opts = evicting(probe_run(consistency::sync, 2, 2 * n, resumed_dir.path, n), 3);
  opts.chief.checkpoints.resume = load_newest_checkpoint(fs::path(whole_dir.path) / checkpoint_dir_name(n));
  auto resumed = simulate(std::move(opts));
  REQUIRE(resumed);
  CHECK(resumed->resumed_from == n);
  uint64_t evicted = 0;
  for (const auto& s : whole->shard_stats_list) evicted += s.rows_evicted;
  CHECK(evicted > 5);
  auto a = checkpoint_bytes(whole_dir.path), b = checkpoint_bytes(resumed_dir.path);
  REQUIRE(a.size() == 2);
  CHECK(a == b);
}

TEST_CASE("a shard killed mid-run comes back with its sparse rows, and ssp and async train them") {
  scratch clean_dir, faulty_dir;
  auto clean = simulate(probe_run(consistency::sync, 3, 40, clean_dir.path, 10));
  REQUIRE(clean);
  auto opts = probe_run(consistency::sync, 3, 40, faulty_dir.path, 10);
  opts.chief.slow_ms = {2, 2, 2};  // a few ms per clock: the checkpoints complete before the kill
  planned_kill kill;
  kill.target = planned_kill::role::ps;
  kill.index = 0;
  kill.at_clock = 25;
  opts.chief.kills = {kill};
  auto faulty = simulate(std::move(opts));
  REQUIRE(faulty);
  CHECK(faulty->failures == 1);
  CHECK(faulty->recoveries == 1);
  CHECK(faulty->resumed_from == -1);
  auto restored = load_newest_checkpoint(faulty_dir.path);
  CHECK(restored.clock == 40);
  // sync replays the lost clocks from the checkpoint exactly: the same rows, bit for bit
  CHECK(checkpoint_bytes(clean_dir.path) == checkpoint_bytes(faulty_dir.path));

  for (auto mode : {consistency::ssp, consistency::async}) {
    CAPTURE(std::string(to_string(mode)));
    scratch dir;
    auto run = simulate(probe_run(mode, 3, 40, dir.path, 40));
    REQUIRE(run);
    std::set<uint64_t> pushed;
    for (int w = 0; w < 3; ++w)
      for (int64_t c = 0; c < 40; ++c)
        for (auto k : probe_keys(w, c)) pushed.insert(k);
    CHECK(checkpoint_rows(dir.path).size() == pushed.size());
    // trained: the rows start about 0.55 (squared distance per key) from their targets
    CHECK(run->final_test_loss < 0.15);
  }
}

/// probe_run whose keys get a row on their third push, counted in a sketch of `memory` bytes
/// (0: exactly), with rows and exact counts dropped after `evict` quiet clocks.
static simulation_options admitting(simulation_options opts, uint64_t memory, uint32_t evict) {
  auto& cfg = opts.chief.spec.model.sparse_tables.at(0).config;
  cfg.admit_after = 3;
  cfg.admission_memory = memory;
  cfg.evict_after = evict;
  return opts;
}

TEST_CASE("sync admission: sketch and quiet exact counts resume bit for bit, within the budget") {
  constexpr int64_t n = 12;
  constexpr uint64_t budget = 2048;
  for (auto [memory, evict] : {std::pair<uint64_t, uint32_t>{budget, 0}, {0, 2}}) {
    CAPTURE(memory);
    scratch whole_dir, resumed_dir;
    auto whole = simulate(admitting(probe_run(consistency::sync, 2, 2 * n, whole_dir.path, n),
                                    memory, evict));
    REQUIRE(whole);
    auto opts = admitting(probe_run(consistency::sync, 2, 2 * n, resumed_dir.path, n), memory,
                          evict);
    opts.chief.checkpoints.resume =
      load_newest_checkpoint(fs::path(whole_dir.path) / checkpoint_dir_name(n));
    auto resumed = simulate(std::move(opts));
    REQUIRE(resumed);
    CHECK(resumed->resumed_from == n);
    uint64_t rows = 0, pending = 0;
    for (const auto& s : whole->shard_stats_list) {
      rows += s.table_rows.at(0);
      pending += s.pending_keys;
      CHECK(s.admission_bytes > 0);
      if (memory > 0) CHECK(s.admission_bytes <= memory);  // the shard's own account
    }
    CHECK(rows > 10);                     // keys pushed thrice got rows
    if (memory == 0) CHECK(rows < 40);    // not every key kept one: quiet ones left
    if (memory > 0) CHECK(pending > 0);   // the sketch holds counts still
    auto a = checkpoint_bytes(whole_dir.path), b = checkpoint_bytes(resumed_dir.path);
    REQUIRE(a.size() == 2);
    CHECK(a == b);
    // The checkpoint holds the admission state: the sketch, or exact counts with their clocks.
    for (const auto& file : load_newest_checkpoint(whole_dir.path).shards) {
      auto saved = decode_shard_checkpoint(file);
      REQUIRE(saved);
      const auto& t = saved->sparse.at(0);
      if (memory > 0) {
        CHECK(t.sketch.depth == admission_sketch::default_depth);
        CHECK(t.sketch.counters.size() + sizeof(admission_sketch) <= memory);
      } else {
        CHECK(t.sketch.depth == 0);
        CHECK(t.pending_clocks.size() == t.pending_keys.size());
      }
    }
  }
}

TEST_CASE("sync eviction: a sparse run resumed at 1 or 3 shards ends with the rows of 2") {
  constexpr int64_t n = 12;
  constexpr uint32_t after = 2;  // rows evicted and re-created across the resume
  scratch whole_dir;
  auto whole = simulate(evicting(probe_run(consistency::sync, 2, 2 * n, whole_dir.path, n), after));
  REQUIRE(whole);
  const auto want = checkpoint_rows(whole_dir.path);
  REQUIRE(want.size() > 10);
  for (int shards : {1, 3}) {
    CAPTURE(shards);
    scratch dir;
    auto opts = evicting(probe_run(consistency::sync, 2, 2 * n, dir.path, n), after);
    auto saved = load_newest_checkpoint(fs::path(whole_dir.path) / checkpoint_dir_name(n));
    auto run = decode_run_checkpoint(saved.run_bytes);
    REQUIRE(run);
    REQUIRE(run->spec.shards == 2);
    opts.chief.spec.shards = shards;  // as --resume --ps N places it
    opts.chief.spec.bucket_shards = resumed_placement(run->spec, shards);
    opts.chief.checkpoints.resume = std::move(saved);
    auto resumed = simulate(std::move(opts));
    REQUIRE(resumed);
    CHECK(resumed->resumed_from == n);
    CHECK(resumed->shard_stats_list.size() == std::size_t(shards));
    CHECK(load_newest_checkpoint(dir.path).shards.size() == std::size_t(shards));
    CHECK(checkpoint_rows(dir.path) == want);
  }
}

} // namespace actorps
