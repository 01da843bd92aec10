// actorps_bench_csv: how fast load_csv reads a CSV file, plain and gzip-compressed. It writes a
// generated table (a label and --cols Gaussian features per row, printed with 9 significant
// digits as a float32 dump is) to a scratch directory, checks that one read gives back every
// value, then times --repeats reads of each file. The files were just written, so they are in
// the page cache: the figures are parsing (and inflating), not the disk.
#include "actors/chief/metrics.hpp"
#include "actors/data/csv_dataset.hpp"

#include "apps/bench/bench_main.hpp"
#include "apps/bench/bench_scratch.hpp"

#include <boost/program_options.hpp>

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;

namespace {

struct options {
  int rows = 200000, cols = 20, repeats = 3;
  std::string dir;  ///< where the files go; empty: the system's temp directory
};

/// The generated table: what the files hold and what a read must give back.
dataset generate(const options& o) {
  dataset d;
  d.rows = o.rows;
  d.cols = o.cols;
  d.classes = 10;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  d.x.resize(static_cast<size_t>(o.rows) * static_cast<size_t>(o.cols));
  for (float& v : d.x) v = normal(gen);
  for (int i = 0; i < o.rows; ++i) d.y.push_back(i % d.classes);
  return d;
}

/// Writes d as CSV (a header line, then label first) to `plain` and gzip-compressed to `gz`,
/// a chunk of text at a time; returns the text's size in bytes.
size_t write_files(const dataset& d, const std::string& plain, const std::string& gz) {
  std::FILE* out = std::fopen(plain.c_str(), "wb");
  gzFile zout = gzopen(gz.c_str(), "wb");
  if (!out || !zout) throw std::runtime_error("cannot write " + plain + " or " + gz);
  size_t bytes = 0;
  std::string text = "label";
  for (int j = 0; j < d.cols; ++j) text += ",f" + std::to_string(j);
  text += "\n";
  char number[32];
  const auto flush = [&] {
    bytes += text.size();
    if (std::fwrite(text.data(), 1, text.size(), out) != text.size() ||
        gzwrite(zout, text.data(), static_cast<unsigned>(text.size())) != int(text.size()))
      throw std::runtime_error("cannot write " + plain + " or " + gz);
    text.clear();
  };
  for (size_t i = 0; i < static_cast<size_t>(d.rows); ++i) {
    text += std::to_string(d.y[i]);
    for (size_t j = 0; j < static_cast<size_t>(d.cols); ++j) {
      std::snprintf(number, sizeof number, ",%.9g", double(d.x[i * size_t(d.cols) + j]));
      text += number;
    }
    text += "\n";
    if (text.size() > (1 << 20)) flush();
  }
  flush();
  if (std::fclose(out) != 0 || gzclose(zout) != Z_OK)
    throw std::runtime_error("cannot finish " + plain + " or " + gz);
  return bytes;
}

/// Times `repeats` reads of `file` after one that must give back `expected` exactly.
nlohmann::ordered_json time_reads(const std::string& file, const dataset& expected, size_t text_bytes,
                                  int repeats) {
  const dataset check = load_csv(file);
  if (check.rows != expected.rows || check.cols != expected.cols || check.x != expected.x ||
      check.y != expected.y || check.classes != expected.classes)
    throw std::runtime_error(file + " did not read back as written");
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const dataset d = load_csv(file);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    seconds.push_back(took.count());
  }
  const nlohmann::ordered_json runs = seconds;  // in the order they ran
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const auto file_bytes = static_cast<double>(std::filesystem::file_size(file));
  return json_object()
      .add("file_bytes", static_cast<int64_t>(file_bytes))
      .add("median_s", median)
      .add("rows_per_s", expected.rows / median)
      .add("text_MBps", static_cast<double>(text_bytes) / median / 1e6)
      .add("file_MBps", file_bytes / median / 1e6)
      .add("runs_s", runs)
      .json();
}

int run(const options& o) {
  const double load_before = load_average();
  bench_scratch_dir dir(o.dir, "actorps_bench_csv");
  const std::string plain = dir.path + "/bench.csv", gz = plain + ".gz";
  const dataset expected = generate(o);
  const size_t text_bytes = write_files(expected, plain, gz);
  const nlohmann::ordered_json plain_result = time_reads(plain, expected, text_bytes, o.repeats);
  const nlohmann::ordered_json gzip_result = time_reads(gz, expected, text_bytes, o.repeats);
  std::printf("%s\n", json_object()
                        .add("bench", "csv")
                        .add("rows", o.rows)
                        .add("cols", o.cols)
                        .add("repeats", o.repeats)
                        .add("text_bytes", static_cast<int64_t>(text_bytes))
                        .add("plain", plain_result)
                        .add("gzip", gzip_result)
                        .add("loadavg_1m_before", load_before)
                        .add("loadavg_1m_after", load_average())
                        .str()
                        .c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  po::options_description desc("actorps_bench_csv flags");
  desc.add_options()
    ("help,h", "print this help")
    ("rows", po::value(&o.rows)->default_value(o.rows), "rows in the generated file")
    ("cols", po::value(&o.cols)->default_value(o.cols), "features per row (plus the label)")
    ("repeats", po::value(&o.repeats)->default_value(o.repeats), "timed reads of each file")
    ("dir", po::value(&o.dir), "where to write the files (default: the temp directory)");
  return run_benchmark("actorps_bench_csv", argc, argv, desc, [&] {
    if (o.rows < 1 || o.cols < 1 || o.repeats < 1)
      throw po::error("--rows, --cols and --repeats must be positive");
  }, [&] { return run(o); });
}
