#include "actors/data/csv_dataset.hpp"

#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using namespace actorps;

namespace {

struct csv_dir : test::text_file_dir {
  csv_dir() : text_file_dir("actorps_csv") {}
};

/// What load_csv throws for `file`; fails the test when it throws nothing.
std::string load_error(const std::string& file, const csv_options& options = {}) {
  try {
    load_csv(file, options);
  } catch (const dataset_error& e) {
    return e.what();
  }
  FAIL("load_csv(" << file << ") threw no dataset_error");
  return {};
}

// Three rows, two features, labels first; every value exact in float.
const std::string small_csv = "0,1.5,-2\n2,0.25,3e2\n1,+4,0.1\n";
const std::vector<float> small_x = {1.5f, -2.0f, 0.25f, 300.0f, 4.0f, 0.1f};
const std::vector<int32_t> small_y = {0, 2, 1};

void check_small(const dataset& d) {
  CHECK(d.rows == 3);
  CHECK(d.cols == 2);
  CHECK(d.classes == 3);
  CHECK(d.x == small_x);
  CHECK(d.y == small_y);
}

} // namespace

TEST_CASE("load_csv reads a small file exactly with the label first") {
  csv_dir dir;
  check_small(load_csv(dir.plain("small.csv", small_csv)));
}

TEST_CASE("load_csv skips a detected header and reads the label from the last column") {
  csv_dir dir;
  const auto file = dir.plain("last.csv", "x1,x2,label\n1.5,-2,0\n0.25,3e2,2\n4,0.1,1\n");
  csv_options options;
  options.label_column = -1;
  check_small(load_csv(file, options));
  options.label_column = 2;
  check_small(load_csv(file, options));
  options.header = false;
  CHECK(load_error(file, options) == file + ":1:1: 'x1' is not a number (field 1)");
}

TEST_CASE("load_csv reads a numeric first line as data unless told it is a header") {
  csv_dir dir;
  const auto file = dir.plain("numbers.csv", "9,9,9\n" + small_csv);
  const dataset detected = load_csv(file);
  CHECK(detected.rows == 4);
  CHECK(detected.classes == 10);
  csv_options options;
  options.header = true;
  check_small(load_csv(file, options));
  // A header whose label field is a name but whose features are numbers is data, by the rule.
  CHECK(load_error(dir.plain("label_name.csv", "class,1,2\n0,1,2\n")) ==
        dir.path + "/label_name.csv:1:1: label 'class' is not a non-negative integer");
}

TEST_CASE("load_csv accepts CRLF, spaces, quotes, blank lines, a BOM and no final line end") {
  csv_dir dir;
  check_small(load_csv(dir.plain("crlf.csv", "0,1.5,-2\r\n2,0.25,3e2\r\n1,+4,0.1\r\n")));
  check_small(load_csv(dir.plain("trailing.csv", small_csv + "\n")));
  check_small(load_csv(dir.plain("no_final_newline.csv", "0,1.5,-2\n2,0.25,3e2\n1,+4,0.1")));
  check_small(load_csv(dir.plain("loose.csv", "\xEF\xBB\xBF\"a\",\"b, quoted\",\"c\"\r\n\r\n"
                                              " 0 ,\t1.5, -2\n  \n\"2\",0.25 ,3e2\n\n1,+4,0.1\n")));
  csv_options semicolons;
  semicolons.delimiter = ';';
  const auto semicolon_file = dir.plain("semicolons.csv", "0;1.5;-2\n2;0.25;3e2\n1;+4;0.1\n");
  check_small(load_csv(semicolon_file, semicolons));
  csv_options tabs;
  tabs.delimiter = '\t';
  check_small(load_csv(dir.plain("tabs.tsv", "0\t 1.5\t-2\n2\t0.25 \t3e2\n1\t+4\t0.1\n"), tabs));
  CHECK(load_error(semicolon_file, tabs) ==
        semicolon_file + ":1: 1 field; a row needs a label and at least one feature (is tab the "
                         "delimiter?)");
}

TEST_CASE("load_csv reads labels written as integral floats and tiny features as zero") {
  csv_dir dir;
  const auto file = dir.plain("numpy.csv", "3.000000000000000000e+00,1e-60\n1.0,-1e-60\n");
  const dataset d = load_csv(file);
  CHECK(d.y == std::vector<int32_t>{3, 1});
  CHECK(d.classes == 4);
  CHECK(d.x == std::vector<float>{0.0f, 0.0f});
}

TEST_CASE("load_csv reads a gzip-compressed file as the same dataset") {
  csv_dir dir;
  check_small(load_csv(dir.gzip("small.csv.gz", small_csv)));
  csv_options options;
  options.label_column = -1;
  check_small(load_csv(dir.gzip("header.csv.gz", "a,b,y\r\n1.5,-2,0\r\n0.25,3e2,2\r\n4,0.1,1\r\n"),
                       options));
}

TEST_CASE("load_csv names the file, line and column of a bad field") {
  csv_dir dir;
  struct bad_case {
    std::string text, message;
  };
  const std::vector<bad_case> cases = {
      {"0,1,2\n1, abc ,3\n", ":2:4: 'abc' is not a number (field 2)"},
      {"0,1,2\n1,2,3x\n", ":2:5: '3x' is not a number (field 3)"},
      {"0,nan\n", ":1:3: 'nan' is not a finite number (field 2)"},
      {"0,1\n1,-inf\n", ":2:3: '-inf' is not a finite number (field 2)"},
      {"0,1e39\n", ":1:3: '1e39' is out of float range (field 2)"},
      {"0,,1\n", ":1:3: empty field (field 2)"},
      {"0,1\n\n2.5,1\n", ":3:1: label '2.5' is not a non-negative integer"},
      {"-1,1\n", ":1:1: label '-1' is not a non-negative integer"},
      {"x,y\n,1\n", ":2:1: label '' is not a non-negative integer"},
      {"3000000000,1\n", ":1:1: label '3000000000' is too large for a class index"},
      {"0,1,2\n1,2,3\n\n1,2\n", ":4: 2 fields, expected 3 (as on line 1)"},
      {"\na,b,c\n0,1,2\n1,2,3,4\n", ":4: 4 fields, expected 3 (as on line 2)"},
      {"1\n2\n",
       ":1: 1 field; a row needs a label and at least one feature (is ',' the delimiter?)"},
      {"", ": no data rows"},
      {"\n  \r\n\n", ": no data rows"},
      {"a,b\n", ": no data rows"},
  };
  for (const auto& c : cases) {
    const std::string file = dir.plain("data.csv", c.text);
    CHECK(load_error(file) == file + c.message);
  }
  const std::string file = dir.plain("data.csv", "0,1,2\n");
  csv_options options;
  options.label_column = 3;
  CHECK(load_error(file, options) ==
        file + ":1: the label column is 3 (0-based) but the line has 3 fields");
  CHECK(load_error(dir.path + "/absent.csv") ==
        dir.path + "/absent.csv: missing or unreadable (No such file or directory)");
  options.label_column = -2;
  CHECK_THROWS_AS(load_csv(file, options), std::invalid_argument);
}

TEST_CASE("load_csv refuses a truncated gzip file") {
  csv_dir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += std::to_string(i % 10) + "," + std::to_string(i) + "\n";
  const std::string whole = dir.gzip("whole.csv.gz", text);
  std::ifstream in(whole, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = dir.plain("cut.csv.gz", bytes.substr(0, bytes.size() / 2));
  const std::string message = load_error(cut);
  INFO(message);
  CHECK(message.rfind(cut + ": corrupt or truncated gzip stream: ", 0) == 0);
  CHECK(load_csv(whole).rows == 2000);
}

TEST_CASE("load_csv round-trips 3000 rows of 20 features, plain and gzip") {
  constexpr int rows = 3000, cols = 20, classes = 7;
  std::mt19937 gen(42);
  std::normal_distribution<float> normal(0.0f, 10.0f);
  dataset expected;
  std::string text = "label";
  for (int j = 0; j < cols; ++j) text += ",f" + std::to_string(j);
  text += "\n";
  char number[32];
  for (int i = 0; i < rows; ++i) {
    expected.y.push_back(i % classes);
    text += std::to_string(i % classes);
    for (int j = 0; j < cols; ++j) {
      expected.x.push_back(normal(gen));
      std::snprintf(number, sizeof number, ",%.9g", static_cast<double>(expected.x.back()));
      text += number;  // 9 significant digits always find the float again
    }
    text += i % 2 ? "\r\n" : "\n";
  }
  csv_dir dir;
  for (const auto& file : {dir.plain("big.csv", text), dir.gzip("big.csv.gz", text)}) {
    const dataset d = load_csv(file);
    CHECK(d.rows == rows);
    CHECK(d.cols == cols);
    CHECK(d.classes == classes);
    CHECK(d.y == expected.y);
    CHECK(d.x == expected.x);
  }
}

TEST_CASE("load_csv reads a line longer than its read buffer") {
  constexpr int cols = 100000;  // about 600 kB in one line
  std::string text = "1";
  for (int j = 0; j < cols; ++j) text += "," + std::to_string(j);
  csv_dir dir;
  const dataset d = load_csv(dir.plain("wide.csv", text + "\n0" + text.substr(1) + "\n"));
  REQUIRE(d.rows == 2);
  CHECK(d.cols == cols);
  CHECK(d.y == std::vector<int32_t>{1, 0});
  CHECK(d.x[cols - 1] == static_cast<float>(cols - 1));
  CHECK(d.x[cols + 12345] == 12345.0f);
}
