// Training data as a stream: a directory's files read in name order as one stream (each worker
// its part of each file), checkpoints that record where each worker is in it, --resume on the
// same directory (files added after the checkpoint's file allowed), and gen-data's drifting
// multi-day stream.
#include "actors/data/criteo_batches.hpp"
#include "actors/data/criteo_reader.hpp"
#include "actors/data/libsvm_reader.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace actorps;
using test::contains;
using test::run_actorps;
namespace fs = std::filesystem;

namespace {

/// A Criteo line whose C1 names it ("<file>-<row>"), so that a test can tell the rows apart.
std::string criteo_line(const std::string& file, int row) {
  std::string line = std::to_string(row % 2);
  for (int j = 0; j < criteo_dense_fields; ++j) line += "\t" + std::to_string(row + j);
  line += "\t" + file + "-" + std::to_string(row);
  for (int f = 1; f < criteo_categorical_fields; ++f) line += "\t";
  return line + "\n";
}

std::string criteo_lines(const std::string& file, int rows) {
  std::string text;
  for (int r = 0; r < rows; ++r) text += criteo_line(file, r);
  return text;
}

/// The C1 keys of every row a reader gives, in order.
std::vector<uint64_t> row_keys(criteo_reader& reader) {
  std::vector<uint64_t> out;
  criteo_batch batch;
  while (reader.next_batch(3, batch) > 0)
    for (std::size_t r = 0; r < batch.rows(); ++r)
      out.push_back(batch.keys[r * criteo_categorical_fields]);
  return out;
}

/// Runs actorps, requires `status`, returns its output.
std::string run_expecting(const std::string& args, int status) {
  const auto r = run_actorps(args);
  INFO(args);
  INFO(r.output);
  REQUIRE(r.status == status);
  return r.output;
}

/// The rows each worker trained, from its own train events (the last report of each clock: a
/// resumed run reports again the clocks after its checkpoint), and each clock's loss.
struct trained {
  std::map<int, int64_t> samples;                      ///< by worker
  std::map<std::pair<int, int64_t>, double> loss;      ///< by (worker, clock)
  std::map<std::pair<int, int64_t>, int64_t> rows;     ///< by (worker, clock)
};

trained trained_rows(const std::string& metrics) {
  trained out;
  for (const auto& e : test::metrics_events(metrics, "train")) {
    const std::pair<int, int64_t> at{e["worker"].get<int>(), e["clock"].get<int64_t>()};
    out.rows[at] = e["samples"].get<int64_t>();
    out.loss[at] = e["loss"].get<double>();
  }
  for (const auto& [at, rows] : out.rows) out.samples[at.first] += rows;
  return out;
}

/// A 3-day generated stream, gzip so that each of two workers reads exactly half of every
/// file (a gzip file is split by line index): 500 rows of each day per worker.
struct days_dir : test::scratch_dir {
  days_dir() : test::scratch_dir("actorps_days") {
    run_expecting("gen-data criteo --days 3 --rows 1000 --test-rows 500 --gzip --seed 4 --out "
                    + path, 0);
  }
  std::string train() const { return path + "/train"; }
  /// A run over it: batches of 96 cut each worker's 1 500 rows into 15 full batches and one of
  /// 60, so 16 clocks are one pass; a stream of one or two of the files would give another
  /// count (6 or 11 batches a pass).
  std::string run(const std::string& data, const std::string& extra, int steps = 16) const {
    return "simulate --dataset criteo:" + data + " --test " + path + "/test.tsv.gz --model lr "
           "--workers 2 --ps 1 --batch 96 --steps " + std::to_string(steps)
           + " --mode sync --eval-every 0 --no-progress " + extra;
  }
};

} // namespace

TEST_CASE("a directory reads as one stream: each worker its part of each file, every row once") {
  test::text_file_dir dir("actorps_stream");
  const std::string data = dir.path + "/data";
  fs::create_directories(data);
  const std::vector<std::pair<std::string, int>> files = {{"a.tsv", 7}, {"b.tsv.gz", 5},
                                                          {"c.tsv", 9}};
  std::multiset<uint64_t> every_row;
  for (const auto& [name, rows] : files) {
    const auto text = criteo_lines(name, rows);
    if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") dir.gzip("data/" + name, text);
    else dir.plain("data/" + name, text);
    criteo_reader whole(data + "/" + name);
    for (auto key : row_keys(whole)) every_row.insert(key);
  }
  dir.plain("data/.partial", "not a Criteo line\n");  // hidden: left out
  REQUIRE(every_row.size() == 21);

  for (int workers : {1, 2, 3}) {
    std::multiset<uint64_t> read;
    const auto parts = count_criteo_parts(data, workers);
    REQUIRE(parts.size() == 3);
    for (int w = 0; w < workers; ++w) {
      criteo_reader stream(data, w, workers);
      const auto keys = row_keys(stream);
      // in file order, each file's part as a reader of that file alone reads it
      std::vector<uint64_t> expected;
      for (std::size_t k = 0; k < files.size(); ++k) {
        criteo_reader one(data + "/" + files[k].first, w, workers);
        const auto part = row_keys(one);
        CHECK(parts[k].rows[static_cast<std::size_t>(w)] == static_cast<int64_t>(part.size()));
        expected.insert(expected.end(), part.begin(), part.end());
      }
      CHECK(keys == expected);
      stream.rewind();
      CHECK(row_keys(stream) == keys);
      read.insert(keys.begin(), keys.end());
    }
    CHECK(read == every_row);  // every row once over the workers
  }

  // by clock: one pass is every row of the part, in batches that run across files
  criteo_batches batches(data, 0, 1, 4);
  std::vector<uint64_t> by_clock;
  for (int64_t c = 0; c < 6; ++c) {
    const auto& b = batches.at(c);
    for (std::size_t r = 0; r < b.rows(); ++r)
      by_clock.push_back(b.keys[r * criteo_categorical_fields]);
  }
  const std::vector<uint64_t> first(batches.at(0).keys.begin(), batches.at(0).keys.end());
  CHECK(std::vector<uint64_t>(batches.at(6).keys.begin(), batches.at(6).keys.end()) == first);
  CHECK(batches.batches_per_epoch() == 6);  // 21 rows: 5 of 4, one of 1; clock 6 wraps
  CHECK(std::multiset<uint64_t>(by_clock.begin(), by_clock.end()) == every_row);
  CHECK(count_criteo_rows(data) == 21);
}

TEST_CASE("a reader started again deep in a stream passes the files read before unread") {
  // What a worker started again at a clock (after a resize or a rollback) does: pass the rows
  // before its place. Files this process read its part of to their end, unchanged since (size
  // and time), are passed whole; a changed one is read again.
  test::text_file_dir dir("actorps_stream_pass");
  const std::string data = dir.path + "/data";
  fs::create_directories(data);
  const std::string a = dir.plain("data/a.tsv", criteo_lines("a", 40));
  dir.plain("data/b.tsv", criteo_lines("b", 30));
  dir.plain("data/c.tsv", criteo_lines("c", 20));
  for (int w = 0; w < 2; ++w) {
    CAPTURE(w);
    criteo_reader first(data, w, 2);
    const auto keys = row_keys(first);  // every file of the part read to its end
    const auto in_a = count_criteo_parts(data, 2)[0].rows[static_cast<std::size_t>(w)];
    REQUIRE(in_a > 5);
    for (std::size_t skip : {std::size_t(3), std::size_t(in_a), std::size_t(in_a + 4)}) {
      CAPTURE(skip);
      criteo_reader again(data, w, 2);
      CHECK(again.skip_rows(skip) == skip);
      const auto rest = row_keys(again);
      CHECK(rest == std::vector<uint64_t>(keys.begin() + std::ptrdiff_t(skip), keys.end()));
    }
  }
  // The first row of b.tsv's first part, and a's rows of that part as read before.
  criteo_batch batch;
  criteo_reader b_only(data + "/b.tsv", 0, 2);
  REQUIRE(b_only.next_batch(1, batch) == 1);
  const auto first_of_b = batch.keys[0];
  criteo_reader a_only(data + "/a.tsv", 0, 2);
  const auto in_a = row_keys(a_only).size();
  auto next_after = [&](std::size_t skip) {
    criteo_reader reader(data, 0, 2);
    CHECK(reader.skip_rows(skip) == skip);
    criteo_batch one;
    REQUIRE(reader.next_batch(1, one) == 1);
    return one.keys[0];
  };
  CHECK(next_after(in_a) == first_of_b);
  // a.tsv rewritten with the same size and time, two of its rows joined into one line: passed
  // unread, its count is the one known (a reader of it would find one row less and take b's
  // first row as a's last)
  const auto time = fs::last_write_time(a);
  auto text = criteo_lines("a", 40);
  text[text.find('\n')] = ' ';
  dir.plain("data/a.tsv", text);
  fs::last_write_time(a, time);
  CHECK(next_after(in_a) == first_of_b);
  // another size: read again
  dir.plain("data/a.tsv", criteo_lines("a", 44));
  criteo_reader grown(data + "/a.tsv", 0, 2);
  const auto in_grown = row_keys(grown).size();
  REQUIRE(in_grown > in_a);
  CHECK(next_after(in_grown) == first_of_b);
}

TEST_CASE("a bad line in a directory names its file and line, and an empty directory is refused") {
  test::text_file_dir dir("actorps_stream");
  fs::create_directories(dir.path + "/data");
  dir.plain("data/1.tsv", criteo_lines("one", 4));
  auto bad = criteo_lines("two", 5);
  bad.insert(bad.find('\n', bad.find('\n') + 1) + 1, "1\t2\n");  // line 3 of 2.tsv
  dir.plain("data/2.tsv", bad);
  criteo_reader reader(dir.path + "/data");
  criteo_batch batch;
  std::string what;
  try {
    while (reader.next_batch(2, batch) > 0) {}
  } catch (const dataset_error& e) {
    what = e.what();
  }
  CHECK(what == dir.path + "/data/2.tsv:3: 2 fields, expected 40 (label, I1-I13, C1-C26)");

  fs::create_directories(dir.path + "/empty");
  dir.plain("empty/.hidden", criteo_lines("x", 2));
  CHECK_THROWS_WITH_AS(criteo_reader(dir.path + "/empty"),
                       (dir.path + "/empty: a directory without data files").c_str(),
                       dataset_error);
  CHECK_THROWS_AS(libsvm_reader(dir.path + "/empty"), dataset_error);
}

TEST_CASE("a run on a directory trains every row once a pass, by the workers' own train events") {
  days_dir days;
  const auto metrics = days.path + "/metrics.jsonl";
  run_expecting(days.run(days.train(), "--metrics " + metrics), 0);
  const auto t = trained_rows(metrics);
  CHECK(t.samples == std::map<int, int64_t>{{0, 1500}, {1, 1500}});
  CHECK(t.rows.at({0, 15}) == 60);  // the pass's short last batch, at its end
}

TEST_CASE("a run killed mid-file resumes where it was: every clock trains the same rows") {
  days_dir days;
  const auto whole = days.path + "/whole.jsonl", parts = days.path + "/parts.jsonl";
  run_expecting(days.run(days.train(), "--checkpoint-every 5 --checkpoint-dir " + days.path
                                         + "/a --metrics " + whole), 0);
  const auto killed = days.run(days.train(), "--checkpoint-every 5 --checkpoint-dir " + days.path
                                               + "/b --metrics " + parts);
  run_expecting(killed + " --kill process@checkpoint=10", 128 + 9);  // ckpt-5 stays

  // the checkpoint says where each worker is: 5 batches of 96 = 480 of its 500 rows of day 1
  auto ckpt = load_checkpoint(days.path + "/b/ckpt-000000000005");
  auto run = decode_run_checkpoint(ckpt.run_bytes);
  REQUIRE(run);
  REQUIRE(run->files.size() == 3);
  CHECK(run->files[0].name == "day-1.tsv.gz");
  CHECK(run->files[2].rows == std::vector<int64_t>{500, 500});
  for (const auto& p : run->positions) {
    CHECK(p.file == 0);
    CHECK(p.file_row == 480);
  }

  const auto out = run_expecting(killed + " --resume", 0);
  CHECK(contains(out, "(clock 5)"));
  const auto a = trained_rows(whole), b = trained_rows(parts);
  CHECK(a.samples == std::map<int, int64_t>{{0, 1500}, {1, 1500}});
  CHECK(b.samples == a.samples);  // every row once overall, as the uninterrupted run
  CHECK(b.rows == a.rows);
  REQUIRE(b.loss.size() == a.loss.size());
  for (const auto& [at, loss] : a.loss) {
    INFO("worker " << at.first << " clock " << at.second);
    CHECK(b.loss.at(at) == doctest::Approx(loss).epsilon(1e-6));  // the same rows, the same model
  }
}

TEST_CASE("--resume takes files added after the checkpoint's, refuses a changed one or another directory") {
  days_dir days;
  const auto ckpts = " --checkpoint-every 5 --checkpoint-dir " + days.path + "/ck";
  const auto killed = days.run(days.train(), ckpts);
  run_expecting(killed + " --kill process@checkpoint=10", 128 + 9);  // ckpt-5: all in day 1

  fs::copy(days.train(), days.path + "/copy", fs::copy_options::recursive);
  auto other = run_expecting(days.run(days.path + "/copy", ckpts + " --resume"), 2);
  CHECK(contains(other, "the checkpoint's dataset is criteo:" + days.train() + ", this run's criteo:"
                          + days.path + "/copy"));

  const auto day1 = days.train() + "/day-1.tsv.gz";
  fs::copy_file(day1, days.path + "/day-1.saved");
  {  // a second gzip member: the file reads on with day 3's rows
    std::ifstream more(days.train() + "/day-3.tsv.gz", std::ios::binary);
    std::ofstream(day1, std::ios::binary | std::ios::app) << more.rdbuf();
  }
  auto changed = run_expecting(killed + " --resume", 2);
  CHECK(contains(changed, "file 1 of criteo:" + days.train() + " is day-1.tsv.gz of"));
  CHECK(contains(changed, "files before the checkpoint's position may not change"));
  fs::remove(day1);
  fs::rename(days.path + "/day-1.saved", day1);

  fs::copy_file(days.train() + "/day-3.tsv.gz", days.train() + "/day-4.tsv.gz");
  auto added = run_expecting(killed + " --resume", 0);
  CHECK(contains(added, "(clock 5)"));
}

TEST_CASE("gen-data criteo --days writes N+1 files whose values drift by the share asked") {
  test::scratch_dir dir("actorps_days");
  auto stream = [&](const std::string& name, double drift) {
    const auto out = run_expecting("gen-data criteo --days 2 --rows 3000 --test-rows 1000 --seed 3"
                                   " --drift " + std::to_string(drift) + " --out " + dir.path + "/"
                                   + name, 0);
    return nlohmann::json::parse(out);
  };
  const auto drifting = stream("drift", 0.25), still = stream("still", 0);
  CHECK(test::dir_entries(dir.path + "/drift") == std::set<std::string>{"test.tsv", "train"});
  CHECK(test::dir_entries(dir.path + "/drift/train")
        == std::set<std::string>{"day-1.tsv", "day-2.tsv"});
  CHECK(drifting["day_files"].size() == 2);
  CHECK(drifting["best_test_auc"].get<double>() > 0.7);
  CHECK(drifting["values_all_days"].get<int64_t>() > drifting["values_per_day"].get<int64_t>());

  // The share of day 1's values still there on day 2 (and on the test day), over the fields
  // whose every value shows in a day's rows (vocabulary up to 30): a share F retires a day.
  auto overlap = [&](const std::string& name, const std::string& from, const std::string& to) {
    const auto& vocabulary = drifting["vocabulary"];
    auto values = [&](const std::string& file) {
      std::vector<std::set<uint64_t>> out(criteo_categorical_fields);
      criteo_reader reader(dir.path + "/" + name + "/" + file);
      criteo_batch batch;
      while (reader.next_batch(1024, batch) > 0)
        for (std::size_t i = 0; i < batch.keys.size(); ++i)
          out[i % criteo_categorical_fields].insert(batch.keys[i]);
      return out;
    };
    const auto a = values(from), b = values(to);
    double kept = 0, total = 0;
    for (int f = 0; f < criteo_categorical_fields; ++f) {
      if (vocabulary[f].get<int64_t>() > 30) continue;
      for (auto key : a[f]) kept += b[f].count(key);
      total += double(a[f].size());
    }
    return kept / total;
  };
  CHECK(overlap("drift", "train/day-1.tsv", "train/day-2.tsv") == doctest::Approx(0.75).epsilon(0.08));
  CHECK(overlap("drift", "train/day-2.tsv", "test.tsv") == doctest::Approx(0.75).epsilon(0.08));
  CHECK(overlap("still", "train/day-1.tsv", "train/day-2.tsv") == 1.0);
}

namespace {

/// The test AUC of a run's final evaluation, from its metrics file.
double final_auc(const std::string& metrics) {
  for (const auto& e : test::metrics_events(metrics, "eval"))
    if (e["final"].get<bool>()) return e["test_auc"].get<double>();
  FAIL("no final evaluation in " << metrics);
  return 0;
}

} // namespace

TEST_CASE("--init-from starts from another run's state, and refuses another model") {
  days_dir days;
  const auto source = days.path + "/source.jsonl";
  run_expecting(days.run(days.train(), "--table-optimizer adagrad --checkpoint-dir " + days.path
                                         + "/day-n --metrics " + source, 48), 0);
  const double trained = final_auc(source);
  REQUIRE(trained > 0.6);

  // One step at a learning rate of 1e-9 changes nothing measurable: the evaluation shows the
  // state the run started from. Another number of workers is fine.
  const std::string still = "simulate --dataset criteo:" + days.train() + " --test " + days.path
                            + "/test.tsv.gz --model lr --workers 1 --ps 1 --batch 96 --steps 1 "
                              "--table-optimizer adagrad --lr 1e-9 --table-lr 1e-9 --eval-every 0 "
                              "--no-progress --metrics ";
  const auto out = run_expecting(still + days.path + "/warm.jsonl --init-from " + days.path
                                   + "/day-n", 0);
  CHECK(contains(out, "starting from the state of " + days.path + "/day-n/ckpt-000000000048"));
  CHECK(final_auc(days.path + "/warm.jsonl") == doctest::Approx(trained).epsilon(1e-4));
  run_expecting(still + days.path + "/cold.jsonl", 0);
  CHECK(final_auc(days.path + "/cold.jsonl") < trained - 0.05);  // the same without it

  const auto other = run_expecting("simulate --dataset criteo:" + days.train() + " --test "
                                     + days.path + "/test.tsv.gz --model dlrm:4 --steps 1 "
                                       "--no-progress --init-from " + days.path + "/day-n", 2);
  CHECK(contains(other, "--init-from: " + days.path + "/day-n/ckpt-000000000048 cannot start this "
                        "run: the checkpoint's model is "));
}

TEST_CASE("a resume at a pass's short last batch goes on into files added since") {
  days_dir days;
  const auto metrics = days.path + "/m.jsonl";
  const auto killed = days.run(days.train(), "--checkpoint-every 5 --checkpoint-dir " + days.path
                                               + "/ck --metrics " + metrics);
  // ckpt-15: 15 batches, one epoch of the chief's count (1 500 / 96 = 15 whole batches), but
  // each worker's pass over the files has a 16th batch, of 60 rows, still to come
  run_expecting(killed + " --kill process@checkpoint=16", 128 + 9);
  fs::copy_file(days.train() + "/day-3.tsv.gz", days.train() + "/day-4.tsv.gz");
  const auto out = run_expecting(killed + " --resume", 0);
  CHECK(contains(out, "(clock 15)"));
  // clock 15 is batch 15 of the longer stream: day 3's last 60 rows and 36 of day 4
  const auto t = trained_rows(metrics);
  CHECK(t.rows.at({0, 15}) == 96);
  CHECK(t.rows.at({1, 15}) == 96);
}
