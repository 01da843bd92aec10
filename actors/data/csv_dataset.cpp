#include "actors/data/csv_dataset.hpp"

#include "actors/data/line_reader.hpp"
#include "actors/data/text_fields.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace actorps {

namespace {

/// One field of a line: its text (trimmed, enclosing quotes removed) and the 1-based column
/// where it starts.
struct field {
  std::string_view text;
  size_t column;
};

/// Cuts `line` at each `delimiter` outside double quotes into `fields` (reused across lines).
void split_fields(std::string_view line, char delimiter, std::vector<field>& fields) {
  fields.clear();
  const bool has_quotes = line.find('"') != std::string_view::npos;
  size_t pos = 0;
  for (;;) {
    size_t stop = pos;
    if (has_quotes) {
      // A doubled quote inside quotes toggles twice and so stays inside.
      for (bool quoted = false; stop < line.size(); ++stop) {
        if (line[stop] == '"') quoted = !quoted;
        else if (line[stop] == delimiter && !quoted) break;
      }
    } else {
      const void* d = std::memchr(line.data() + pos, delimiter, line.size() - pos);
      stop = d ? static_cast<size_t>(static_cast<const char*>(d) - line.data()) : line.size();
    }
    std::string_view text = trim(line.substr(pos, stop - pos));
    const size_t column = static_cast<size_t>(text.data() - line.data()) + 1;
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
      text = text.substr(1, text.size() - 2);
    fields.push_back({text, column});
    if (stop == line.size()) return;
    pos = stop + 1;
  }
}

enum class label_status { ok, not_an_index, too_large };

/// A class index: a non-negative integer, also accepted as an integral float ("3.0", as numpy's
/// savetxt writes every column).
label_status parse_label(std::string_view text, int32_t& label) {
  const char* last = text.data() + text.size();
  const char* first = skip_plus(text.data(), last);
  double value = 0;
  int64_t integer = 0;
  if (const auto r = std::from_chars(first, last, integer); r.ptr == last && r.ec == std::errc()) {
    value = static_cast<double>(integer);  // exact below 2^53, and larger ones are refused
  } else {
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ptr != last || text.empty() || ec != std::errc() || !std::isfinite(value) ||
        value != std::floor(value))
      return label_status::not_an_index;
  }
  if (value < 0) return label_status::not_an_index;
  if (value >= INT_MAX) return label_status::too_large;  // classes = max label + 1 is an int
  label = static_cast<int32_t>(value);
  return label_status::ok;
}

/// A delimiter as a message names it.
std::string shown(char delimiter) {
  return delimiter == '\t' ? "tab" : "'" + std::string(1, delimiter) + "'";
}

/// "a first line with a non-numeric feature field is a header"; an empty field names nothing,
/// so it is a missing value of a data line rather than a sign of a header.
bool looks_like_header(const std::vector<field>& fields, size_t label) {
  float ignored = 0;
  for (size_t i = 0; i < fields.size(); ++i)
    if (i != label && !fields[i].text.empty() &&
        parse_float_field(fields[i].text, ignored) == number::not_a_number)
      return true;
  return false;
}

void check_options(const csv_options& options) {
  if (options.label_column < -1)
    throw std::invalid_argument("load_csv: label_column must be -1 (the last) or a 0-based "
                                "column, got " + std::to_string(options.label_column));
  const char d = options.delimiter;
  if (d == '"' || d == '\n' || d == '\r')
    throw std::invalid_argument("load_csv: a delimiter cannot be a quote or a line break");
}

} // namespace

dataset load_csv(const std::string& path, const csv_options& options) {
  check_options(options);
  line_reader lines(path);
  const auto at = [&](size_t column) {
    return path + ":" + std::to_string(lines.line_number()) +
           (column ? ":" + std::to_string(column) : std::string()) + ": ";
  };
  dataset d;
  std::vector<field> fields;
  std::string_view line;
  int64_t first_line = 0;  // the line that fixed the number of fields
  size_t expected = 0, label = 0;
  int32_t max_label = -1;
  while (lines.next(line)) {
    if (lines.line_number() == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    if (trim(line).empty()) continue;
    split_fields(line, options.delimiter, fields);
    if (first_line == 0) {
      first_line = lines.line_number();
      expected = fields.size();
      if (expected < 2)
        throw dataset_error(at(0) + "1 field; a row needs a label and at least one feature (is " +
                            shown(options.delimiter) + " the delimiter?)");
      label = options.label_column < 0 ? expected - 1 : static_cast<size_t>(options.label_column);
      if (label >= expected)
        throw dataset_error(at(0) + "the label column is " + std::to_string(label) +
                            " (0-based) but the line has " + std::to_string(expected) + " fields");
      d.cols = static_cast<int>(expected - 1);
      if (options.header ? *options.header : looks_like_header(fields, label)) continue;
    } else if (fields.size() != expected) {
      throw dataset_error(at(0) + std::to_string(fields.size()) + (fields.size() == 1 ? " field" :
                          " fields") + ", expected " + std::to_string(expected) + " (as on line " +
                          std::to_string(first_line) + ")");
    }
    if (d.rows == INT_MAX || d.x.size() > d.x.max_size() - expected)
      throw dataset_error(at(0) + "too many rows");
    for (size_t i = 0; i < expected; ++i) {
      const field& f = fields[i];
      if (i == label) {
        int32_t y = 0;
        const label_status s = parse_label(f.text, y);
        if (s != label_status::ok)
          throw dataset_error(at(f.column) + "label " + quoted(f.text) +
                              (s == label_status::too_large ? " is too large for a class index"
                                                            : " is not a non-negative integer"));
        d.y.push_back(y);
        max_label = std::max(max_label, y);
        continue;
      }
      float value = 0;
      const number n = parse_float_field(f.text, value);
      if (n != number::ok) {
        const std::string which = " (field " + std::to_string(i + 1) + ")";
        if (f.text.empty()) throw dataset_error(at(f.column) + "empty field" + which);
        throw dataset_error(at(f.column) + quoted(f.text) + why_not(n) + which);
      }
      d.x.push_back(value);
    }
    ++d.rows;
  }
  if (d.rows == 0) throw dataset_error(path + ": no data rows");
  d.classes = max_label + 1;
  return d;
}

} // namespace actorps
