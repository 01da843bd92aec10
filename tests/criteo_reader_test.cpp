#include "actors/data/criteo_batches.hpp"
#include "actors/data/criteo_reader.hpp"
#include "actors/data/libsvm_batches.hpp"

#include "actors/ps/dataset.hpp"
#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace actorps;

namespace {

struct criteo_dir : test::text_file_dir {
  criteo_dir() : text_file_dir("actorps_criteo") {}
};

/// One row as a comparable value.
struct row {
  float label = 0;
  std::vector<float> dense = {};
  std::vector<uint64_t> keys = {};
  bool operator==(const row& o) const {
    return label == o.label && dense == o.dense && keys == o.keys;
  }
  bool operator<(const row& o) const {
    return std::tie(keys, dense, label) < std::tie(o.keys, o.dense, o.label);
  }
};

/// Every row `reader` gives from here on, read `batch` rows at a time.
std::vector<row> read_all(criteo_reader& reader, size_t batch = 3) {
  std::vector<row> rows;
  criteo_batch b;
  while (reader.next_batch(batch, b) > 0) {
    REQUIRE(b.dense.size() == b.rows() * 13);
    REQUIRE(b.keys.size() == b.rows() * 26);
    for (size_t r = 0; r < b.rows(); ++r)
      rows.push_back({b.labels[r],
                      {b.dense.begin() + static_cast<long>(r * 13),
                       b.dense.begin() + static_cast<long>(r * 13 + 13)},
                      {b.keys.begin() + static_cast<long>(r * 26),
                       b.keys.begin() + static_cast<long>(r * 26 + 26)}});
  }
  CHECK(b.rows() == 0);
  return rows;
}

/// The rows of all `parts` parts of `file`, part 0's first.
std::vector<row> read_parts(const std::string& file, int parts) {
  std::vector<row> rows;
  for (int p = 0; p < parts; ++p) {
    criteo_reader reader(file, p, parts);
    const auto part = read_all(reader);
    CHECK(reader.rows_read() == static_cast<int64_t>(part.size()));
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

/// What reading all of `file` throws; fails the test when it throws nothing.
std::string read_error(const std::string& file, int part = 0, int parts = 1) {
  try {
    criteo_reader reader(file, part, parts);
    read_all(reader);
  } catch (const dataset_error& e) {
    return e.what();
  }
  FAIL("reading " << file << " threw no dataset_error");
  return {};
}

/// A line of `label`, the integer fields `ints` and the categorical fields `cats`, tab-joined.
std::string line(const std::string& label, const std::vector<std::string>& ints,
                 const std::vector<std::string>& cats) {
  std::string text = label;
  for (const auto& f : ints) text += "\t" + f;
  for (const auto& f : cats) text += "\t" + f;
  return text;
}

/// Line i of a numbered file: every field told apart by i, some missing.
std::string numbered_line(int i) {
  std::vector<std::string> ints(13), cats(26);
  for (int j = 0; j < 13; ++j)
    if ((i + j) % 5) ints[j] = std::to_string((i * 7 + j) % 50 - 2);
  for (int f = 0; f < 26; ++f)
    if ((i + f) % 7) cats[f] = std::to_string(i * 100 + f);
  return line(i % 3 ? "0" : "1", ints, cats);
}

std::string numbered_rows(int lines, const std::string& line_end, bool final_line_end,
                          bool empty_lines) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    text += numbered_line(i);
    if (i + 1 < lines || final_line_end) text += line_end;
    if (empty_lines && i % 5 == 2) text += line_end;
  }
  return text;
}

const std::vector<std::string> no_ints(13), no_cats(26);

std::vector<std::string> hex_cats() {
  std::vector<std::string> cats;
  for (int f = 0; f < 26; ++f) {
    char value[9];
    std::snprintf(value, sizeof value, "%08x", 0x68fd1e64u + static_cast<unsigned>(f));
    cats.push_back(value);
  }
  return cats;
}

float dense(double x) { return static_cast<float>(std::log1p(x)); }

} // namespace

TEST_CASE("criteo_key puts the field in the top byte and a fixed hash below") {
  static_assert(criteo_key(0, "") == 0);
  static_assert(criteo_key(25, "") == uint64_t{25} << 56);
  static_assert(criteo_field_of(criteo_key(17, "68fd1e64")) == 17);
  // Fixed forever: trained models and checkpoints hold these keys.
  CHECK(criteo_value_hash("") == 0xe220a8397b1dcdafull);
  CHECK(criteo_value_hash("68fd1e64") == 0xb3349f435b90e3faull);
  CHECK(criteo_value_hash("a longer value, 3 words") == 0x20ffcbb669f091b2ull);
  for (int f = 0; f < 26; ++f) {
    CAPTURE(f);
    const uint64_t key = criteo_key(f, "68fd1e64");
    CHECK(criteo_field_of(key) == f);
    CHECK((key & criteo_value_mask) == (criteo_value_hash("68fd1e64") & criteo_value_mask));
    CHECK(criteo_key(f, "") == static_cast<uint64_t>(f) << 56);
  }
  // Values that differ in one byte, in their length or only in a trailing zero byte differ.
  const std::vector<std::string> values = {"a", "b", "ab", "ba", std::string("ab\0", 3),
                                           "68fd1e64", "68fd1e65", "68fd1e640", "0"};
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = i + 1; j < values.size(); ++j)
      CHECK(criteo_key(3, values[i]) != criteo_key(3, values[j]));
  CHECK(criteo_dense_value(0) == 0.0f);
  CHECK(criteo_dense_value(-3) == 0.0f);
  CHECK(criteo_dense_value(1) == dense(1));
  CHECK(criteo_dense_value(1000000) == dense(1000000));
}

TEST_CASE("criteo_reader reads labels, dense values and keys exactly") {
  criteo_dir dir;
  const auto cats = hex_cats();
  std::vector<std::string> ints = {"1", "", "-3", "+5", "0", "123456789012", "7", "", "",
                                   "9223372036854775807", "2", "", "40"};
  std::vector<std::string> some_cats = cats;
  some_cats[0] = some_cats[13] = some_cats[25] = "";
  some_cats[1] = "not hex, any bytes but a tab";
  const std::string text = line("1", ints, cats) + "\n" + line("0", no_ints, no_cats) + "\r\n" +
                           "\n" + line("0", ints, some_cats) + "\n";
  const std::vector<float> expected_dense = {dense(1), 0, 0, dense(5), 0, dense(123456789012.0),
                                             dense(7), 0, 0, dense(9223372036854775807.0),
                                             dense(2), 0, dense(40)};
  std::vector<uint64_t> keys, missing_keys, some_keys;
  for (int f = 0; f < 26; ++f) {
    keys.push_back(criteo_key(f, cats[f]));
    missing_keys.push_back(uint64_t(f) << 56);
    some_keys.push_back(criteo_key(f, some_cats[f]));
  }
  const std::vector<row> expected = {{1, expected_dense, keys},
                                     {0, std::vector<float>(13, 0.0f), missing_keys},
                                     {0, expected_dense, some_keys}};
  for (const std::string& file :
       {dir.plain("small.tsv", text), dir.gzip("small.tsv.gz", text)}) {
    CAPTURE(file);
    criteo_reader reader(file);
    CHECK(reader.compressed() == (file.back() == 'z'));
    CHECK(read_all(reader, 2) == expected);
    CHECK(reader.rows_read() == 3);
    CHECK(reader.lines_skipped() == 0);
    CHECK(count_criteo_rows(file) == 3);
  }
}

TEST_CASE("criteo_reader parts 1 to 6 read every line exactly once, plain and gzip") {
  criteo_dir dir;
  for (const std::string line_end : {"\n", "\r\n"})
    for (const bool final_line_end : {true, false})
      for (const bool empty_lines : {false, true}) {
        const std::string text = numbered_rows(23, line_end, final_line_end, empty_lines);
        const std::string plain = dir.plain("rows.tsv", text);
        const std::string gz = dir.gzip("rows.tsv.gz", text);
        criteo_reader whole(plain);
        const auto expected = read_all(whole);
        REQUIRE(expected.size() == 23);
        CHECK(count_criteo_rows(gz) == 23);
        auto sorted = expected;
        std::sort(sorted.begin(), sorted.end());
        for (int parts = 1; parts <= 6; ++parts) {
          CAPTURE(parts);
          CAPTURE(final_line_end);
          CAPTURE(empty_lines);
          CHECK(read_parts(plain, parts) == expected);  // byte ranges keep the file's order
          auto dealt = read_parts(gz, parts);            // dealt round-robin: sort to compare
          std::sort(dealt.begin(), dealt.end());
          CHECK(dealt == sorted);
        }
      }
}

TEST_CASE("criteo_reader names file, line and field of a bad line") {
  criteo_dir dir;
  const auto cats = hex_cats();
  std::vector<std::string> ints = {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12",
                                   "13"};
  const auto with_int = [&](int j, const std::string& value) {
    auto bad = ints;
    bad[j] = value;
    return line("1", bad, cats);
  };
  const std::vector<std::string> short_cats(cats.begin(), cats.begin() + 24);
  auto long_cats = cats;
  long_cats.push_back("extra");
  struct bad_case {
    std::string line, message;
  };
  const std::string count = " fields, expected 40 (label, I1-I13, C1-C26)";
  const std::vector<bad_case> cases = {
      {line("1", ints, short_cats), ": 38" + count},
      {line("1", ints, long_cats), ": 41" + count},
      {"hello", ": 1 field, expected 40 (label, I1-I13, C1-C26)"},
      // 12 integers and a trailing tab: 40 fields, C1's value lands in I13.
      {line("1", {ints.begin(), ints.end() - 1}, cats) + "\t",
       ": field I13 '" + cats[0] + "' is not an integer"},
      {with_int(2, "x1"), ": field I3 'x1' is not an integer"},
      {with_int(12, "1.5"), ": field I13 '1.5' is not an integer"},
      {with_int(0, " 1"), ": field I1 ' 1' is not an integer"},
      {with_int(4, "--2"), ": field I5 '--2' is not an integer"},
      {with_int(0, "99999999999999999999"),
       ": field I1 '99999999999999999999' is beyond the range of a 64-bit integer"},
      {line("2", ints, cats), ": label '2' is not 0 or 1"},
      {line("", ints, cats), ": label '' is not 0 or 1"},
      {line("1.0", ints, cats), ": label '1.0' is not 0 or 1"},
      {line("-1", ints, cats), ": label '-1' is not 0 or 1"},
      // A shifted line reports its field count, not the field that shifting made bad.
      {line("1", {ints.begin(), ints.end() - 1}, cats), ": 39" + count},
  };
  // The bad line is line 31 (empty lines counted), near the end, so that with 2 and 3 parts it
  // falls in the last part, whose line numbers are counted from the file's start.
  std::string good;
  for (int i = 0; i < 28; ++i) good += numbered_line(i) + "\n";
  good += "\n" + numbered_line(28) + "\n";
  for (const auto& c : cases) {
    CAPTURE(c.line);
    for (int parts = 1; parts <= 3; ++parts) {
      const std::string text = good + c.line + "\n" + numbered_line(29) + "\n";
      const std::string file = dir.plain("train.tsv", text);
      CAPTURE(parts);
      CHECK(read_error(file, parts - 1, parts) == file + ":31" + c.message);
      const std::string gz = dir.gzip("train.tsv.gz", text);
      const int owner = 29 % parts;  // the bad line is data line 29 (0-based)
      CHECK(read_error(gz, owner, parts) == gz + ":31" + c.message);
    }
  }
}

TEST_CASE("criteo_reader refuses an empty file, a missing file and bad arguments") {
  criteo_dir dir;
  for (const std::string text : {"", "\n\n", "\r\n"}) {
    const std::string file = dir.plain("empty.tsv", text);
    for (int p = 0; p < 2; ++p)
      CHECK(read_error(file, p, 2) ==
            file + ": no data rows (the file is empty or holds only empty lines)");
    CHECK(count_criteo_rows(file) == 0);
    const std::string gz = dir.gzip("empty.tsv.gz", text);
    CHECK(read_error(gz) == gz + ": no data rows (the file is empty or holds only empty lines)");
  }
  const std::string absent = dir.path + "/absent.tsv";
  CHECK(read_error(absent) == absent + ": missing or unreadable (No such file or directory)");
  const std::string file = dir.plain("ok.tsv", numbered_line(1) + "\n");
  CHECK_THROWS_AS(criteo_reader(file, 2, 2), std::invalid_argument);
  CHECK_THROWS_AS(criteo_reader(file, -1, 2), std::invalid_argument);
  CHECK_THROWS_AS(criteo_reader(file, 0, 0), std::invalid_argument);
  criteo_reader reader(file);
  criteo_batch b;
  CHECK_THROWS_AS(reader.next_batch(0, b), std::invalid_argument);
}

TEST_CASE("criteo_reader with skip_bad_lines skips and counts bad lines") {
  criteo_dir dir;
  const auto cats = hex_cats();
  const std::string text = numbered_line(0) + "\n" + line("2", no_ints, cats) + "\n" +
                           numbered_line(1) + "\n" + line("1", no_ints, {"x"}) + "\n" +
                           numbered_line(2) + "\n" + line("0", {"x"}, cats) + "\n" +
                           numbered_line(3) + "\n";
  const std::string file = dir.plain("some_bad.tsv", text);
  criteo_options options;
  options.skip_bad_lines = true;
  criteo_reader reader(file, 0, 1, options);
  const auto rows = read_all(reader, 2);
  CHECK(rows.size() == 4);
  CHECK(reader.rows_read() == 4);
  CHECK(reader.lines_skipped() == 3);
  CHECK(reader.first_skip_reason() == file + ":2: label '2' is not 0 or 1");
  const std::string good = dir.plain("good.tsv", numbered_rows(4, "\n", true, false));
  criteo_reader clean(good);
  CHECK(read_all(clean) == rows);  // the rows around a skipped line are untouched
  int64_t skipped = 0, read = 0;
  for (int p = 0; p < 3; ++p) {
    criteo_reader part(file, p, 3, options);
    read_all(part);
    skipped += part.lines_skipped();
    read += part.rows_read();
  }
  CHECK(skipped == 3);
  CHECK(read == 4);
  reader.rewind();
  CHECK(reader.lines_skipped() == 0);
  CHECK(reader.first_skip_reason().empty());
}

TEST_CASE("criteo_reader rewinds to its part's first row for the next epoch") {
  criteo_dir dir;
  const std::string text = numbered_rows(40, "\n", true, true);
  for (const std::string& file : {dir.plain("epochs.tsv", text), dir.gzip("epochs.tsv.gz", text)})
    for (int p = 0; p < 3; ++p) {
      criteo_reader reader(file, p, 3);
      const auto first = read_all(reader, 4);
      CHECK(first.size() > 10);
      reader.rewind();
      CHECK(reader.rows_read() == 0);
      CHECK(read_all(reader, 5) == first);
    }
}

TEST_CASE("criteo_batches gives every clock the same batch whatever order it is asked in") {
  criteo_dir dir;
  const std::string text = numbered_rows(23, "\n", true, false);
  for (const std::string& file : {dir.plain("clocks.tsv", text), dir.gzip("clocks.tsv.gz", text)}) {
    CAPTURE(file);
    criteo_reader reader(file, 1, 2);
    const auto part = read_all(reader);  // 11 or 12 rows: 3 batches of 4 per epoch
    REQUIRE(part.size() > 8);
    REQUIRE(part.size() <= 12);
    criteo_batches data(file, 1, 2, 4);
    CHECK(data.batches_per_epoch() == 0);
    std::vector<std::vector<row>> forward;
    for (int64_t clock = 0; clock < 7; ++clock) {
      const criteo_batch& b = data.at(clock);
      criteo_batch copy = b;
      std::vector<row> rows;
      for (size_t r = 0; r < copy.rows(); ++r)
        rows.push_back({copy.labels[r],
                        {copy.dense.begin() + static_cast<long>(r * 13),
                         copy.dense.begin() + static_cast<long>(r * 13 + 13)},
                        {copy.keys.begin() + static_cast<long>(r * 26),
                         copy.keys.begin() + static_cast<long>(r * 26 + 26)}});
      const size_t first = static_cast<size_t>(clock % 3) * 4;
      CHECK(rows == std::vector<row>(part.begin() + static_cast<long>(first),
                                     part.begin() + static_cast<long>(
                                                        std::min(first + 4, part.size()))));
      forward.push_back(rows);
    }
    CHECK(data.batches_per_epoch() == 3);
    // Rewinds (an earlier clock), repeats (the two kept) and jumps all give the same batches.
    for (const int64_t clock : {2, 1, 2, 5, 0, 6, 6, 3, 4, 1}) {
      const criteo_batch& b = data.at(clock);
      CHECK(b.rows() == forward[static_cast<size_t>(clock)].size());
      CHECK(b.labels.front() == forward[static_cast<size_t>(clock)].front().label);
      CHECK(std::vector<uint64_t>(b.keys.begin(), b.keys.begin() + 26) ==
            forward[static_cast<size_t>(clock)].front().keys);
    }
    CHECK_THROWS_AS(data.at(-1), std::invalid_argument);
  }
  const std::string one = dir.plain("one.tsv", numbered_line(0) + "\n");
  CHECK_THROWS_AS(criteo_batches(one, 1, 2, 4), dataset_error);  // an empty part
  CHECK_THROWS_AS(criteo_batches(one, 0, 1, 0), std::invalid_argument);
}

TEST_CASE("criteo_batches reads past the batches before a clock without parsing, row for row") {
  // A fresh reader asked for a far clock (a resumed worker) passes the batches before it with
  // skip_rows: the same rows as a reader that read every batch, empty lines and CRLF included,
  // in both parts of a plain and a gzip file. With skip_bad_lines a bad line is no row, so the
  // rows before are parsed to tell: a bad line in them moves the later batches by one row.
  criteo_dir dir;
  const std::string text = numbered_rows(61, "\r\n", true, true);
  for (const std::string& file : {dir.plain("far.tsv", text), dir.gzip("far.tsv.gz", text)}) {
    for (int part = 0; part < 2; ++part) {
      CAPTURE(file);
      CAPTURE(part);
      criteo_batches sequential(file, part, 2, 4);
      for (int64_t clock : {5, 7, 9, 12}) {  // 30 or 31 rows a part: 8 batches an epoch
        criteo_batches fresh(file, part, 2, 4);
        for (int64_t c = 0; c < clock; ++c) sequential.at(c);
        const criteo_batch want = sequential.at(clock);
        const criteo_batch& got = fresh.at(clock);
        CHECK(got.labels == want.labels);
        CHECK(got.keys == want.keys);
        CHECK(got.dense == want.dense);
      }
    }
  }
  std::string bad = numbered_rows(20, "\n", true, false);
  bad.insert(bad.find('\n') + 1, "1\tnot a row\n");  // the second line
  const std::string file = dir.plain("bad.tsv", bad);
  criteo_options skip;
  skip.skip_bad_lines = true;
  clocked_batches<criteo_reader, criteo_batch> tolerant(file, 0, 1, 4, false, skip);
  const criteo_batch third = tolerant.at(2);  // rows 8..11 of the 20 good ones
  REQUIRE(third.rows() == 4);
  criteo_reader all(file, 0, 1, skip);
  const auto rows = read_all(all);
  REQUIRE(rows.size() == 20);
  CHECK(std::vector<uint64_t>(third.keys.begin(), third.keys.begin() + 26) == rows[8].keys);
}

TEST_CASE("libsvm_batches, the same template over libsvm_reader, still rewinds by clock") {
  criteo_dir dir;
  std::string text;
  for (int i = 0; i < 10; ++i) text += std::to_string(i % 2) + " " + std::to_string(i) + ":1\n";
  const std::string file = dir.plain("clocks.libsvm", text);
  libsvm_batches data(file, 0, 1, 3);  // 4 batches per epoch: 3, 3, 3, 1 rows
  for (const int64_t clock : {0, 1, 2, 3, 4, 1, 7, 0}) {
    CAPTURE(clock);
    const sparse_batch& b = data.at(clock);
    const int64_t index = clock % 4;
    CHECK(b.rows() == (index == 3 ? 1u : 3u));
    CHECK(b.keys.front() == static_cast<uint64_t>(index * 3));
  }
  CHECK(data.batches_per_epoch() == 4);
}
