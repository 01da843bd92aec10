// CSV as a stream: a file or a directory of files read in name order, each worker its part of
// each file (csv_reader, count_csv_parts), and the runs a dense model trains on it: every row once
// a pass, an exact resume from the checkpoint's position, a bad line named mid-stream.
#include "actors/data/csv_dataset.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace actorps;
using test::contains;
using test::run_actorps;

namespace {

/// Rows "<id % 3>,<id>,<id / 2>" for ids [first, first + rows): the second field names the row.
std::string rows_from(int first, int rows, const char* end = "\n") {
  std::string text;
  for (int id = first; id < first + rows; ++id)
    text += std::to_string(id % 3) + "," + std::to_string(id) + "," + std::to_string(id / 2) + end;
  return text;
}

/// The ids (second field) of every row a reader gives, in order.
std::vector<int> ids_read(csv_reader& reader, std::size_t batch = 2) {
  std::vector<int> out;
  dense_batch b;
  while (reader.next_batch(batch, b) > 0) {
    REQUIRE(b.cols == 2);
    REQUIRE(b.x.size() == 2 * b.rows());
    for (std::size_t r = 0; r < b.rows(); ++r) {
      const int id = static_cast<int>(b.x[2 * r]);
      CHECK(b.y[r] == id % 3);
      CHECK(b.x[2 * r + 1] == static_cast<float>(id / 2));
      out.push_back(id);
    }
  }
  return out;
}

/// a.csv (a header, 7 rows), b.csv.gz (a header, a blank line, 5 rows), c.csv (6 rows, CRLF,
/// quoted, no header): 18 rows, ids 0..17.
struct three_files : test::text_file_dir {
  three_files() : test::text_file_dir("actorps_csv_stream") {
    plain("a.csv", "label,id,half\n" + rows_from(0, 7));
    gzip("b.csv.gz", "label,id,half\n\n" + rows_from(7, 5));
    std::string c;
    for (int id = 12; id < 18; ++id)
      c += "\"" + std::to_string(id % 3) + "\", " + std::to_string(id) + " ,"
           + std::to_string(id / 2) + "\r\n";
    plain("c.csv", c);
  }
};

/// Runs actorps, requires `status`, returns its output.
std::string run_expecting(const std::string& args, int status) {
  const auto r = run_actorps(args);
  INFO(args);
  INFO(r.output);
  REQUIRE(r.status == status);
  return r.output;
}

/// Three Gaussian classes of 4 features, gzip so that each of two workers reads exactly half of
/// every file (a gzip file is split by line index).
std::string class_rows(int rows, unsigned seed) {
  std::string text = "label,f0,f1,f2,f3\n";
  unsigned state = seed;
  for (int r = 0; r < rows; ++r) {
    const int label = r % 3;
    text += std::to_string(label);
    for (int j = 0; j < 4; ++j) {
      state = state * 1664525u + 1013904223u;
      const float noise = static_cast<float>(state >> 8) / float(1u << 24) - 0.5f;
      text += "," + std::to_string((j % 3 == label ? 2.0f : 0.0f) + noise);
    }
    text += "\n";
  }
  return text;
}

/// days/ of 200, 300 and 100 rows: each of 2 workers reads 100 + 150 + 50 = 300, 6 batches of
/// 50 a pass; a stream of the first file alone, or a part of every file, would give another count.
struct csv_days : test::text_file_dir {
  csv_days() : test::text_file_dir("actorps_csv_days") {
    std::filesystem::create_directory(path + "/days");
    gzip("days/day-1.csv.gz", class_rows(200, 1));
    gzip("days/day-2.csv.gz", class_rows(300, 2));
    gzip("days/day-3.csv.gz", class_rows(100, 3));
    plain("test.csv", class_rows(300, 9));
  }
  std::string run(const std::string& extra, int steps = 6) const {
    return "simulate --dataset csv:" + path + "/days --test " + path + "/test.csv --model "
           "mlp:4-8-3 --workers 2 --ps 1 --batch 50 --steps " + std::to_string(steps)
           + " --mode sync --eval-every 0 --no-progress " + extra;
  }
};

/// Each worker's rows trained, from its own train events (the last report of each clock: a
/// resumed run reports again the clocks after its checkpoint), and each clock's loss.
struct trained {
  std::map<int, int64_t> samples;                  ///< by worker
  std::map<std::pair<int, int64_t>, double> loss;  ///< by (worker, clock)
};

trained trained_rows(const std::string& metrics) {
  trained out;
  std::map<std::pair<int, int64_t>, int64_t> rows;
  for (const auto& e : test::metrics_events(metrics, "train")) {
    const std::pair<int, int64_t> at{e["worker"].get<int>(), e["clock"].get<int64_t>()};
    rows[at] = e["samples"].get<int64_t>();
    out.loss[at] = e["loss"].get<double>();
  }
  for (const auto& [at, n] : rows) out.samples[at.first] += n;
  return out;
}

} // namespace

TEST_CASE("a CSV directory reads as one stream: each worker its part of each file, every row once") {
  three_files dir;
  std::vector<int> all(18);
  for (int i = 0; i < 18; ++i) all[static_cast<std::size_t>(i)] = i;
  csv_reader whole(dir.path);
  CHECK(whole.cols() == 2);
  CHECK(ids_read(whole) == all);  // name order, headers skipped, every row
  whole.rewind();
  CHECK(ids_read(whole, 5) == all);
  for (int parts = 1; parts <= 4; ++parts) {
    INFO(parts << " parts");
    const auto counts = count_csv_parts(dir.path, parts);
    CHECK(counts.rows == 18);
    CHECK(counts.cols == 2);
    CHECK(counts.min_label == 0);
    CHECK(counts.max_label == 2);
    REQUIRE(counts.files.size() == 3);
    std::vector<int> seen;
    for (int p = 0; p < parts; ++p) {
      csv_reader part(dir.path, p, parts);
      const auto ids = ids_read(part);
      int64_t counted = 0;
      for (const auto& f : counts.files) counted += f.rows[static_cast<std::size_t>(p)];
      CHECK(int64_t(ids.size()) == counted);  // the count the chief plans with is what it reads
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
    std::sort(seen.begin(), seen.end());
    CHECK(seen == all);
  }
  // the gzip file by line index: its header and blank line are no rows of either part
  const auto counts = count_csv_parts(dir.path, 2);
  CHECK(counts.files[1].rows == std::vector<int64_t>{3, 2});
  // whole batches: a short last batch of the part is dropped
  csv_options whole_batches;
  whole_batches.whole_batches = true;
  csv_reader batches(dir.path, 0, 1, whole_batches);
  CHECK(ids_read(batches, 5).size() == 15);
  // a file as the directory read whole: load_csv is the same reader
  const auto d = load_csv(dir.path + "/a.csv");
  CHECK(d.rows == 7);
  CHECK(d.classes == 3);
}

TEST_CASE("a CSV stream names the file, line and column of a bad line, and a file of other columns") {
  test::text_file_dir dir("actorps_csv_stream_bad");
  dir.plain("a.csv", rows_from(0, 10));
  const auto b = dir.plain("b.csv", rows_from(10, 4) + "1,2,x7\n" + rows_from(15, 4));
  // counting parses labels only: the bad feature is found by the part that reads its line
  CHECK(count_csv_parts(dir.path, 2).rows == 19);
  int thrown = 0;
  for (int p = 0; p < 2; ++p) {
    csv_reader part(dir.path, p, 2);
    try {
      ids_read(part);
    } catch (const dataset_error& e) {
      ++thrown;
      CHECK(std::string(e.what()) == b + ":5:5: 'x7' is not a number (field 3)");
    }
  }
  CHECK(thrown == 1);
  dir.plain("b.csv", rows_from(10, 2) + "7,1,2\n");
  csv_options three;
  three.classes = 3;
  csv_reader beyond(dir.path, 0, 1, three);
  CHECK_THROWS_WITH_AS(ids_read(beyond), (b + ":3:1: label '7' is beyond the 3 classes of the "
                                              "training files counted first (0..2)").c_str(),
                       dataset_error);
  dir.plain("b.csv", rows_from(10, 2) + "2.5,1,2\n");
  CHECK_THROWS_WITH_AS(count_csv_parts(dir.path, 2),
                       (b + ":3:1: label '2.5' is not a non-negative integer").c_str(),
                       dataset_error);
  const auto c = dir.plain("c.csv", "0,1,2,3\n");
  dir.plain("b.csv", rows_from(10, 2));
  const auto other = c + ":1: 4 fields, expected 3 (as in " + dir.path + "/a.csv)";
  CHECK_THROWS_WITH_AS(count_csv_parts(dir.path, 1), other.c_str(), dataset_error);
  csv_reader reader(dir.path);
  CHECK_THROWS_WITH_AS(ids_read(reader), other.c_str(), dataset_error);
}

TEST_CASE("a run on a CSV directory trains every row of each worker's parts once a pass") {
  csv_days days;
  const auto metrics = days.path + "/metrics.jsonl";
  const auto out = run_expecting(days.run("--metrics " + metrics), 0);
  CHECK(contains(out, "6 clocks, 600 samples"));
  // 600 rows in the files, 300 in each worker's parts: all of them, by its own train events
  CHECK(trained_rows(metrics).samples == std::map<int, int64_t>{{0, 300}, {1, 300}});
  // --epochs counts the files' rows too: 2 passes are 12 clocks
  const auto two = run_expecting("simulate --dataset csv:" + days.path + "/days --test "
                                   + days.path + "/test.csv --model mlp:4-8-3 --workers 2 --ps 1 "
                                   "--batch 50 --epochs 2 --no-progress", 0);
  CHECK(contains(two, "12 clocks, 1200 samples"));
}

TEST_CASE("a run on a CSV directory killed mid-file resumes where it was: the same losses") {
  csv_days days;
  const auto whole = days.path + "/whole.jsonl", parts = days.path + "/parts.jsonl";
  run_expecting(days.run("--checkpoint-every 4 --checkpoint-dir " + days.path + "/a --metrics "
                           + whole, 12), 0);
  const auto killed = days.run("--checkpoint-every 4 --checkpoint-dir " + days.path
                                 + "/b --metrics " + parts, 12);
  run_expecting(killed + " --kill process@checkpoint=8", 128 + 9);  // ckpt-4 stays

  // 4 batches of 50 = 200 of a worker's rows: its 100 of day 1, and 100 of its 150 of day 2
  auto ckpt = load_checkpoint(days.path + "/b/ckpt-000000000004");
  auto run = decode_run_checkpoint(ckpt.run_bytes);
  REQUIRE(run);
  REQUIRE(run->files.size() == 3);
  CHECK(run->files[1].name == "day-2.csv.gz");
  CHECK(run->files[1].rows == std::vector<int64_t>{150, 150});
  for (const auto& p : run->positions) {
    CHECK(p.file == 1);
    CHECK(p.file_row == 100);
  }

  const auto out = run_expecting(killed + " --resume", 0);
  CHECK(contains(out, "(clock 4)"));
  const auto a = trained_rows(whole), b = trained_rows(parts);
  CHECK(a.samples == std::map<int, int64_t>{{0, 600}, {1, 600}});  // two passes
  CHECK(b.samples == a.samples);
  REQUIRE(b.loss.size() == a.loss.size());
  for (const auto& [at, loss] : a.loss) {
    INFO("worker " << at.first << " clock " << at.second);
    CHECK(b.loss.at(at) == doctest::Approx(loss).epsilon(1e-6));  // the same rows, the same model
  }
}

TEST_CASE("a bad CSV line mid-stream ends the run naming file, line and column") {
  csv_days days;
  // day 2's line 101 (a data line of worker 0: gzip lines alternate), its second feature
  std::string text = class_rows(300, 2);
  std::size_t at = 0;
  for (int line = 1; line < 101; ++line) at = text.find('\n', at) + 1;
  const auto second = text.find(',', text.find(',', at) + 1);
  text.replace(second + 1, text.find(',', second + 1) - second - 1, "abc");
  const auto bad = days.gzip("days/day-2.csv.gz", text);
  const auto r = run_actorps(days.run(""));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(contains(r.output, "stopped on its training data: bad_data: " + bad
                             + ":101:" + std::to_string(second + 2 - at)
                             + ": 'abc' is not a number (field 3)"));
  CHECK_FALSE(contains(r.output, "summary:"));
}
