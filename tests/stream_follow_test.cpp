// A training directory followed as it grows (--follow): the readers go on into files that appear
// later, and the watch hands on each new file (renamed into place) with its rows per worker, and
// the stop file. The runs themselves: tests/stream_follow_test.sh.
#include "actors/data/criteo_batches.hpp"
#include "actors/data/stream_watch.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/ps/model_registry.hpp"
#include "actors/storage/run_identity.hpp"

#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

using namespace actorps;
namespace fs = std::filesystem;

namespace {

/// A Criteo line whose C1 is "<file>-<row>".
std::string criteo_lines(const std::string& file, int rows) {
  std::string text;
  for (int r = 0; r < rows; ++r) {
    text += std::to_string(r % 2);
    for (int j = 0; j < criteo_dense_fields; ++j) text += "\t" + std::to_string(r + j);
    text += "\t" + file + "-" + std::to_string(r);
    for (int f = 1; f < criteo_categorical_fields; ++f) text += "\t";
    text += "\n";
  }
  return text;
}

/// The C1 keys of a batch, in order.
std::vector<uint64_t> c1(const criteo_batch& b) {
  std::vector<uint64_t> out;
  for (std::size_t r = 0; r < b.rows(); ++r) out.push_back(b.keys[r * criteo_categorical_fields]);
  return out;
}

/// The C1 keys of rows [from, to) of a file written by criteo_lines.
std::vector<uint64_t> keys_of(const std::string& file, int from, int to) {
  std::vector<uint64_t> out;
  for (int r = from; r < to; ++r) out.push_back(criteo_key(0, file + "-" + std::to_string(r)));
  return out;
}

std::vector<uint64_t> operator+(std::vector<uint64_t> a, const std::vector<uint64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Writes a file as a writer of a followed directory does: under a hidden name, renamed into
/// place.
void put(const test::text_file_dir& dir, const std::string& name, const std::string& text) {
  dir.plain("data/." + name + ".tmp", text);
  fs::rename(dir.path + "/data/." + name + ".tmp", dir.path + "/data/" + name);
}

/// What a stream_watch hands on, waited for on a condition (never a sleep).
struct watched {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<stream_file> files;
  std::vector<std::string> stops;

  stream_watch::callbacks callbacks() {
    stream_watch::callbacks on;
    on.grew = [this](std::vector<stream_file> more) {
      std::lock_guard<std::mutex> guard(mutex);
      for (auto& f : more) files.push_back(std::move(f));
      changed.notify_all();
    };
    on.stop = [this](const std::string& why) {
      std::lock_guard<std::mutex> guard(mutex);
      stops.push_back(why);
      changed.notify_all();
    };
    return on;
  }

  /// Waits up to 30 s for `done()`; whether it came.
  template <class Done>
  bool wait(Done done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(30), done);
  }
};

} // namespace

TEST_CASE("a followed directory reads on into files that appear later, in name order") {
  test::text_file_dir dir("actorps_follow");
  fs::create_directories(dir.path + "/data");
  dir.plain("data/b.tsv", criteo_lines("b", 7));
  const auto data = dir.path + "/data";
  criteo_batches followed(data, 0, 1, 4, true);
  criteo_batches fixed(data, 0, 1, 4);  // not following: its files are those at its start
  CHECK(c1(followed.at(0)) == keys_of("b", 0, 4));
  // batch 1 needs a row the files do not hold yet: an error, never a short batch or a wrap
  CHECK_THROWS_AS(followed.at(1), dataset_error);

  put(dir, "c.tsv", criteo_lines("c", 5));
  dir.plain("data/a.tsv", criteo_lines("a", 3));  // sorts before b.tsv: it came too late
  CHECK(c1(followed.at(1)) == keys_of("b", 4, 7) + keys_of("c", 0, 1));  // across the files
  CHECK(c1(followed.at(2)) == keys_of("c", 1, 5));
  put(dir, "d.tsv", criteo_lines("d", 4));
  CHECK(c1(followed.at(3)) == keys_of("d", 0, 4));
  CHECK(c1(followed.at(1)) == keys_of("b", 4, 7) + keys_of("c", 0, 1));  // read again (a resume)

  // The same clocks without --follow: b.tsv alone, the pass wrapping after its 2 batches.
  CHECK(c1(fixed.at(1)) == keys_of("b", 4, 7));
  CHECK(c1(fixed.at(2)) == keys_of("b", 0, 4));
  CHECK(fixed.batches_per_epoch() == 2);
}

TEST_CASE("the stream watch hands on files renamed into place, with each worker's rows, and the "
          "stop file") {
  test::text_file_dir dir("actorps_follow");
  fs::create_directories(dir.path + "/data");
  fs::create_directories(dir.path + "/control");
  dir.plain("data/day-1.tsv", criteo_lines("one", 6));
  data_source src;
  src.what = data_source::kind::criteo;
  src.train_path = dir.path + "/data";
  const auto stop = dir.path + "/control/stop";
  watched seen;
  stream_watch watch(src, 2, "day-1.tsv", stop, seen.callbacks());
  CHECK(watch.notified());  // inotify, not the fallback poll

  put(dir, "day-2.tsv", criteo_lines("two", 9));
  REQUIRE(seen.wait([&] { return !seen.files.empty(); }));
  {
    std::lock_guard<std::mutex> guard(seen.mutex);
    REQUIRE(seen.files.size() == 1);
    const auto& f = seen.files.front();
    CHECK(f.name == "day-2.tsv");
    CHECK(f.bytes == fs::file_size(dir.path + "/data/day-2.tsv"));
    REQUIRE(f.rows.size() == 2);
    CHECK(f.rows[0] + f.rows[1] == 9);
    CHECK(f.rows[0] == count_criteo_parts(dir.path + "/data/day-2.tsv", 2)[0].rows[0]);
  }

  dir.plain("data/day-0.tsv", criteo_lines("zero", 2));  // sorts before day-2: left out
  dir.plain("data/.day-3.tmp", criteo_lines("three", 4));  // hidden: not yet
  put(dir, "day-4.tsv", criteo_lines("four", 3));
  REQUIRE(seen.wait([&] { return seen.files.size() >= 2; }));
  dir.plain("control/stop", "");
  REQUIRE(seen.wait([&] { return !seen.stops.empty(); }));
  std::lock_guard<std::mutex> guard(seen.mutex);
  REQUIRE(seen.files.size() == 2);
  CHECK(seen.files[1].name == "day-4.tsv");
  CHECK(seen.files[1].rows[0] + seen.files[1].rows[1] == 3);
  CHECK(seen.stops == std::vector<std::string>{"the stop file " + stop});
}

TEST_CASE("a stream read to its last whole batch goes on into added files, one past a short "
          "last batch does not") {
  // One worker, batches of 96: day-1 read to its end at clock 2 (192 rows), as a followed run
  // that stopped there leaves it; day-2 added since.
  run_checkpoint saved;
  saved.spec.workers = 1;
  saved.batch = 96;
  saved.dataset = "criteo:/days";
  saved.files = {{"day-1.tsv", 1000, {192}}};
  saved.train_rows = 192;
  saved.positions = {{0, 2, 1, 0, 0, 192}};  // the chief counts 2 batches an epoch
  run_identity current{saved.spec, 96, "criteo:/days", 392,
                       {{"day-1.tsv", 1000, {192}}, {"day-2.tsv", 1000, {200}}}};
  CHECK(identity_difference(saved, current) == "");
  // 150 rows: clock 2 read a short batch of 54, which day-2's rows would have filled
  saved.files = current.files = {{"day-1.tsv", 1000, {150}}};
  current.files.push_back({"day-2.tsv", 1000, {200}});
  saved.train_rows = 150;
  saved.positions = {{0, 2, 2, 0, 0, 0}};  // 1 whole batch an epoch
  CHECK(identity_difference(saved, current).find("past their first pass") != std::string::npos);
}
