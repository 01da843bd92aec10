#include "actors/data/csv_dataset.hpp"

#include "actors/data/line_reader.hpp"
#include "actors/data/text_fields.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace actorps {

namespace {

using field = csv_field;

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

constexpr std::string_view byte_order_mark = "\xEF\xBB\xBF";

/// A line without the UTF-8 byte order mark a file may start with.
std::string_view without_mark(std::string_view line, uint64_t offset) {
  if (offset == 0 && line.substr(0, 3) == byte_order_mark) line.remove_prefix(3);
  return line;
}

/// "FILE:LINE[:COLUMN]: ", where a message about a line starts.
std::string at(const std::string& file, int64_t line, std::size_t column = 0) {
  return file + ":" + std::to_string(line) + (column ? ":" + std::to_string(column) : std::string())
         + ": ";
}

/// A file's first non-blank line: where it starts, its fields, the label's, and whether it is a
/// header. offset UINT64_MAX: the file has none.
struct csv_head {
  uint64_t offset = UINT64_MAX;
  int64_t line = 0;
  std::size_t fields = 0, label = 0;
  bool header = false;
};

csv_head read_head(const std::string& file, const csv_options& options) {
  line_reader lines(file);
  csv_head head;
  std::vector<field> fields;
  for (std::string_view line; lines.next(line);) {
    line = without_mark(line, lines.line_offset());
    if (trim(line).empty()) continue;
    split_fields(line, options.delimiter, fields);
    head.offset = lines.line_offset();
    head.line = lines.line_number();
    head.fields = fields.size();
    if (head.fields < 2)
      throw dataset_error(at(file, head.line) + "1 field; a row needs a label and at least one "
                          "feature (is " + shown(options.delimiter) + " the delimiter?)");
    head.label = options.label_column < 0 ? head.fields - 1
                                          : static_cast<std::size_t>(options.label_column);
    if (head.label >= head.fields)
      throw dataset_error(at(file, head.line) + "the label column is " + std::to_string(head.label)
                          + " (0-based) but the line has " + std::to_string(head.fields)
                          + " fields");
    head.header = options.header ? *options.header : looks_like_header(fields, head.label);
    break;
  }
  return head;
}

/// "N fields, expected E (as on line L)" for a row of `file` whose fields differ from its head's
/// (or "(as in FIRST)" when the head itself differs from the stream's first file).
std::string ragged(std::size_t fields, std::size_t expected, const std::string& where) {
  return std::to_string(fields) + (fields == 1 ? " field" : " fields") + ", expected "
         + std::to_string(expected) + " (" + where + ")";
}

/// The label field of a row, or dataset_error at its column.
int32_t label_of(const field& f, const std::string& file, int64_t line, int classes) {
  int32_t y = 0;
  const label_status s = parse_label(f.text, y);
  if (s != label_status::ok)
    throw dataset_error(at(file, line, f.column) + "label " + quoted(f.text)
                        + (s == label_status::too_large ? " is too large for a class index"
                                                        : " is not a non-negative integer"));
  if (classes > 0 && y >= classes)
    throw dataset_error(at(file, line, f.column) + "label " + quoted(f.text) + " is beyond the "
                        + std::to_string(classes) + " classes of the training files counted "
                          "first (0.." + std::to_string(classes - 1) + ")");
  return y;
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

csv_reader::csv_reader(const std::string& path, int part, int parts, const csv_options& options)
    : lines_(path, part, parts, "csv_reader"), options_(options) {
  check_options(options);
  // The stream's shape is its first file's with a non-blank line.
  for (const auto& file : stream_files(path)) {
    const auto head = read_head(file, options_);
    if (head.offset == UINT64_MAX) continue;
    first_file_ = file;
    expected_ = head.fields;
    label_ = head.label;
    return;
  }
  throw dataset_error(path + ": no data rows");
}

void csv_reader::enter() {
  file_ = lines_.file_index();
  const auto head = read_head(lines_.path(), options_);
  header_at_ = head.header ? head.offset : UINT64_MAX;
  head_line_ = head.line;
  if (head.offset != UINT64_MAX && head.fields != expected_)
    throw dataset_error(at(lines_.path(), head.line)
                        + ragged(head.fields, expected_, "as in " + first_file_));
}

std::size_t csv_reader::next_batch(std::size_t max_rows, dense_batch& out) {
  if (max_rows == 0) throw std::invalid_argument("csv_reader::next_batch: max_rows is 0");
  out.clear();
  out.cols = cols();
  std::string_view line;
  while (out.rows() < max_rows && lines_.next(line)) {
    if (lines_.file_index() != file_) enter();
    const uint64_t offset = lines_.line_offset();
    line = without_mark(line, offset);
    if (offset == header_at_) continue;
    if (!lines_.ours(trim(line))) continue;  // blank, or another part's (gzip)
    split_fields(line, options_.delimiter, fields_);
    const auto& file = lines_.path();
    if (fields_.size() != expected_)
      throw dataset_error(at(file, lines_.line_number())
                          + ragged(fields_.size(), expected_,
                                   "as on line " + std::to_string(head_line_)));
    for (std::size_t i = 0; i < expected_; ++i) {
      const field& f = fields_[i];
      if (i == label_) {
        out.y.push_back(label_of(f, file, lines_.line_number(), options_.classes));
        continue;
      }
      float value = 0;
      const number n = parse_float_field(f.text, value);
      if (n != number::ok) {
        const std::string which = " (field " + std::to_string(i + 1) + ")";
        const auto where = at(file, lines_.line_number(), f.column);
        if (f.text.empty()) throw dataset_error(where + "empty field" + which);
        throw dataset_error(where + quoted(f.text) + why_not(n) + which);
      }
      out.x.push_back(value);
    }
  }
  if (options_.whole_batches && out.rows() < max_rows) out.clear();
  return out.rows();
}

dataset load_csv(const std::string& path, const csv_options& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) line_reader refused(path);  // one file: it says so
  csv_reader reader(path, 0, 1, options);
  dataset d;
  d.cols = reader.cols();
  int32_t max_label = -1;
  dense_batch batch;
  while (reader.next_batch(std::size_t{1} << 14, batch) > 0) {
    if (int64_t(d.rows) + int64_t(batch.rows()) > INT_MAX
        || d.x.size() > d.x.max_size() - batch.x.size())
      throw dataset_error(path + ": more than 2^31 - 1 rows");
    d.rows += static_cast<int>(batch.rows());
    d.x.insert(d.x.end(), batch.x.begin(), batch.x.end());
    d.y.insert(d.y.end(), batch.y.begin(), batch.y.end());
    for (auto y : batch.y) max_label = std::max(max_label, y);
  }
  if (d.rows == 0) throw dataset_error(path + ": no data rows");
  d.classes = max_label + 1;
  return d;
}

csv_counts count_csv_parts(const std::string& path, int parts, const csv_options& options) {
  check_options(options);
  csv_counts out;
  csv_head head;
  std::string first;  // the file that fixed the number of fields
  std::size_t expected = 0;
  std::vector<field> fields;
  bool any = false;
  const auto enter = [&](const std::string& file) {
    head = read_head(file, options);
    if (head.offset == UINT64_MAX) return;
    if (first.empty()) {
      first = file;
      expected = head.fields;
    } else if (head.fields != expected) {
      throw dataset_error(at(file, head.line) + ragged(head.fields, expected, "as in " + first));
    }
  };
  const auto is_data = [&](line_reader& lines, std::string_view line) {
    line = without_mark(line, lines.line_offset());
    if (trim(line).empty() || (head.header && lines.line_offset() == head.offset)) return false;
    split_fields(line, options.delimiter, fields);
    if (fields.size() != expected)
      throw dataset_error(at(lines.path(), lines.line_number())
                          + ragged(fields.size(), expected,
                                   "as on line " + std::to_string(head.line)));
    const auto y = label_of(fields[head.label], lines.path(), lines.line_number(), 0);
    out.min_label = any ? std::min(out.min_label, y) : y;
    out.max_label = any ? std::max(out.max_label, y) : y;
    any = true;
    return true;
  };
  out.files = count_stream_parts(path, parts, is_data, enter);
  for (const auto& f : out.files)
    for (auto r : f.rows) out.rows += r;
  if (out.rows == 0) throw dataset_error(path + ": no data rows");
  out.cols = static_cast<int>(expected - 1);
  return out;
}

} // namespace actorps
