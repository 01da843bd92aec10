// actorps_bench_sparse_apply: how fast one shard's sparse_table takes pushes, and what a row
// costs in memory. One process, no actors, no wire: the storage and math layer alone.
//
// Default: for each --dims × --sizes (Adagrad), a table grows from empty by pushes of --batch
// unique keys (first pass: every push creates its rows), then takes a second pass over the
// same keys in another order (every push updates existing rows), then a read pass. Reports
// rows/s for each pass and bytes per row three ways: memory_bytes()/rows, malloc's own count
// (mallinfo2) and the floats alone; and the read pass next to this machine's floor for the
// same keys, rows and row width (random_access_floor.hpp): the rate no table of rows apart
// from their index can pass here.
//
// --growth ROWS: instead, for each --dims, one table grows from empty to ROWS rows by pushes of
// --batch new keys, and its bytes per row (memory_bytes()/rows) is sampled 16 times per doubling
// of the rows: across every growth of the index, not at one load of it. Reports the samples
// and, from 65 536 rows on, the least and the most bytes per row beyond the floats (values and
// optimizer state).
//
// --peak-rss: instead, grows 2 shards' tables to --rss-rows rows in all (keys placed by
// bucket_of/assign_buckets, as a cluster would) at dim --rss-dim with Adagrad, then reports
// the process's peak resident set (getrusage ru_maxrss). Needs about 3 GB at the default 20 M
// rows × dim 16; nothing else in the process holds more than one batch.
//
// Keys are splitmix64_mix(i) — distinct and spread over all 64 bits — generated a batch at a
// time, so no key array inflates the memory figures. Prints one JSON object.
#include "kernels/sparse/key_buckets.hpp"
#include "kernels/sparse/sparse_table.hpp"
#include "actors/ps/splitmix64.hpp"

#include "apps/bench/bench_main.hpp"
#include "apps/bench/process_usage.hpp"
#include "apps/bench/random_access_floor.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;
using ordered_json = nlohmann::ordered_json;

namespace {

struct options {
  std::string sizes = "1000000,10000000";
  std::string dims = "1,16";
  uint32_t batch = 1024;
  bool peak_rss = false;
  uint64_t growth = 0;
  uint64_t rss_rows = 20000000;
  uint32_t rss_dim = 16;
};

std::vector<uint64_t> parse_list(const std::string& text, const char* flag) {
  std::vector<uint64_t> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0) {
      throw po::error(std::string("--") + flag +
                      " wants positive integers separated by commas, got '" + text + "'");
    }
    values.push_back(v);
  }
  return values;
}

/// Floats of metadata before a row's values: its key, last clock and touch count (16 bytes,
/// sparse_table.hpp).
constexpr uint32_t row_meta_floats = 4;

/// The key of the i-th row: a bijection of i, so keys are distinct and look random.
uint64_t key_of(uint64_t i) { return splitmix64_mix(i + 1); }

/// Visits 0 … n−1 once each in a scattered order: i → (i·a) mod n with a prime a that divides
/// no n used here (a multiplicative bijection), so the second pass does not walk the rows in
/// the order they were created.
uint64_t scattered(uint64_t i, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(i) * 2654435761ull) % n);
}

std::vector<float> gradients(std::size_t n) {
  splitmix64 rng(99);
  std::vector<float> g(n);
  for (float& v : g) v = static_cast<float>(0.02 * rng.next_unit() - 0.01);
  return g;
}

std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

/// The 1-minute load average: on a busy machine the rates are low and noisy.
double load_average() {
  double load = -1;
  return getloadavg(&load, 1) == 1 ? load : -1;
}

sparse_table_config adagrad_table(uint32_t dim) {
  sparse_table_config cfg;
  cfg.dim = dim;
  cfg.init = row_init::uniform;
  cfg.scale = 0.01f;
  cfg.optimizer.kind = row_optimizer_kind::adagrad;
  return cfg;
}

/// Seconds spent inside `call(keys, n)` over all keys of a pass, a batch at a time, by the wall
/// clock and in CPU time; key_at(i) gives the i-th key visited.
struct pass_time {
  double wall_s = 0, cpu_s = 0;
};
template <class KeyAt, class Call>
pass_time timed_pass(uint64_t rows, uint32_t batch, KeyAt key_at, Call call) {
  std::vector<uint64_t> keys(batch);
  std::chrono::steady_clock::duration spent{};
  double cpu = 0;
  for (uint64_t at = 0; at < rows; at += batch) {
    const auto n = static_cast<std::size_t>(std::min<uint64_t>(batch, rows - at));
    for (std::size_t j = 0; j < n; ++j) keys[j] = key_at(at + j);
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_s();
    call(keys.data(), n);
    cpu += thread_cpu_s() - c0;
    spent += std::chrono::steady_clock::now() - t0;
  }
  return {std::chrono::duration<double>(spent).count(), cpu};
}

ordered_json apply_case(uint32_t dim, uint64_t rows, uint32_t batch) {
  const std::vector<float> grads = gradients(std::size_t(batch) * dim);
  std::vector<float> out(std::size_t(batch) * dim);
  const std::size_t heap_before = heap_in_use();
  sparse_table table(adagrad_table(dim), 1, 0);
  auto apply = [&](const uint64_t* keys, std::size_t n) {
    table.apply(keys, n, grads.data(), 1.0f);
  };
  const pass_time create = timed_pass(rows, batch, key_of, apply);
  const std::size_t heap = heap_in_use() - heap_before;
  if (table.rows() != rows) throw std::runtime_error("the first pass did not create every row");
  auto scattered_key = [rows](uint64_t i) { return key_of(scattered(i, rows)); };
  const pass_time update = timed_pass(rows, batch, scattered_key, apply);
  const pass_time read = timed_pass(rows, batch, scattered_key, [&](const uint64_t* keys,
                                                                    std::size_t n) {
    table.read(keys, n, out.data());
  });
  if (table.rows() != rows) throw std::runtime_error("the second pass created rows");
  const uint32_t row_floats = static_cast<uint32_t>(
      row_meta_floats + dim * (1 + row_state_slots(row_optimizer_kind::adagrad)));
  const double floor_ns = random_access_floor_ns({rows, row_floats, dim, rows * 10 / 7},
                                                 scattered_key);

  const double floats = double(dim) * (1 + row_state_slots(row_optimizer_kind::adagrad)) * 4;
  const double reported = double(table.memory_bytes()) / double(rows);
  return ordered_json{{"dim", dim},
                      {"rows", rows},
                      {"create_rows_per_s", double(rows) / create.wall_s},
                      {"update_rows_per_s", double(rows) / update.wall_s},
                      {"read_rows_per_s", double(rows) / read.wall_s},
                      {"create_rows_per_cpu_s", double(rows) / create.cpu_s},
                      {"update_rows_per_cpu_s", double(rows) / update.cpu_s},
                      {"read_rows_per_cpu_s", double(rows) / read.cpu_s},
                      {"read_floor_rows_per_cpu_s", 1e9 / floor_ns},
                      {"read_over_floor", (double(rows) / read.cpu_s) / (1e9 / floor_ns)},
                      {"bytes_per_row", reported},
                      {"malloc_bytes_per_row", double(heap) / double(rows)},
                      {"float_bytes_per_row", floats},
                      {"overhead_bytes_per_row", reported - floats}};
}

ordered_json growth_case(uint32_t dim, uint64_t rows, uint32_t batch) {
  const std::vector<float> grads = gradients(std::size_t(batch) * dim);
  sparse_table table(adagrad_table(dim), 1, 0);
  const double floats = double(dim) * (1 + row_state_slots(row_optimizer_kind::adagrad)) * 4;
  ordered_json samples = ordered_json::array();
  double next = 1024, least = 1e300, most = 0;
  uint64_t least_at = 0, most_at = 0;
  std::vector<uint64_t> keys(batch);
  for (uint64_t at = 0; at < rows; at += batch) {
    const auto n = static_cast<std::size_t>(std::min<uint64_t>(batch, rows - at));
    for (std::size_t j = 0; j < n; ++j) keys[j] = key_of(at + j);
    table.apply(keys.data(), n, grads.data(), 1.0f);
    const auto now = double(table.rows());
    if (now < next && at + n < rows) continue;
    while (next <= now) next *= 1.0442737824274138;  // 2^(1/16)
    const double beyond = double(table.memory_bytes()) / now - floats;
    samples.push_back({{"rows", table.rows()}, {"overhead_bytes_per_row", beyond}});
    if (now < 65536) continue;
    if (beyond < least) least = beyond, least_at = table.rows();
    if (beyond > most) most = beyond, most_at = table.rows();
  }
  return ordered_json{{"dim", dim},
                      {"rows", rows},
                      {"float_bytes_per_row", floats},
                      {"overhead_bytes_per_row_least", least},
                      {"at_rows_least", least_at},
                      {"overhead_bytes_per_row_most", most},
                      {"at_rows_most", most_at},
                      {"samples", samples}};
}

ordered_json peak_rss_case(uint64_t rows, uint32_t dim, uint32_t batch) {
  constexpr int shards = 2;
  const std::vector<int32_t> owner = assign_buckets(default_bucket_count, shards);
  std::vector<sparse_table> tables;
  for (int s = 0; s < shards; ++s) tables.emplace_back(adagrad_table(dim), 1, 0);
  const std::vector<float> grads = gradients(std::size_t(batch) * dim);
  std::vector<std::vector<uint64_t>> per_shard(shards);
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t at = 0; at < rows; at += batch) {
    for (auto& keys : per_shard) keys.clear();
    for (uint64_t i = at; i < std::min<uint64_t>(rows, at + batch); ++i) {
      const uint64_t key = key_of(i);
      per_shard[owner[bucket_of(key, default_bucket_count)]].push_back(key);
    }
    for (int s = 0; s < shards; ++s) {
      tables[s].apply(per_shard[s].data(), per_shard[s].size(), grads.data(), 1.0f);
    }
  }
  const std::chrono::duration<double> grow_s = std::chrono::steady_clock::now() - t0;
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const double peak = double(usage.ru_maxrss) * 1024;  // Linux reports KiB
  ordered_json per_table = ordered_json::array();
  double reported = 0;
  for (const sparse_table& t : tables) {
    per_table.push_back({{"rows", t.rows()}, {"memory_bytes", t.memory_bytes()}});
    reported += double(t.memory_bytes());
  }
  const double floats = double(dim) * 2 * 4 * double(rows);
  return ordered_json{{"rows", rows},
                      {"dim", dim},
                      {"optimizer", "adagrad"},
                      {"shards", shards},
                      {"tables", per_table},
                      {"grow_s", grow_s.count()},
                      {"peak_rss_bytes", peak},
                      {"memory_bytes", reported},
                      {"float_bytes", floats},
                      {"peak_rss_bytes_per_row", peak / double(rows)},
                      {"memory_bytes_per_row", reported / double(rows)}};
}

int run(const options& o) {
  ordered_json result{{"bench", "sparse_apply"},
                      {"optimizer", "adagrad"},
                      {"batch", o.batch},
                      {"loadavg_1m_before", load_average()}};
  if (o.peak_rss) {
    result["peak_rss"] = peak_rss_case(o.rss_rows, o.rss_dim, o.batch);
  } else if (o.growth > 0) {
    ordered_json cases = ordered_json::array();
    for (uint64_t dim : parse_list(o.dims, "dims"))
      cases.push_back(growth_case(static_cast<uint32_t>(dim), o.growth, o.batch));
    result["growth"] = cases;
  } else {
    ordered_json cases = ordered_json::array();
    for (uint64_t dim : parse_list(o.dims, "dims")) {
      for (uint64_t rows : parse_list(o.sizes, "sizes")) {
        std::fprintf(stderr, "dim %llu, %llu rows...\n", (unsigned long long)dim,
                     (unsigned long long)rows);
        cases.push_back(apply_case(static_cast<uint32_t>(dim), rows, o.batch));
      }
    }
    result["apply"] = cases;
  }
  result["loadavg_1m_after"] = load_average();
  std::printf("%s\n", result.dump().c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  po::options_description desc("actorps_bench_sparse_apply flags");
  desc.add_options()
    ("help,h", "print this help")
    ("sizes", po::value(&o.sizes)->default_value(o.sizes), "table sizes (rows), comma-separated")
    ("dims", po::value(&o.dims)->default_value(o.dims), "row widths, comma-separated")
    ("batch", po::value(&o.batch)->default_value(o.batch), "unique keys per push")
    ("peak-rss", po::bool_switch(&o.peak_rss), "only the peak-RSS case (about 3 GB)")
    ("growth", po::value(&o.growth)->default_value(o.growth),
     "only bytes per row sampled while one table grows to this many rows (0: off)")
    ("rss-rows", po::value(&o.rss_rows)->default_value(o.rss_rows), "--peak-rss: rows in all")
    ("rss-dim", po::value(&o.rss_dim)->default_value(o.rss_dim), "--peak-rss: row width");
  return run_benchmark("actorps_bench_sparse_apply", argc, argv, desc, [&] {
    if (o.batch < 1 || o.rss_rows < 1 || o.rss_dim < 1)
      throw po::error("--batch, --rss-rows and --rss-dim must be positive");
    parse_list(o.sizes, "sizes");
    parse_list(o.dims, "dims");
  }, [&] { return run(o); });
}
