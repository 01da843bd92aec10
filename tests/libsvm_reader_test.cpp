#include "actors/data/libsvm_reader.hpp"

#include "actors/ps/dataset.hpp"
#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using namespace actorps;

namespace {

struct libsvm_dir : test::text_file_dir {
  libsvm_dir() : text_file_dir("actorps_libsvm") {}
};

/// One row as a comparable value: label, then (key, value) pairs.
struct row {
  float label;
  std::vector<std::pair<uint64_t, float>> pairs;
  bool operator==(const row& o) const { return label == o.label && pairs == o.pairs; }
  bool operator<(const row& o) const { return pairs < o.pairs; }
};

/// Every row `reader` gives from here on, read `batch` rows at a time.
std::vector<row> read_all(libsvm_reader& reader, size_t batch = 3) {
  std::vector<row> rows;
  sparse_batch b;
  while (reader.next_batch(batch, b) > 0) {
    REQUIRE(b.offsets.size() == b.rows() + 1);
    REQUIRE(b.offsets.back() == b.keys.size());
    REQUIRE(b.values.size() == b.keys.size());
    for (size_t r = 0; r < b.rows(); ++r) {
      row x{b.labels[r], {}};
      for (uint64_t i = b.offsets[r]; i < b.offsets[r + 1]; ++i)
        x.pairs.emplace_back(b.keys[i], b.values[i]);
      rows.push_back(x);
    }
  }
  CHECK(b.rows() == 0);
  return rows;
}

/// The rows of all `parts` parts of `file`, part 0's first.
std::vector<row> read_parts(const std::string& file, int parts) {
  std::vector<row> rows;
  for (int p = 0; p < parts; ++p) {
    libsvm_reader reader(file, p, parts);
    const auto part = read_all(reader);
    CHECK(reader.rows_read() == static_cast<int64_t>(part.size()));
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

/// What reading all of `file` throws; fails the test when it throws nothing.
std::string read_error(const std::string& file, int part = 0, int parts = 1) {
  try {
    libsvm_reader reader(file, part, parts);
    read_all(reader);
  } catch (const dataset_error& e) {
    return e.what();
  }
  FAIL("reading " << file << " threw no dataset_error");
  return {};
}

// Every label form, a comment, a qid, a row without pairs, the largest index, exact floats.
const std::string small_text =
    "1 3:0.5 10:2\n"
    "-1 1:1 7:-3.25e2 # a comment\n"
    "# a line that is only a comment\n"
    "+1 qid:4 5:1e-3\n"
    "0\n"
    "\n"
    "1.0\t2:+4  18446744073709551615:1e-60\n"
    "-1.0 0:0.25\n";

void check_small(const std::vector<row>& rows) {
  const std::vector<row> expected = {
      {1, {{3, 0.5f}, {10, 2.0f}}},
      {0, {{1, 1.0f}, {7, -325.0f}}},
      {1, {{5, 1e-3f}}},
      {0, {}},
      {1, {{2, 4.0f}, {UINT64_MAX, 0.0f}}},
      {0, {{0, 0.25f}}},
  };
  CHECK(rows == expected);
}

/// `lines` rows, row i holding the key i (so each is told apart), written with the line
/// ends and extras a file may have.
std::string numbered_rows(int lines, const std::string& line_end, bool final_line_end,
                          bool blanks) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    text += (i % 3 ? "1" : "-1") + std::string(" ") + std::to_string(i) + ":" +
            std::to_string(i % 7) + ".5";
    for (int k = 0; k < i % 4; ++k) text += " " + std::to_string(1000 + k) + ":1";
    if (i + 1 < lines || final_line_end) text += line_end;
    if (blanks && i % 5 == 2) text += "  " + line_end + "# note" + line_end;
  }
  return text;
}

} // namespace

TEST_CASE("libsvm_reader reads labels, pairs and values exactly") {
  libsvm_dir dir;
  const std::string file = dir.plain("small.libsvm", small_text);
  libsvm_reader reader(file);
  CHECK_FALSE(reader.compressed());
  check_small(read_all(reader, 4));
  CHECK(reader.rows_read() == 6);
  CHECK(reader.lines_skipped() == 0);
  CHECK(count_libsvm_rows(file) == 6);
}

TEST_CASE("libsvm_reader reads a gzip file as the same rows") {
  libsvm_dir dir;
  const std::string file = dir.gzip("small.libsvm.gz", small_text);
  libsvm_reader reader(file);
  CHECK(reader.compressed());
  check_small(read_all(reader));
  CHECK(count_libsvm_rows(file) == 6);
}

TEST_CASE("libsvm_reader parts 1 to 7 read every line exactly once") {
  libsvm_dir dir;
  for (const std::string line_end : {"\n", "\r\n"})
    for (const bool final_line_end : {true, false})
      for (const bool blanks : {false, true}) {
        const std::string text = numbered_rows(23, line_end, final_line_end, blanks);
        const std::string plain = dir.plain("rows.libsvm", text);
        const std::string gz = dir.gzip("rows.libsvm.gz", text);
        libsvm_reader whole(plain);
        const auto expected = read_all(whole);
        REQUIRE(expected.size() == 23);
        CHECK(count_libsvm_rows(plain) == 23);
        for (int parts = 1; parts <= 7; ++parts) {
          CAPTURE(parts);
          CAPTURE(final_line_end);
          CAPTURE(blanks);
          CHECK(read_parts(plain, parts) == expected);  // byte ranges keep the file's order
          auto dealt = read_parts(gz, parts);            // dealt round-robin: sort to compare
          std::sort(dealt.begin(), dealt.end());
          auto sorted = expected;
          std::sort(sorted.begin(), sorted.end());
          CHECK(dealt == sorted);
        }
      }
}

TEST_CASE("libsvm_reader gives an empty part no rows and a long line to one part") {
  libsvm_dir dir;
  const std::string one = dir.plain("one.libsvm", "1 5:1\n");
  for (int p = 0; p < 4; ++p) {
    libsvm_reader reader(one, p, 4);
    CHECK(read_all(reader).size() == (p == 0 ? 1u : 0u));
  }
  std::string wide = "0";
  for (int k = 1; k <= 20000; ++k) wide += " " + std::to_string(k) + ":1";  // ~190 kB
  const std::string file = dir.plain("wide.libsvm", wide + "\n1 1:2\n");
  const auto rows = read_parts(file, 5);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].pairs.size() == 20000);
  CHECK(rows[0].pairs.back() == std::pair<uint64_t, float>{20000, 1.0f});
  CHECK(rows[1] == row{1, {{1, 2.0f}}});
}

TEST_CASE("libsvm_reader names file, line and column of a bad line") {
  libsvm_dir dir;
  struct bad_case {
    std::string line, message;
  };
  const std::vector<bad_case> cases = {
      {"2 1:1", ":1: label '2' is not 0 or 1 (nor -1 or +1)"},
      {"0.5 1:1", ":1: label '0.5' is not 0 or 1 (nor -1 or +1)"},
      {"yes 1:1", ":1: label 'yes' is not 0 or 1 (nor -1 or +1)"},
      {"1:1 2:1", ":1: label '1:1' is not 0 or 1 (nor -1 or +1)"},
      {"1 1:1 7", ":7: '7' is not an index:value pair"},
      {"1 :5", ":3: ':5' is not an index:value pair"},
      {"1 3:", ":3: '3:' is not an index:value pair"},
      {"1 18446744073709551616:1", ":3: feature index '18446744073709551616' is beyond 2^64-1"},
      {"1  -3:1", ":4: feature index '-3' is not a non-negative integer"},
      {"1 x3:1", ":3: feature index 'x3' is not a non-negative integer"},
      {"1 7:nan", ":3: value 'nan' of feature 7 is not a finite number"},
      {"1 7:-inf", ":3: value '-inf' of feature 7 is not a finite number"},
      {"1 7:1e39", ":3: value '1e39' of feature 7 is out of float range"},
      {"1 7:1,5", ":3: value '1,5' of feature 7 is not a number"},
  };
  // The bad line is line 31 (blank and comment lines counted), near the end, so that with 2
  // and 3 parts it falls in the last part, whose line numbers are counted from the file's start.
  std::string good;
  for (int i = 0; i < 27; ++i) good += "1 " + std::to_string(i) + ":1\n";
  good += "\n# comment\n0 1:2\n";
  for (const auto& c : cases) {
    for (int parts = 1; parts <= 3; ++parts) {
      const std::string text = good + c.line + "\n1 2:3\n";
      const std::string file = dir.plain("bad.libsvm", text);
      CAPTURE(parts);
      CHECK(read_error(file, parts - 1, parts) == file + ":31" + c.message);
      const std::string gz = dir.gzip("bad.libsvm.gz", text);
      const int owner = 28 % parts;  // the bad line is data line 28 (0-based)
      CHECK(read_error(gz, owner, parts) == gz + ":31" + c.message);
    }
  }
}

TEST_CASE("libsvm_reader refuses a file without data, a missing file and bad arguments") {
  libsvm_dir dir;
  for (const std::string text : {"", "\n\n", "# only\n  # comments\r\n"}) {
    const std::string file = dir.plain("empty.libsvm", text);
    for (int p = 0; p < 2; ++p)
      CHECK(read_error(file, p, 2) == file + ": no data rows (the file is empty or holds only "
                                             "blank and comment lines)");
    CHECK(count_libsvm_rows(file) == 0);
  }
  const std::string absent = dir.path + "/absent.libsvm";
  CHECK(read_error(absent) == absent + ": missing or unreadable (No such file or directory)");
  const std::string file = dir.plain("ok.libsvm", "1 1:1\n");
  CHECK_THROWS_AS(libsvm_reader(file, 2, 2), std::invalid_argument);
  CHECK_THROWS_AS(libsvm_reader(file, -1, 2), std::invalid_argument);
  CHECK_THROWS_AS(libsvm_reader(file, 0, 0), std::invalid_argument);
  libsvm_reader reader(file);
  sparse_batch b;
  CHECK_THROWS_AS(reader.next_batch(0, b), std::invalid_argument);
}

TEST_CASE("libsvm_reader with skip_bad_lines skips and counts bad lines") {
  libsvm_dir dir;
  const std::string file = dir.plain("some_bad.libsvm", "1 1:1\n2 2:1\n0 3:1\n1 4:x\n"
                                                        "0 5:1\n1 6:1 7\n-1 8:1\n");
  libsvm_options options;
  options.skip_bad_lines = true;
  libsvm_reader reader(file, 0, 1, options);
  const auto rows = read_all(reader, 2);
  const std::vector<row> expected = {{1, {{1, 1.0f}}}, {0, {{3, 1.0f}}}, {0, {{5, 1.0f}}},
                                     {0, {{8, 1.0f}}}};
  CHECK(rows == expected);
  CHECK(reader.rows_read() == 4);
  CHECK(reader.lines_skipped() == 3);
  CHECK(reader.first_skip_reason() == file + ":2:1: label '2' is not 0 or 1 (nor -1 or +1)");
  int64_t skipped = 0, read = 0;
  for (int p = 0; p < 3; ++p) {
    libsvm_reader part(file, p, 3, options);
    read_all(part);
    skipped += part.lines_skipped();
    read += part.rows_read();
  }
  CHECK(skipped == 3);
  CHECK(read == 4);
}

TEST_CASE("libsvm_reader rewinds to its part's first row for the next epoch") {
  libsvm_dir dir;
  const std::string text = numbered_rows(40, "\n", true, true);
  for (const std::string& file : {dir.plain("epochs.libsvm", text),
                                  dir.gzip("epochs.libsvm.gz", text)}) {
    for (int p = 0; p < 3; ++p) {
      libsvm_reader reader(file, p, 3);
      const auto first = read_all(reader, 4);
      CHECK(first.size() > 10);
      reader.rewind();
      CHECK(reader.rows_read() == 0);
      CHECK(read_all(reader, 5) == first);
      CHECK(reader.rows_read() == static_cast<int64_t>(first.size()));
    }
  }
}
