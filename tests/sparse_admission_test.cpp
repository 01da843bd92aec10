// Admission in bounded memory (admission_memory: a count-min sketch) and exact pending counts
// that go quiet (evict_after): the bytes held never exceed the budget, a key seen N times is
// admitted on its N-th push, false admissions stay below a stated rate at a stated load, the
// sketch and the pending clocks survive export and import, and bad settings are refused by name.
#include "kernels/sparse/admission_sketch.hpp"
#include "kernels/sparse/sparse_table.hpp"
#include "actors/ps/splitmix64.hpp"
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>

#include <absl/container/flat_hash_map.h>

#include <cmath>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace actorps {
namespace {

sparse_table_config admitting(uint32_t admit_after, uint64_t memory, uint32_t evict_after = 0) {
  sparse_table_config cfg;
  cfg.dim = 2;
  cfg.init = row_init::uniform;
  cfg.scale = 0.05f;
  cfg.optimizer.kind = row_optimizer_kind::adagrad;
  cfg.optimizer.learning_rate = 0.1f;
  cfg.admit_after = admit_after;
  cfg.admission_memory = memory;
  cfg.evict_after = evict_after;
  return cfg;
}

/// Pushes `key` once at `clock`; whether the push created its row.
bool push_key(sparse_table& table, uint64_t key, int64_t clock = 0) {
  const std::vector<float> g(table.config().dim, 0.5f);
  const auto before = table.rows();
  table.apply(&key, 1, g.data(), 1.0f, clock);
  return table.rows() > before;
}

/// What a stream of pushes did to admission: keys admitted with fewer than N true sightings
/// (false admissions), and keys pushed N times in all but not admitted by then (late).
struct admission_count {
  std::size_t keys = 0, pushes = 0, false_admissions = 0, reached = 0, late = 0;
};

/// `pushes` pushes of keys drawn from a Zipf-like law over `distinct` keys (key r with weight
/// 1/r^0.9, the skew of a CTR field's values) into `table`, one key a push.
admission_count zipf_stream(sparse_table& table, std::size_t distinct, std::size_t pushes,
                            uint64_t seed) {
  // Inverse-CDF sampling over a table of cumulative weights.
  std::vector<double> cdf(distinct);
  double sum = 0;
  for (std::size_t r = 0; r < distinct; ++r) cdf[r] = (sum += 1.0 / std::pow(double(r + 1), 0.9));
  splitmix64 rng(seed);
  absl::flat_hash_map<uint64_t, uint32_t> seen;
  admission_count c;
  const uint32_t n = table.config().admit_after;
  for (std::size_t i = 0; i < pushes; ++i) {
    const double u = rng.next_unit() * sum;
    const auto r = std::size_t(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    const uint64_t key = splitmix64_mix(r + 1);  // spread over the key space, like hashed ids
    const uint32_t count = ++seen[key];
    const bool created = push_key(table, key);
    if (created && count < n) ++c.false_admissions;
    if (count == n) {
      ++c.reached;
      if (!created) {
        float v[2];
        table.read(&key, 1, v);
        if (v[0] == 0.0f && v[1] == 0.0f) ++c.late;  // no row yet (admission reads zeros)
      }
    }
  }
  c.keys = seen.size();
  c.pushes = pushes;
  return c;
}

} // namespace

TEST_CASE("admission sketch: the bytes held never exceed --admission-memory, at any load") {
  for (std::size_t budget : {std::size_t(1024), std::size_t(4096), std::size_t(100000),
                             std::size_t(1) << 20}) {
    CAPTURE(budget);
    admission_sketch sketch(budget, 1);
    CHECK(sketch.memory_bytes() <= budget);
    CHECK(sketch.memory_bytes() + admission_sketch::default_depth > budget);  // all of it
    sparse_table table(admitting(20, budget), 7, 0);
    const auto empty = table.admission_bytes();
    CHECK(empty <= budget);
    for (uint64_t k = 0; k < 200000; ++k) push_key(table, splitmix64_mix(k));  // all pending
    CHECK(table.admission_bytes() == empty);  // a fixed size: no key grows it
    CHECK(table.pending() > 0);
  }
  // The exact counters, for comparison, grow with the keys.
  sparse_table exact(admitting(20, 0), 7, 0);
  for (uint64_t k = 0; k < 200000; ++k) push_key(exact, splitmix64_mix(k));
  CHECK(exact.pending() == 200000);
  CHECK(exact.admission_bytes() > 200000 * 16);
}

TEST_CASE("admission sketch: a key pushed N times gets its row on the N-th push") {
  for (uint32_t n : {2u, 5u, 20u, 255u}) {
    CAPTURE(n);
    sparse_table table(admitting(n, 1 << 16), 3, 1);
    for (uint32_t i = 1; i < n; ++i) CHECK_FALSE(push_key(table, 42));
    CHECK(table.rows() == 0);
    CHECK(push_key(table, 42));
    auto saved = table.export_rows();
    REQUIRE(saved.keys == std::vector<uint64_t>{42});
    CHECK(saved.touches[0] == n);  // every push counted, as with exact counters
    CHECK(saved.pending_keys.empty());
  }
  // Under load: 2 000 new keys, each pushed 5 times within 100 pushes of a Zipf stream. A key's
  // count halves when the decay cursor passes one of its counters (once every counters()
  // adds), so one in about counters() / (depth × 100) such keys needs a sixth push.
  sparse_table table(admitting(5, 1 << 18), 3, 1);
  zipf_stream(table, 100000, 300000, 11);  // the sketch full of other keys' counts first
  std::size_t late = 0, early = 0;
  splitmix64 rng(5);
  for (uint64_t k = 0; k < 2000; ++k) {
    const uint64_t key = splitmix64_mix(k + (uint64_t(1) << 40));  // never in the stream
    int admitted_at = 0;
    for (int push = 1; push <= 5; ++push) {
      for (int other = 0; other < 20; ++other)
        push_key(table, splitmix64_mix(rng.next() % 100000 + 1));
      if (push_key(table, key)) admitted_at = push;
    }
    if (admitted_at == 0) ++late;
    // Before it: each of its counters shared with other keys (at this load, about 1.5 distinct
    // keys a counter, the sketch's overcount; measured 428 of 2 000). Counted, not bounded
    // here: the false-admission test below bounds the share of keys admitted early.
    if (admitted_at > 0 && admitted_at < 5) ++early;
  }
  MESSAGE("of 2000 keys pushed 5 times within 100 pushes, " << late
          << " not admitted by the 5th, " << early << " before it");
  CHECK(late <= 10);
}

TEST_CASE("admission sketch: false admissions below 0.2% of keys, down to 0.1 counter a key") {
  // The load: 400 000 pushes of a Zipf(0.9) stream over 1 M values, about 160 000 distinct
  // keys pushed; N = 5 and 20 (DLRM's). The sketch: 1 MiB, 4 rows of 262 000 one-byte counters
  // (1.6 a distinct key in each row), and a quarter and a sixteenth of that (0.1 a key).
  for (auto [n, memory] : {std::pair<uint32_t, uint64_t>{5, 1 << 20}, {20, 1 << 20},
                           {5, 1 << 18}, {20, 1 << 18}, {5, 1 << 16}, {20, 1 << 16}}) {
    CAPTURE(n);
    CAPTURE(memory);
    sparse_table sketched(admitting(n, memory), 5, 0);
    auto c = zipf_stream(sketched, 1000000, 400000, 21);
    const double rate = double(c.false_admissions) / double(c.keys);
    MESSAGE("N " << n << ", " << memory << " bytes: " << c.keys << " keys, " << c.false_admissions
                 << " admitted before their N-th push (" << rate * 100 << "% of keys), "
                 << sketched.rows() << " rows");
    CHECK(c.keys > 150000);
    CHECK(rate < 0.002);
    // Exact counters on the same stream admit none early.
    sparse_table exact(admitting(n, 0), 5, 0);
    CHECK(zipf_stream(exact, 1000000, 400000, 21).false_admissions == 0);
  }
}

TEST_CASE("admission sketch: a table restored from its export counts and admits as the original") {
  sparse_table a(admitting(4, 8192), 9, 2);
  for (uint64_t k = 0; k < 3000; ++k) push_key(a, splitmix64_mix(k % 700), int64_t(k / 100));
  auto saved = a.export_rows();
  REQUIRE(saved.sketch.depth == admission_sketch::default_depth);
  CHECK(saved.pending_keys.empty());
  sparse_table b(admitting(4, 8192), 9, 2);
  b.import_rows(saved);
  CHECK(b.pending() == a.pending());
  for (uint64_t k = 3000; k < 6000; ++k) {
    const uint64_t key = splitmix64_mix(k % 900);
    CHECK(push_key(a, key) == push_key(b, key));
  }
  auto x = a.export_rows(), y = b.export_rows();
  CHECK(x.keys == y.keys);
  CHECK(x.values == y.values);
  CHECK(x.sketch.counters == y.sketch.counters);
  CHECK(x.sketch.decay_at == y.sketch.decay_at);

  // Another budget, no sketch, or exact counts into a sketch: refused, the table unchanged.
  auto refused = [&](sparse_table& t, const sparse_table_rows& rows, const std::string& what) {
    CAPTURE(what);
    const auto before = t.export_rows();
    REQUIRE_THROWS_WITH_AS(t.import_rows(rows), doctest::Contains(what.c_str()), std::invalid_argument);
    CHECK(t.export_rows().sketch.counters == before.sketch.counters);
  };
  sparse_table other(admitting(4, 16384), 9, 2);
  refused(other, saved, "another --admission-memory");
  auto without = saved;
  without.sketch = {};
  refused(b, without, "no admission sketch");
  sparse_table exact(admitting(4, 0), 9, 2);
  refused(exact, saved, "an admission sketch for a table that counts exactly");
  sparse_table exact_source(admitting(4, 0), 9, 2);
  push_key(exact_source, 5);
  refused(b, exact_source.export_rows(), "exact pending counts");
}

TEST_CASE("exact admission: a pending count quiet for evict_after clocks is counted anew, then freed") {
  sparse_table table(admitting(3, 0, /*evict_after=*/4), 1, 0);
  CHECK_FALSE(push_key(table, 10, 1));
  CHECK_FALSE(push_key(table, 10, 5));  // 4 clocks later: still counted (2 of 3)
  CHECK_FALSE(push_key(table, 10, 10)); // 5 clocks quiet: starts over at 1
  CHECK_FALSE(push_key(table, 10, 11));
  CHECK(push_key(table, 10, 12));       // the third push since it started over
  // Keys that go quiet leave the export at once, and the sweep frees them.
  for (uint64_t k = 100; k < 400; ++k) push_key(table, k, 20);
  CHECK(table.pending() == 300);
  CHECK(table.export_rows(24).pending_keys.size() == 300);
  CHECK(table.export_rows(25).pending_keys.empty());
  const auto held = table.admission_bytes();
  std::size_t dropped = 0, calls = 0;
  for (bool done = false; !done; ++calls) {
    auto r = table.sweep(25, 64);
    CHECK(r.examined <= 64);
    dropped += r.pending_dropped;
    done = r.pass_done;
  }
  CHECK(dropped == 300);
  CHECK(calls >= 300 / 64);
  CHECK(table.pending() == 0);
  CHECK(table.admission_bytes() <= held);
  CHECK(table.rows() == 0);  // the admitted row, pushed at 12, is gone too (stale at 25)
}

TEST_CASE("exact admission: pending clocks survive export and import") {
  sparse_table a(admitting(3, 0, 4), 1, 0);
  push_key(a, 7, 2);
  push_key(a, 8, 6);
  auto saved = a.export_rows(6);
  CHECK(saved.pending_clocks == std::vector<uint32_t>{2, 6});
  sparse_table b(admitting(3, 0, 4), 1, 0);
  b.import_rows(saved, 6);
  // Key 7, last pushed at 2, is stale at 7: counted anew; key 8 is not.
  for (auto* t : {&a, &b}) {
    CHECK_FALSE(push_key(*t, 7, 7));
    CHECK_FALSE(push_key(*t, 7, 7 + 1));
    CHECK(push_key(*t, 8, 7 + 1) == false);
    CHECK(push_key(*t, 8, 9));
  }
  CHECK(a.export_rows(9).pending_counts == b.export_rows(9).pending_counts);
  // A checkpoint without pending clocks takes the clock it is imported at.
  saved.pending_clocks.clear();
  sparse_table c(admitting(3, 0, 4), 1, 0);
  c.import_rows(saved, 6);
  CHECK(c.export_rows(6).pending_clocks == std::vector<uint32_t>{6, 6});
}

TEST_CASE("admission memory: bad settings are refused, naming what is wrong") {
  CHECK(invalid_table_config(admitting(20, 1 << 20)).empty());
  CHECK(invalid_table_config(admitting(0, 1 << 20)).find("admit_after in [2, 255]") !=
        std::string::npos);
  CHECK(invalid_table_config(admitting(256, 1 << 20)).find("got 256") != std::string::npos);
  CHECK(invalid_table_config(admitting(20, 100)).find("at least 1024 bytes, got 100") !=
        std::string::npos);
  CHECK_THROWS_WITH_AS(sparse_table(admitting(1, 4096), 1, 0),
                       doctest::Contains("admission_memory needs admit_after"),
                       std::invalid_argument);
  CHECK_THROWS_AS(admission_sketch(1023, 1), std::invalid_argument);
}

TEST_CASE("--admission-memory: a bad value exits 2 naming the flag and what is wrong") {
  test::text_file_dir dir("actorps_admission");
  std::string rows;
  for (int i = 0; i < 16; ++i) rows += std::to_string(i % 2) + " 3:1 " + std::to_string(5 + i) + ":1\n";
  const auto file = dir.plain("rows.libsvm", rows);
  const std::string lr = "--model sparse-lr --dataset libsvm:" + file + " --test " + file;
  struct refused {
    std::string args, says;
  };
  for (const auto& c : std::vector<refused>{
         {lr + " --admit-after 5 --admission-memory -5",
          "--admission-memory must be a number of bytes up to 2^40 (0: exact counters) (got -5)"},
         {lr + " --admit-after 5 --admission-memory 2000000000000",
          "--admission-memory must be a number of bytes up to 2^40"},
         {lr + " --admit-after 5 --admission-memory 100",
          "--admission-memory: table weights: admission_memory must be at least 1024 bytes, got "
          "100"},
         {lr + " --admission-memory 4096", "--admission-memory: table weights: admission_memory "
                                           "needs admit_after in [2, 255], got 0"},
         {lr + " --admit-after 300 --admission-memory 4096", "needs admit_after in [2, 255], got 300"},
         {"--dataset synthetic --admission-memory 4096",
          "--admission-memory: --model 784-256-128-10 has no sparse tables"}}) {
    CAPTURE(c.args);
    auto r = test::run_actorps("simulate --no-progress " + c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find(c.says) != std::string::npos, r.output);
  }
}

TEST_CASE("a run with sparse tables reports rows and admission bytes at each evaluation") {
  test::scratch_dir dir("actorps_tables_events");
  auto gen = test::run_actorps("gen-data criteo --out " + dir.path + " --rows 6000 --test-rows 500");
  REQUIRE(gen.status == 0);
  const auto metrics = dir.path + "/m.jsonl";
  // The progress line is on (stdout is no terminal: a whole line at each evaluation).
  auto r = test::run_actorps("simulate --model dlrm:4:8:8 --dataset criteo:" + dir.path +
                             "/train.tsv --test " + dir.path + "/test.tsv --mode sync --steps 12"
                             " --eval-every 3 --admit-after 3 --admission-memory 4096"
                             " --metrics " + metrics);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  // The chief's "tables" events, one after each periodic evaluation: each shard's rows, and
  // the sketch never beyond its 4096 bytes while the run goes on.
  auto tables = test::metrics_events(metrics, "tables");
  REQUIRE(tables.size() >= 2);
  std::set<int64_t> shown;
  int64_t last = 0;
  for (const auto& t : tables) {
    int64_t rows = 0;
    for (const auto& shard : t["sparse_rows"]) rows += shard[0].get<int64_t>();
    for (const auto& bytes : t["admission_bytes"]) CHECK(bytes.get<int64_t>() <= 4096);
    for (const auto& bytes : t["admission_bytes"]) CHECK(bytes.get<int64_t>() > 0);
    CHECK(rows >= last);  // no eviction: rows only come
    last = rows;
    shown.insert(rows);
  }
  CHECK(last > 0);
  auto summary = test::metrics_summary(metrics);
  int64_t final_rows = 0;
  for (const auto& shard : summary["sparse_rows"]) final_rows += shard[0].get<int64_t>();
  CHECK(last <= final_rows);
  CHECK(summary["admission_bytes"].size() == 2);
  // The progress line shows the rows of an earlier report.
  std::smatch m;
  std::string out = r.output;
  std::size_t with_rows = 0;
  for (std::regex rows_re(" rows ([0-9]+) "); std::regex_search(out, m, rows_re);
       out = m.suffix()) {
    CHECK(shown.count(std::stoll(m[1])) == 1);
    ++with_rows;
  }
  CHECK(with_rows >= 1);
}

} // namespace actorps
