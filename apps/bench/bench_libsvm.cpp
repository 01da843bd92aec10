// actorps_bench_libsvm: how fast libsvm_reader streams a libsvm file, plain and gzip, read as
// one part and as two parts on two threads (two workers sharing a file). It writes a planted
// problem (gen_data/planted_libsvm.hpp: --rows rows of --nnz features) to a scratch directory,
// checks that a read gives back every row and pair, then times --repeats reads of each file.
// The files were just written, so they are in the page cache: the figures are parsing (and
// inflating), not the disk. Two gzip parts each inflate the whole stream (it cannot be entered
// mid-way), so they gain less than two plain parts.
#include "actors/chief/metrics.hpp"
#include "actors/data/libsvm_reader.hpp"
#include "apps/gen_data/planted_libsvm.hpp"

#include "apps/bench/bench_main.hpp"
#include "apps/bench/bench_scratch.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
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
  planted_libsvm_spec spec;
  int repeats = 3;
  std::string dir;  ///< where the files go; empty: the system's temp directory
};

/// Rows and nonzeros one read of all `parts` parts of `file` gives, each part on its thread.
struct totals {
  int64_t rows = 0, nonzeros = 0;
};

totals read_parts(const std::string& file, int parts) {
  std::vector<totals> each(static_cast<size_t>(parts));
  std::vector<std::thread> threads;
  for (int p = 0; p < parts; ++p)
    threads.emplace_back([&, p] {
      libsvm_reader reader(file, p, parts);
      sparse_batch batch;
      while (reader.next_batch(1024, batch) > 0) {
        each[static_cast<size_t>(p)].rows += static_cast<int64_t>(batch.rows());
        each[static_cast<size_t>(p)].nonzeros += static_cast<int64_t>(batch.nonzeros());
      }
    });
  for (auto& t : threads) t.join();
  totals sum;
  for (const auto& t : each) {
    sum.rows += t.rows;
    sum.nonzeros += t.nonzeros;
  }
  return sum;
}

/// Times `repeats` reads of `file` as `parts` parts, after one that must give every row.
nlohmann::ordered_json time_reads(const std::string& file, int parts, const options& o,
                                  double text_bytes) {
  const totals check = read_parts(file, parts);
  if (check.rows != o.spec.rows || check.nonzeros != o.spec.rows * o.spec.nnz)
    throw std::runtime_error(file + " read as " + std::to_string(parts) + " parts gave " +
                             std::to_string(check.rows) + " rows, not the " +
                             std::to_string(o.spec.rows) + " written");
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
  const auto file_bytes = static_cast<double>(std::filesystem::file_size(file));
  return json_object()
      .add("parts", parts)
      .add("median_s", median)
      .add("rows_per_s", static_cast<double>(o.spec.rows) / median)
      .add("text_MBps", text_bytes / median / 1e6)
      .add("file_MBps", file_bytes / median / 1e6)
      .add("runs_s", runs)
      .json();
}

int run(options o) {
  const double load_before = load_average();
  bench_scratch_dir dir(o.dir, "actorps_bench_libsvm");
  o.spec.test_rows = 1;
  o.spec.gzip = false;
  const std::string plain = write_planted_libsvm(o.spec, dir.path).train_path;
  o.spec.gzip = true;
  const std::string gz = write_planted_libsvm(o.spec, dir.path).train_path;
  const auto text_bytes = static_cast<double>(std::filesystem::file_size(plain));
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  for (const auto& [name, file] : {std::pair{"plain", plain}, std::pair{"gzip", gz}}) {
    files[name] = json_object()
                      .add("file_bytes", static_cast<int64_t>(std::filesystem::file_size(file)))
                      .add("one_part", time_reads(file, 1, o, text_bytes))
                      .add("two_parts", time_reads(file, 2, o, text_bytes))
                      .json();
  }
  std::printf("%s\n", json_object()
                          .add("bench", "libsvm")
                          .add("rows", o.spec.rows)
                          .add("nnz", o.spec.nnz)
                          .add("features", o.spec.features)
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
  o.spec.rows = 500000;
  po::options_description desc("actorps_bench_libsvm flags");
  desc.add_options()
    ("help,h", "print this help")
    ("rows", po::value(&o.spec.rows)->default_value(o.spec.rows), "rows in the generated file")
    ("nnz", po::value(&o.spec.nnz)->default_value(o.spec.nnz), "features per row")
    ("features", po::value(&o.spec.features)->default_value(o.spec.features),
     "feature indices 1..F")
    ("repeats", po::value(&o.repeats)->default_value(o.repeats), "timed reads of each file")
    ("dir", po::value(&o.dir), "where to write the files (default: the temp directory)");
  return run_benchmark("actorps_bench_libsvm", argc, argv, desc, [&] {
    if (o.repeats < 1) throw po::error("--repeats must be positive");
  }, [&] { return run(o); });
}
