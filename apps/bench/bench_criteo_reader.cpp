// actorps_bench_criteo_reader: how fast criteo_reader streams a Criteo-format file, plain and
// gzip, read as one part and as two parts on two threads (two workers sharing a file). It writes
// a planted problem (gen_data/planted_criteo.hpp: --rows rows) to a scratch directory, checks
// that a read gives back every row and click, then times --repeats reads of each file. The
// files were just written, so they are in the page cache: the figures are parsing, hashing and
// inflating, not the disk. rows_per_s_per_core divides by the threads reading. Two gzip parts
// each inflate the whole stream (it cannot be entered mid-way), so they gain less than two
// plain parts.
#include "actors/chief/metrics.hpp"
#include "actors/data/criteo_reader.hpp"
#include "apps/gen_data/planted_criteo.hpp"

#include "apps/bench/bench_main.hpp"
#include "apps/bench/bench_scratch.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;

namespace {

struct options {
  int64_t rows = 500000;
  int repeats = 3;
  std::string dir;  ///< where the files go; empty: the system's temp directory
};

/// Rows and clicks one read of all `parts` parts of `file` gives, each part on its thread.
struct totals {
  int64_t rows = 0, clicks = 0;
};

totals read_parts(const std::string& file, int parts) {
  std::vector<totals> each(static_cast<size_t>(parts));
  std::vector<std::thread> threads;
  for (int p = 0; p < parts; ++p)
    threads.emplace_back([&, p] {
      criteo_reader reader(file, p, parts);
      criteo_batch batch;
      auto& mine = each[static_cast<size_t>(p)];
      while (reader.next_batch(4096, batch) > 0) {
        mine.rows += static_cast<int64_t>(batch.rows());
        for (float label : batch.labels) mine.clicks += label == 1.0f;
      }
    });
  for (auto& t : threads) t.join();
  totals sum;
  for (const auto& t : each) {
    sum.rows += t.rows;
    sum.clicks += t.clicks;
  }
  return sum;
}

/// Times `repeats` reads of `file` as `parts` parts, after one that must give every row.
nlohmann::ordered_json time_reads(const std::string& file, int parts, const options& o,
                                  int64_t clicks, double text_bytes) {
  const totals check = read_parts(file, parts);
  if (check.rows != o.rows || check.clicks != clicks)
    throw std::runtime_error(file + " read as " + std::to_string(parts) + " parts gave " +
                             std::to_string(check.rows) + " rows and " +
                             std::to_string(check.clicks) + " clicks, not the " +
                             std::to_string(o.rows) + " and " + std::to_string(clicks) +
                             " written");
  std::vector<double> seconds;
  for (int r = 0; r < o.repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    read_parts(file, parts);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    seconds.push_back(took.count());
  }
  const nlohmann::ordered_json runs = seconds;  // in the order they ran
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double rows_per_s = static_cast<double>(o.rows) / median;
  const auto file_bytes = static_cast<double>(std::filesystem::file_size(file));
  return json_object()
      .add("parts", parts)
      .add("median_s", median)
      .add("rows_per_s", rows_per_s)
      .add("rows_per_s_per_core", rows_per_s / parts)
      .add("text_MBps", text_bytes / median / 1e6)
      .add("file_MBps", file_bytes / median / 1e6)
      .add("runs_s", runs)
      .json();
}

int run(const options& o) {
  const double load_before = load_average();
  bench_scratch_dir dir(o.dir, "actorps_bench_criteo");
  planted_criteo_spec spec;
  spec.rows = o.rows;
  spec.test_rows = 1;
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  double text_bytes = 0;
  for (const bool gzip : {false, true}) {
    spec.gzip = gzip;
    const auto t0 = std::chrono::steady_clock::now();
    const planted_criteo_summary written = write_planted_criteo(spec, dir.path);
    const std::chrono::duration<double> generate = std::chrono::steady_clock::now() - t0;
    const std::string& file = written.train_path;
    if (!gzip) text_bytes = static_cast<double>(std::filesystem::file_size(file));
    const auto clicks = std::llround(written.positive_rate * static_cast<double>(o.rows));
    files[gzip ? "gzip" : "plain"] =
        json_object()
            .add("file_bytes", static_cast<int64_t>(std::filesystem::file_size(file)))
            .add("generate_s", generate.count())
            .add("one_part", time_reads(file, 1, o, clicks, text_bytes))
            .add("two_parts", time_reads(file, 2, o, clicks, text_bytes))
            .json();
  }
  std::printf("%s\n", json_object()
                          .add("bench", "criteo_reader")
                          .add("rows", o.rows)
                          .add("repeats", o.repeats)
                          .add("text_bytes", static_cast<int64_t>(text_bytes))
                          .add("plain", files["plain"])
                          .add("gzip", files["gzip"])
                          .add("hardware_threads", std::thread::hardware_concurrency())
                          .add("loadavg_1m_before", load_before)
                          .add("loadavg_1m_after", load_average())
                          .str()
                          .c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  po::options_description desc("actorps_bench_criteo_reader flags");
  desc.add_options()
    ("help,h", "print this help")
    ("rows", po::value(&o.rows)->default_value(o.rows), "rows in the generated file")
    ("repeats", po::value(&o.repeats)->default_value(o.repeats), "timed reads of each file")
    ("dir", po::value(&o.dir), "where to write the files (default: the temp directory)");
  return run_benchmark("actorps_bench_criteo_reader", argc, argv, desc, [&] {
    if (o.repeats < 1) throw po::error("--repeats must be positive");
    if (o.rows < 1) throw po::error("--rows must be positive");
  }, [&] { return run(o); });
}
