#include "actors/data/line_reader.hpp"

#include "actors/ps/dataset.hpp"
#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace actorps;

namespace {

/// Every line `reader` returns from here on, with the 1-based number each says it has.
std::vector<std::pair<int64_t, std::string>> all_lines(line_reader& reader) {
  std::vector<std::pair<int64_t, std::string>> lines;
  std::string_view line;
  while (reader.next(line)) lines.emplace_back(reader.line_number(), std::string(line));
  return lines;
}

} // namespace

TEST_CASE("line_reader returns each line without its line end, CRLF included") {
  test::text_file_dir dir("actorps_lines");
  line_reader reader(dir.plain("a.txt", "one\r\n\ntwo\nthree"));
  CHECK_FALSE(reader.compressed());
  using lines = std::vector<std::pair<int64_t, std::string>>;
  CHECK(all_lines(reader) == lines{{1, "one"}, {2, ""}, {3, "two"}, {4, "three"}});
  reader.rewind();
  CHECK(all_lines(reader) == lines{{1, "one"}, {2, ""}, {3, "two"}, {4, "three"}});
  line_reader gz(dir.gzip("a.txt.gz", "one\r\n\ntwo\nthree\n"));
  CHECK(gz.compressed());
  CHECK(all_lines(gz) == lines{{1, "one"}, {2, ""}, {3, "two"}, {4, "three"}});
  CHECK_THROWS_AS(gz.restrict_to(0, 3), std::logic_error);
}

// The split rule at every possible cut: [0, cut) and [cut, size) together return every line
// once, in order, each with its own line number and offset, whatever byte the cut falls on
// (inside a line, on its '\n', on the '\r' of a CRLF, right after one).
TEST_CASE("line_reader ranges cut at any byte give every line to exactly one side") {
  test::text_file_dir dir("actorps_lines");
  for (const std::string text : {"ab\ncd\r\n\nefg\nh", "ab\ncd\r\n\nefg\nh\n", "\n\nx\n\n"}) {
    const std::string file = dir.plain("cut.txt", text);
    line_reader whole(file);
    const auto expected = all_lines(whole);
    for (uint64_t cut = 0; cut <= text.size(); ++cut) {
      CAPTURE(text);
      CAPTURE(cut);
      line_reader first(file), second(file);
      first.restrict_to(0, cut);
      second.restrict_to(cut, text.size());
      auto lines = all_lines(first);
      std::string_view line;
      while (second.next(line)) {
        CHECK(text.substr(second.line_offset(), line.size()) == line);
        lines.emplace_back(second.line_number(), std::string(line));
      }
      CHECK(lines == expected);
      second.rewind();  // the same range again, its numbers unchanged
      auto again = all_lines(second);
      CHECK(again == std::vector(expected.end() - static_cast<long>(again.size()), expected.end()));
    }
  }
}

TEST_CASE("line_number_at counts the line ends before an offset") {
  test::text_file_dir dir("actorps_lines");
  const std::string file = dir.plain("n.txt", "a\nbb\n\nccc\n");
  CHECK(line_number_at(file, 0) == 1);
  CHECK(line_number_at(file, 2) == 2);
  CHECK(line_number_at(file, 5) == 3);
  CHECK(line_number_at(file, 6) == 4);
  CHECK(line_number_at(file, 1000) == 5);
  CHECK_THROWS_AS(line_number_at(dir.path + "/absent", 1), dataset_error);
}
