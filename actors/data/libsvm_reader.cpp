#include "actors/data/libsvm_reader.hpp"

#include "actors/data/text_fields.hpp"
#include "actors/ps/dataset.hpp"

#include <charconv>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace actorps {

namespace {

/// The line without its comment and surrounding blanks: empty for a line that holds no row.
std::string_view data_of(std::string_view line) {
  if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  return trim(line);
}

/// What is wrong with a line, and the 1-based column where; `what` empty: nothing.
struct line_fault {
  size_t column = 0;
  std::string what;
};

/// The label as 0 or 1, or false for anything but 0/1 and -1/+1.
bool parse_label(std::string_view text, float& label) {
  const char* last = text.data() + text.size();
  double value = 0;
  const auto [ptr, ec] = std::from_chars(skip_plus(text.data(), last), last, value);
  if (ptr != last || ec != std::errc()) return false;
  if (value == 1) label = 1;
  else if (value == 0 || value == -1) label = 0;
  else return false;
  return true;
}

/// Parses `index:value` at `token` into key and value, or says what is wrong.
std::string parse_pair(std::string_view token, uint64_t& key, float& value) {
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == token.size())
    return quoted(token) + " is not an index:value pair";
  const std::string_view index = token.substr(0, colon), text = token.substr(colon + 1);
  const char* last = index.data() + index.size();
  const auto [ptr, ec] = std::from_chars(index.data(), last, key);
  if (ec == std::errc::result_out_of_range && ptr == last)
    return "feature index " + quoted(index) + " is beyond 2^64-1";
  if (ec != std::errc() || ptr != last)
    return "feature index " + quoted(index) + " is not a non-negative integer";
  const number n = parse_float_field(text, value);
  if (n != number::ok)
    return "value " + quoted(text) + " of feature " + std::string(index) + why_not(n);
  return {};
}

/// Appends the row that `data` (a line's data_of) holds to `out`, or leaves `out` as it was
/// and says what is wrong. `line` is the whole line, for the column.
line_fault append_row(std::string_view line, std::string_view data, sparse_batch& out) {
  const size_t nonzeros_before = out.keys.size();
  const auto column = [&](std::string_view token) {
    return static_cast<size_t>(token.data() - line.data()) + 1;
  };
  size_t pos = 0;
  const auto next_token = [&] {
    while (pos < data.size() && is_blank(data[pos])) ++pos;
    const size_t start = pos;
    while (pos < data.size() && !is_blank(data[pos])) ++pos;
    return data.substr(start, pos - start);
  };
  const std::string_view label_text = next_token();
  float label = 0;
  if (!parse_label(label_text, label))
    return {column(label_text), "label " + quoted(label_text) + " is not 0 or 1 (nor -1 or +1)"};
  for (std::string_view token = next_token(); !token.empty(); token = next_token()) {
    if (out.keys.size() == nonzeros_before && token.substr(0, 4) == "qid:") continue;
    uint64_t key = 0;
    float value = 0;
    if (std::string why = parse_pair(token, key, value); !why.empty()) {
      out.keys.resize(nonzeros_before);
      out.values.resize(nonzeros_before);
      return {column(token), std::move(why)};
    }
    out.keys.push_back(key);
    out.values.push_back(value);
  }
  out.labels.push_back(label);
  out.offsets.push_back(out.keys.size());
  return {};
}

} // namespace

libsvm_reader::libsvm_reader(const std::string& path, int part, int parts,
                             const libsvm_options& options)
    : lines_(path, part, parts, "libsvm_reader"), options_(options) {
  require_a_data_row(path, [](std::string_view line) { return !data_of(line).empty(); },
                     "blank and comment lines");
}

size_t libsvm_reader::next_batch(size_t max_rows, sparse_batch& out) {
  if (max_rows == 0) throw std::invalid_argument("libsvm_reader::next_batch: max_rows is 0");
  out.clear();
  std::string_view line;
  while (out.rows() < max_rows && lines_.next(line)) {
    const std::string_view data = data_of(line);
    if (!lines_.ours(data)) continue;
    line_fault fault = append_row(line, data, out);
    if (fault.what.empty()) continue;
    std::string message = path() + ":" + std::to_string(lines_.line_number()) + ":" +
                          std::to_string(fault.column) + ": " + fault.what;
    if (!options_.skip_bad_lines) throw dataset_error(message);
    if (lines_skipped_++ == 0) first_skip_reason_ = std::move(message);
  }
  rows_read_ += static_cast<int64_t>(out.rows());
  return out.rows();
}

size_t libsvm_reader::skip_rows(size_t max_rows) {
  if (options_.skip_bad_lines) {  // a bad line is no row: parsed to tell
    sparse_batch scratch;
    return next_batch(max_rows, scratch);
  }
  // A data line is a row (a bad one would have thrown when it was read before).
  const auto rows = lines_.pass(max_rows, [](std::string_view line) { return data_of(line); });
  rows_read_ += static_cast<int64_t>(rows);
  return rows;
}

void libsvm_reader::rewind() {
  lines_.rewind();
  rows_read_ = lines_skipped_ = 0;
  first_skip_reason_.clear();
}

int64_t count_libsvm_rows(const std::string& path) {
  int64_t rows = 0;
  for (const auto& file : stream_files(path)) {
    line_reader lines(file);
    std::string_view line;
    while (lines.next(line)) rows += !data_of(line).empty();
  }
  return rows;
}

std::vector<stream_file_rows> count_libsvm_parts(const std::string& path, int parts) {
  return count_stream_parts(path, parts, [](std::string_view line) { return !data_of(line).empty(); });
}

} // namespace actorps
