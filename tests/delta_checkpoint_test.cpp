// Delta checkpoints: a table's changes since a clock folded onto its state then give its state
// now; a run's chain of deltas restores byte for byte what full checkpoints of the same clocks
// hold (and a sync run that loses a shard and goes back to a chain ends as the run without the
// loss); a broken chain is refused, naming the link, and the newest complete prefix used; and
// --keep keeps every link a kept checkpoint needs.
#include "actors/chief/metrics.hpp"
#include "actors/ps/model_registry.hpp"
#include "actors/protocol/digest.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/sparse/row_optimizer.hpp"
#include "actors/ps/splitmix64.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/simulation_fixture.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <set>

namespace actorps {

namespace {

namespace fs = std::filesystem;
using scratch = test::scratch_dir;

constexpr uint32_t dim = 4;

/// 12 keys of 1..400 per (worker, clock), and from clock 20 on only keys 1..200: the others go
/// quiet (evicted, with eviction on).
std::vector<uint64_t> delta_keys(int worker, int64_t clock) {
  std::vector<uint64_t> keys;
  const uint64_t range = clock >= 20 ? 200 : 400;
  for (int i = 0; i < 12; ++i) {
    auto k = 1 + splitmix64_mix(uint64_t(worker) * 1000003u + uint64_t(clock) * 101u + i) % range;
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  return keys;
}

class delta_trainer : public trainer {
public:
  explicit delta_trainer(int worker) : worker_(worker) {}
  void keys(int64_t clock, std::vector<std::vector<uint64_t>>& per_table) override {
    per_table[0] = delta_keys(worker_, clock);
  }
  step_loss step(int64_t clock, const float* params, float* grad,
                 std::vector<table_rows>& tables) override {
    auto keys = delta_keys(worker_, clock);
    auto& t = tables[0];
    step_loss loss;
    for (std::size_t i = 0; i < keys.size(); ++i)
      for (uint32_t j = 0; j < dim; ++j) {
        auto at = std::size_t(t.inverse[i]) * dim + j;
        auto d = t.values[at] - float(keys[i] % 5) * 0.1f;
        t.grads[at] += d * 0.25f;
        loss.loss_sum += 0.5 * d * d;
      }
    grad[0] = params[0] - 0.5f;
    loss.rows = static_cast<int64_t>(keys.size());
    return loss;
  }

private:
  int worker_;
};

class delta_evaluation : public evaluation {
public:
  void keys(std::vector<std::vector<uint64_t>>& per_table) override { per_table[0] = {1, 2, 3}; }
  eval_metrics evaluate(const float*, const std::vector<table_rows>&) override {
    eval_metrics m;
    m.rows = 3;
    m.loss = 1;
    m.auc = 0.5;
    return m;
  }
};

class delta_plugin : public model_plugin {
public:
  model_spec spec() const override {
    sparse_table_spec t;
    t.name = "emb";
    t.config.dim = dim;
    t.config.init = row_init::uniform;
    t.config.scale = 0.1f;
    t.config.optimizer.kind = row_optimizer_kind::adam;
    t.config.optimizer.learning_rate = 0.05f;
    return {"delta-probe", {{"bias", {1}, tensor_init::zeros, 0}}, {t}};
  }
  std::string check_data(int, int) const override { return ""; }
  std::unique_ptr<trainer> make_trainer(const trainer_context& ctx) const override {
    return std::make_unique<delta_trainer>(ctx.worker);
  }
  std::unique_ptr<evaluation> make_evaluation(std::shared_ptr<const dataset>) const override {
    return std::make_unique<delta_evaluation>();
  }
};

/// A sync run of the probe on 2 shards, checkpointing every `every` clocks under `dir`, every
/// `full_every`-th one full; rows evicted after `evict_after` quiet clocks (0: never), keys
/// admitted at their `admit_after`-th push.
simulation_options delta_run(int64_t steps, const fs::path& dir, int64_t every, int full_every,
                             uint32_t evict_after = 0, uint32_t admit_after = 1) {
  register_model("delta-probe", [](const std::string&) { return std::make_unique<delta_plugin>(); });
  auto opts = test::synthetic_run(consistency::sync, 2, 2, steps);
  auto& c = opts.chief;
  c.spec.model = delta_plugin().spec();
  c.spec.model.sparse_tables[0].config.evict_after = evict_after;
  c.spec.model.sparse_tables[0].config.admit_after = admit_after;
  c.spec.optimizer.kind = optimizer_kind::adam;
  c.checkpoints.dir = dir.string();
  c.checkpoints.every = every;
  c.checkpoints.keep = 100;
  c.checkpoints.full_every = full_every;
  c.spec.checkpoint_every = every;
  // a few ms a clock, so that the chief keeps up with the shards (on a loaded machine it may not:
  // a checkpoint the shards are past is skipped, and the tests take the chain as written)
  c.slow_ms = {5, 5};
  return opts;
}

std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> shard_bytes(const loaded_checkpoint& ckpt) {
  std::vector<std::string> out;
  for (const auto& f : ckpt.shards)
    out.emplace_back(reinterpret_cast<const char*>(f.bytes()), f.size_bytes());
  return out;
}

/// The shard files of the checkpoint in `dir` as written.
std::vector<std::string> written_bytes(const fs::path& dir, int shards = 2) {
  std::vector<std::string> out;
  for (int s = 0; s < shards; ++s) out.push_back(file_bytes(dir / shard_file_name(s)));
  return out;
}

nlohmann::json manifest_of(const fs::path& dir) {
  std::ifstream in(dir / manifest_name);
  return nlohmann::json::parse(in);
}

void write_manifest(const fs::path& dir, const nlohmann::json& m) {
  std::ofstream(dir / manifest_name, std::ios::trunc) << m.dump(2) << "\n";
}

std::string sha_of_manifest(const fs::path& dir) { return sha256_hex(file_bytes(dir / manifest_name)); }

std::string skipped_text(const loaded_checkpoint& ckpt) {
  std::string out;
  for (const auto& s : ckpt.skipped) out += s + "\n";
  return out;
}

void flip_byte(const fs::path& file, std::size_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5a));
}

/// The checkpoint clocks under `root`, oldest first.
std::vector<int64_t> clocks_under(const fs::path& root) {
  std::vector<int64_t> out;
  for (const auto& e : fs::directory_iterator(root))
    if (auto c = checkpoint_clock_of(e.path().filename().string())) out.push_back(*c);
  std::sort(out.begin(), out.end());
  return out;
}

sparse_table_config evicting_config() {
  sparse_table_config cfg;
  cfg.dim = 3;
  cfg.init = row_init::uniform;
  cfg.scale = 0.1f;
  cfg.admit_after = 2;
  cfg.evict_after = 2;
  cfg.optimizer.kind = row_optimizer_kind::adam;
  cfg.optimizer.learning_rate = 0.1f;
  return cfg;
}

} // namespace

TEST_CASE("sparse_table: a delta folded onto the state at its clock gives the state now") {
  sparse_table table(evicting_config(), 3, 0);
  table.track_removed(true);
  auto push = [&](std::vector<uint64_t> keys, int64_t clock) {
    std::vector<float> grads(keys.size() * 3, 0.5f);
    table.apply(keys.data(), keys.size(), grads.data(), 1.0f, clock);
  };
  for (int64_t c = 0; c < 4; ++c) push({1, 2, 3, 4, 5, 6, 7 + uint64_t(c)}, c);
  const int64_t since = 4;
  auto base = table.export_rows(since);
  REQUIRE(base.keys.size() == 6);  // 7..10 pushed once each: pending admission, and 7 and 8,
  REQUIRE(base.pending_keys.size() == 2);  // quiet for more than evict_after clocks, start over
  // after the checkpoint: keys 1 and 2 go on, 3..6 go quiet and are swept away, 20 comes
  for (int64_t c = 4; c < 9; ++c) push({1, 2, 20}, c);
  auto swept = table.sweep(9, 1000);
  CHECK(swept.evicted == 4);
  push({5}, 9);  // counted anew: pending again, no row
  auto delta = table.delta_of(table.export_rows(9), since, 9);
  CHECK(delta.keys == std::vector<uint64_t>{1, 2, 20});
  CHECK(delta.removed_keys == std::vector<uint64_t>{3, 4, 5, 6});
  auto folded = base;
  apply_delta_rows(folded, delta, 3, row_state_slots(row_optimizer_kind::adam), true);
  auto now = table.export_rows(9);
  CHECK(folded.keys == now.keys);
  CHECK(folded.values == now.values);
  CHECK(folded.state == now.state);
  CHECK(folded.touches == now.touches);
  CHECK(folded.steps == now.steps);
  CHECK(folded.clocks == now.clocks);
  CHECK(folded.pending_keys == now.pending_keys);
  CHECK(folded.pending_counts == now.pending_counts);
  CHECK(folded.pending_clocks == now.pending_clocks);
  // the removals before a clock are forgotten once a checkpoint of it is on disk: 4 rows, and
  // the pending counts of 7..10
  CHECK(delta.removed_pending == std::vector<uint64_t>{7, 8, 9, 10});
  CHECK(table.removed_remembered() == 8);
  table.forget_removed(10);
  CHECK(table.removed_remembered() == 0);
  CHECK(table.delta_of(table.export_rows(10), 10, 10).removed_keys.empty());
}

TEST_CASE("sparse_table: a delta carries the pending counts changed since, and tombstones") {
  // Keys 100..119 pushed once and 200..204 twice before the checkpoint at 4; after it 200 and
  // 201 are admitted, 100 counted again and 300 first. With eviction (after 4 quiet clocks)
  // the others are dropped by clock 8: some by the sweep, the rest stale at 8.
  for (uint32_t evict_after : {0u, 4u}) {
    CAPTURE(evict_after);
    auto cfg = evicting_config();
    cfg.admit_after = 3;
    cfg.evict_after = evict_after;
    sparse_table table(cfg, 3, 0);
    table.track_removed(true);
    auto push = [&](std::vector<uint64_t> keys, int64_t clock) {
      std::vector<float> grads(keys.size() * 3, 0.5f);
      table.apply(keys.data(), keys.size(), grads.data(), 1.0f, clock);
    };
    std::vector<uint64_t> once, twice{200, 201, 202, 203, 204};
    for (uint64_t k = 100; k < 120; ++k) once.push_back(k);
    push(once, 0);
    push(twice, 0);
    push(twice, 1);
    const int64_t since = 4;
    auto base = table.export_rows(since);
    REQUIRE(base.keys.empty());
    REQUIRE(base.pending_keys.size() == 25);
    push({100, 200, 201}, 4);
    push({300}, 5);
    if (evict_after > 0) {
      // the sweep looks at the 2 rows, then at 10 pending entries: those stale at 8 go
      CHECK(table.sweep(8, 12).pending_dropped > 0);
    }
    auto delta = table.delta_of(table.export_rows(8), since, 8);
    CHECK(delta.keys == std::vector<uint64_t>{200, 201});
    CHECK(delta.pending_changes_only);
    CHECK(delta.pending_keys == std::vector<uint64_t>{100, 300});
    CHECK(delta.pending_counts == std::vector<uint32_t>{2, 1});
    std::vector<uint64_t> dropped;
    if (evict_after > 0) {
      for (uint64_t k = 101; k < 120; ++k) dropped.push_back(k);
      for (uint64_t k = 202; k < 205; ++k) dropped.push_back(k);
      CHECK(delta.pending_clocks == std::vector<uint32_t>{4, 5});
    }
    CHECK(delta.removed_pending == dropped);
    auto folded = base;
    apply_delta_rows(folded, delta, 3, row_state_slots(row_optimizer_kind::adam), true);
    auto now = table.export_rows(8);
    CHECK(now.pending_keys.size() == (evict_after > 0 ? 2 : 24));
    CHECK(folded.keys == now.keys);
    CHECK(folded.values == now.values);
    CHECK(folded.pending_keys == now.pending_keys);
    CHECK(folded.pending_counts == now.pending_counts);
    CHECK(folded.pending_clocks == now.pending_clocks);
    // the drops before a clock are forgotten once a checkpoint of it is on disk
    table.forget_removed(10);
    CHECK(table.removed_remembered() == 0);
  }
}

TEST_CASE("sync: a chain of delta checkpoints restores byte-identical to full checkpoints") {
  // The same run twice: every checkpoint full, and every third one full with deltas between;
  // rows are evicted (tombstones) and Adam's per-row steps ride along.
  scratch full_dir, delta_dir, files;
  auto full = simulate(delta_run(36, full_dir.path, 4, 1, 3));
  REQUIRE(full);
  auto metrics = (fs::path(files.path) / "metrics.jsonl").string();
  auto opts = delta_run(36, delta_dir.path, 4, 3, 3);
  opts.chief.metrics = std::make_shared<metrics_file>(metrics);
  auto chained = simulate(std::move(opts));
  REQUIRE(chained);
  const fs::path a(full_dir.path), b(delta_dir.path);
  std::size_t deltas = 0, fulls = 0, tombstones = 0;
  int64_t base = -1, previous = -1;
  for (int64_t clock = 4; clock <= 36; clock += 4) {
    CAPTURE(clock);
    auto name = checkpoint_dir_name(clock);
    if (!fs::exists(b / name / manifest_name)) continue;  // skipped: the shards were past it
    auto m = manifest_of(b / name);
    auto loaded = load_newest_checkpoint(b / name);
    CHECK(loaded.clock == clock);
    if (fs::exists(a / name / manifest_name)) {
      CHECK(manifest_of(a / name)["kind"] == "full");
      CHECK(shard_bytes(loaded) == written_bytes(a / name));
    }
    if (m["kind"] == "full") {
      ++fulls;
      base = previous = clock;
      CHECK(loaded.chain.empty());
      continue;
    }
    ++deltas;
    CHECK(m["base"]["clock"] == base);
    CHECK(m["predecessor"]["clock"] == previous);
    CHECK(loaded.chain.size() <= 3);  // every third one full
    for (int s = 0; s < 2; ++s) {
      auto bytes = file_bytes(b / name / shard_file_name(s));
      auto view = decode_shard_checkpoint(wire_buffer::from_bytes(bytes.data(), bytes.size()));
      REQUIRE(view);
      CHECK(view->delta_since == previous);
      tombstones += view->sparse[0].removed_keys.size();
    }
    previous = clock;
  }
  CHECK(manifest_of(b / checkpoint_dir_name(36))["kind"] == "delta");  // the final one, always
  CHECK(deltas >= 4);
  CHECK(fulls >= 2);
  CHECK(tombstones > 0);
  // the run's own account of each checkpoint: its kind and bytes
  std::ifstream in(metrics);
  int full_events = 0, delta_events = 0;
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] != "checkpoint") continue;
    CHECK(e["bytes"].get<uint64_t>() > 0);
    (e["kind"] == "delta" ? delta_events : full_events)++;
  }
  CHECK(delta_events == int(deltas));
  CHECK(full_events == int(fulls));
}

TEST_CASE("sync: a chain with admission restores byte-identical, its deltas carrying changes") {
  // Keys admitted at their 2nd push: between two links pending keys are admitted, and with
  // eviction (after 6 quiet clocks) dropped too, the keys above 200 going quiet at clock 20.
  for (uint32_t evict_after : {0u, 6u}) {
    CAPTURE(evict_after);
    scratch full_dir, delta_dir;
    for (auto [dir, full_every] : {std::pair{&full_dir, 1}, std::pair{&delta_dir, 3}}) {
      auto opts = delta_run(36, dir->path, 4, full_every, evict_after, 2);
      opts.chief.slow_ms = {10, 10};  // fewer checkpoints skipped on a loaded machine
      REQUIRE(simulate(std::move(opts)));
    }
    const fs::path a(full_dir.path), b(delta_dir.path);
    std::size_t compared = 0, deltas = 0, delta_pending = 0, full_pending = 0, dropped = 0;
    for (int64_t clock = 4; clock <= 36; clock += 4) {
      CAPTURE(clock);
      auto name = checkpoint_dir_name(clock);
      if (!fs::exists(b / name / manifest_name) || !fs::exists(a / name / manifest_name))
        continue;  // skipped: the shards were past it
      auto loaded = load_newest_checkpoint(b / name);
      CHECK(loaded.clock == clock);
      CHECK(shard_bytes(loaded) == written_bytes(a / name));
      ++compared;
      if (manifest_of(b / name)["kind"] != "delta") continue;
      ++deltas;
      for (int s = 0; s < 2; ++s) {
        auto bytes = file_bytes(b / name / shard_file_name(s));
        auto view = decode_shard_checkpoint(wire_buffer::from_bytes(bytes.data(), bytes.size()));
        auto whole = decode_shard_checkpoint(loaded.shards[s]);
        REQUIRE(view);
        REQUIRE(whole);
        CHECK(view->sparse[0].pending_changes_only);
        delta_pending += view->sparse[0].pending_keys.size();
        full_pending += whole->sparse[0].pending_keys.size();
        dropped += view->sparse[0].removed_pending.size();
        if (evict_after > 0) {  // exactly the entries counted since, by the clocks at C
          std::size_t recent = 0;
          for (auto c : whole->sparse[0].pending_clocks) recent += c >= view->delta_since;
          CHECK(view->sparse[0].pending_keys.size() == recent);
        }
      }
    }
    CHECK(compared >= 4);
    CHECK(deltas >= 2);
    // the deltas hold the pending counts changed in 4 clocks, not all of them (with eviction
    // the counts not changed for 6 clocks are gone anyway)
    CHECK(full_pending > 0);
    CHECK(delta_pending < (evict_after > 0 ? full_pending : full_pending / 2));
    if (evict_after > 0) CHECK(dropped > 0);
    else CHECK(dropped == 0);
  }
}

TEST_CASE("sync: a shard lost and restored from a delta chain ends as the run without the loss") {
  scratch clean_dir, faulty_dir;
  auto clean = simulate(delta_run(40, clean_dir.path, 10, 1, 4));
  REQUIRE(clean);
  auto opts = delta_run(40, faulty_dir.path, 10, 100, 4);
  opts.chief.slow_ms = {5, 5};  // the checkpoints complete before the kill
  planned_kill kill;
  kill.target = planned_kill::role::ps;
  kill.index = 1;
  kill.at_clock = 35;
  opts.chief.kills = {kill};
  auto faulty = simulate(std::move(opts));
  REQUIRE(faulty);
  CHECK(faulty->failures == 1);
  CHECK(faulty->recoveries == 1);
  // back to a chain: the newest checkpoint before the kill is a delta of 10
  int64_t back = 30;
  while (back > 10 && !fs::exists(fs::path(faulty_dir.path) / checkpoint_dir_name(back) / manifest_name))
    back -= 10;
  REQUIRE(manifest_of(fs::path(faulty_dir.path) / checkpoint_dir_name(back))["kind"] == "delta");
  auto a = load_newest_checkpoint(clean_dir.path), b = load_newest_checkpoint(faulty_dir.path);
  CHECK(a.clock == 40);
  CHECK(b.clock == 40);
  CHECK(shard_bytes(a) == shard_bytes(b));
}

TEST_CASE("a broken chain is refused naming the link, and the newest complete prefix used") {
  scratch run_dir;
  REQUIRE(simulate(delta_run(24, run_dir.path, 4, 100, 3)));
  // 4 full, then deltas up to 24
  const fs::path root(run_dir.path);
  auto at = [&](const fs::path& r, int64_t c) { return r / checkpoint_dir_name(c); };
  // the links before the newest, 24: P (20, unless skipped on a loaded machine) and Q before it
  auto newest = manifest_of(at(root, 24));
  REQUIRE(newest["kind"] == "delta");
  const int64_t P = newest["predecessor"]["clock"].get<int64_t>();
  auto before = manifest_of(at(root, P));
  REQUIRE(before["kind"] == "delta");
  const int64_t Q = before["predecessor"]["clock"].get<int64_t>();
  const auto p_name = checkpoint_dir_name(P);
  auto copy = [&](const std::string& name) {
    auto to = root.parent_path() / (root.filename().string() + "-" + name);
    fs::remove_all(to);
    fs::copy(root, to, fs::copy_options::recursive);
    return to;
  };
  const auto want_q = shard_bytes(load_newest_checkpoint(at(root, Q)));
  const auto want_p = shard_bytes(load_newest_checkpoint(at(root, P)));

  SUBCASE("a gap") {
    auto r = copy("gap");
    fs::remove_all(at(r, P));
    auto got = load_newest_checkpoint(r);
    CHECK(got.clock == Q);
    CHECK(shard_bytes(got) == want_q);
    auto why = skipped_text(got);
    CHECK(why.find("gap") != std::string::npos);
    CHECK(why.find("names its predecessor " + p_name) != std::string::npos);
    std::string refused;
    try {
      load_chain(at(r, 24));
    } catch (const checkpoint_error& e) {
      refused = e.what();
    }
    CHECK(refused.find(p_name) != std::string::npos);
  }
  SUBCASE("a damaged newest link: the chain up to the one before") {
    auto r = copy("newest");
    flip_byte(at(r, 24) / shard_file_name(1), 200);
    auto got = load_newest_checkpoint(r);
    CHECK(got.clock == P);
    CHECK(shard_bytes(got) == want_p);
    REQUIRE(got.skipped.size() == 1);
    CHECK(got.skipped[0].find("ckpt-000000000024") != std::string::npos);
  }
  SUBCASE("a damaged link in the middle") {
    auto r = copy("middle");
    flip_byte(at(r, P) / shard_file_name(0), 200);
    auto got = load_newest_checkpoint(r);
    CHECK(got.clock == Q);
    REQUIRE(got.skipped.size() == 2);
    CHECK(got.skipped[0].find("link " + p_name + " is damaged") != std::string::npos);
  }
  SUBCASE("a link of another run") {
    auto r = copy("run");
    auto m_p = manifest_of(at(r, P));
    m_p["run_id"] = "someone-else";
    write_manifest(at(r, P), m_p);
    auto m24 = manifest_of(at(r, 24));  // names the rewritten one: only the run differs
    m24["predecessor"]["manifest_sha256"] = sha_of_manifest(at(r, P));
    write_manifest(at(r, 24), m24);
    auto got = load_newest_checkpoint(r);
    CHECK(got.clock == Q);
    auto why = skipped_text(got);
    CHECK(why.find(p_name + " is another run's") != std::string::npos);
  }
  SUBCASE("a delta of another base") {
    auto r = copy("base");
    auto m24 = manifest_of(at(r, 24));
    m24["base"]["manifest_sha256"] = std::string(64, 'a');
    write_manifest(at(r, 24), m24);
    auto got = load_newest_checkpoint(r);
    CHECK(got.clock == P);
    CHECK(skipped_text(got).find("another base") != std::string::npos);
  }
  SUBCASE("a rewritten predecessor") {
    auto r = copy("rewritten");
    auto m_p = manifest_of(at(r, P));
    m_p["created"] = "2000-01-01T00:00:00Z";
    write_manifest(at(r, P), m_p);
    auto got = load_newest_checkpoint(r);
    CHECK(got.clock == P);  // itself whole and consistent: only 24 names it otherwise
    CHECK(skipped_text(got).find("names " + p_name + " with manifest SHA-256") != std::string::npos);
  }
  SUBCASE("a duplicate: a link naming its own clock") {
    auto r = copy("duplicate");
    auto m24 = manifest_of(at(r, 24));
    m24["predecessor"]["clock"] = 24;
    write_manifest(at(r, 24), m24);
    auto got = load_newest_checkpoint(r);
    CHECK(got.clock == P);
    CHECK(skipped_text(got).find("a duplicate or out of order") != std::string::npos);
  }
}

TEST_CASE("--keep keeps every link a kept delta checkpoint needs") {
  scratch run_dir;
  auto opts = delta_run(28, run_dir.path, 4, 3, 0);
  opts.chief.checkpoints.keep = 2;
  // 80 ms between checkpoints: on a loaded machine 20 let one in flight delay the next until
  // it was skipped, and the chain this test means to prune was not written
  opts.chief.slow_ms = {20, 20};
  REQUIRE(simulate(std::move(opts)));
  // the 2 newest, and every link back to the base of each: nothing else
  const fs::path root(run_dir.path);
  std::set<int64_t> want{24, 28};
  for (int64_t c : {24, 28})
    for (auto m = manifest_of(root / checkpoint_dir_name(c)); m["kind"] == "delta";) {
      auto p = m["predecessor"]["clock"].get<int64_t>();
      want.insert(p);
      m = manifest_of(root / checkpoint_dir_name(p));
    }
  CHECK(want.size() > 2);  // 28 full, 24 a delta of 16 (unless one was skipped, loaded)
  auto present = clocks_under(root);
  CHECK(std::set<int64_t>(present.begin(), present.end()) == want);
  CHECK(want.count(4) == 0);  // older ones went
  for (int64_t c : {24, 28}) {
    CAPTURE(c);
    CHECK(load_newest_checkpoint(root / checkpoint_dir_name(c)).clock == c);
  }
}

} // namespace actorps
