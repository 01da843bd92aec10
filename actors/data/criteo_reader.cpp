#include "actors/data/criteo_reader.hpp"

#include "actors/data/criteo_batches.hpp"

#include "actors/data/text_fields.hpp"
#include "actors/ps/dataset.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace actorps {

namespace {

enum class fault_kind { none, field_count, label, not_integer, out_of_range };

/// What is wrong with a line: the kind, the 0-based field (0 the label, 1..13 I1..I13,
/// 14..39 C1..C26) and its text. Views into the line: no allocation unless a line is bad.
struct line_fault {
  fault_kind kind = fault_kind::none;
  int field = 0;
  std::string_view text = {};
};

/// The end of the field that starts at `p`: the next tab, or the line's end. Criteo's fields
/// are a few bytes long, too short for memchr's set-up to pay.
inline const char* field_end(const char* p, const char* end) {
  while (p != end && *p != '\t') ++p;
  return p;
}

/// Parses `line` into its label, 13 dense values and 26 keys, or says what is wrong (then the
/// outputs hold junk). The hot path: one pass over the bytes, from_chars, no allocation.
line_fault parse_row(std::string_view line, float& label, float* dense, uint64_t* keys) {
  const char* p = line.data();
  const char* const end = p + line.size();
  const char* q = field_end(p, end);
  if (q - p != 1 || (*p != '0' && *p != '1'))
    return {fault_kind::label, 0, {p, static_cast<size_t>(q - p)}};
  label = static_cast<float>(*p - '0');
  for (int j = 0; j < criteo_dense_fields; ++j) {
    if (q == end) return {fault_kind::field_count};
    p = q + 1;
    q = field_end(p, end);
    if (p == q) {  // missing
      dense[j] = 0;
      continue;
    }
    int64_t x = 0;
    const auto [ptr, ec] = std::from_chars(skip_plus(p, q), q, x);
    if (ec == std::errc::result_out_of_range && ptr == q)
      return {fault_kind::out_of_range, 1 + j, {p, static_cast<size_t>(q - p)}};
    if (ec != std::errc() || ptr != q)
      return {fault_kind::not_integer, 1 + j, {p, static_cast<size_t>(q - p)}};
    dense[j] = criteo_dense_value(x);
  }
  for (int f = 0; f < criteo_categorical_fields; ++f) {
    if (q == end) return {fault_kind::field_count};
    p = q + 1;
    q = field_end(p, end);
    keys[f] = criteo_key(f, {p, static_cast<size_t>(q - p)});
  }
  if (q != end) return {fault_kind::field_count};
  return {};
}

/// "label", "I1".."I13" or "C1".."C26".
std::string field_name(int field) {
  if (field == 0) return "label";
  if (field <= criteo_dense_fields) return "I" + std::to_string(field);
  return "C" + std::to_string(field - criteo_dense_fields);
}

/// The message of a fault on `line`. A line with the wrong number of fields says so first: a
/// shifted field is what made the others look wrong.
std::string describe(const line_fault& fault, std::string_view line) {
  const auto fields = 1 + std::count(line.begin(), line.end(), '\t');
  if (fault.kind == fault_kind::field_count || fields != criteo_line_fields)
    return std::to_string(fields) + (fields == 1 ? " field" : " fields") + ", expected " +
           std::to_string(criteo_line_fields) + " (label, I1-I13, C1-C26)";
  switch (fault.kind) {
    case fault_kind::label: return "label " + quoted(fault.text) + " is not 0 or 1";
    case fault_kind::out_of_range:
      return "field " + field_name(fault.field) + " " + quoted(fault.text) +
             " is beyond the range of a 64-bit integer";
    case fault_kind::not_integer:
    case fault_kind::none:         // (not asked: the line is good)
    case fault_kind::field_count:  // (told above)
      break;
  }
  return "field " + field_name(fault.field) + " " + quoted(fault.text) + " is not an integer";
}

} // namespace

criteo_reader::criteo_reader(const std::string& path, int part, int parts,
                             const criteo_options& options)
    : lines_(path, part, parts, "criteo_reader"), options_(options) {
  require_a_data_row(path);
}

size_t criteo_reader::next_batch(size_t max_rows, criteo_batch& out) {
  if (max_rows == 0) throw std::invalid_argument("criteo_reader::next_batch: max_rows is 0");
  out.clear();
  std::string_view line;
  while (out.rows() < max_rows && lines_.next(line)) {
    if (!lines_.ours(line)) continue;
    const size_t r = out.rows();
    out.dense.resize((r + 1) * criteo_dense_fields);
    out.keys.resize((r + 1) * criteo_categorical_fields);
    float label = 0;
    const line_fault fault = parse_row(line, label, out.dense.data() + r * criteo_dense_fields,
                                       out.keys.data() + r * criteo_categorical_fields);
    if (fault.kind == fault_kind::none) {
      out.labels.push_back(label);
      continue;
    }
    out.dense.resize(r * criteo_dense_fields);
    out.keys.resize(r * criteo_categorical_fields);
    std::string message =
        path() + ":" + std::to_string(lines_.line_number()) + ": " + describe(fault, line);
    if (!options_.skip_bad_lines) throw dataset_error(message);
    if (lines_skipped_++ == 0) first_skip_reason_ = std::move(message);
  }
  rows_read_ += static_cast<int64_t>(out.rows());
  return out.rows();
}

size_t criteo_reader::skip_rows(size_t max_rows) {
  if (options_.skip_bad_lines) {  // a bad line is no row: parsed to tell
    criteo_batch scratch;
    return next_batch(max_rows, scratch);
  }
  // A data line is a row (a bad one would have thrown when it was read before).
  const auto rows = lines_.pass(max_rows, [](std::string_view line) { return line; });
  rows_read_ += static_cast<int64_t>(rows);
  return rows;
}

void criteo_reader::rewind() {
  lines_.rewind();
  rows_read_ = lines_skipped_ = 0;
  first_skip_reason_.clear();
}

int64_t count_criteo_rows(const std::string& path) {
  int64_t rows = 0;
  for (const auto& file : stream_files(path)) {
    line_reader lines(file);
    std::string_view line;
    while (lines.next(line)) rows += !line.empty();
  }
  return rows;
}

std::vector<stream_file_rows> count_criteo_parts(const std::string& path, int parts) {
  return count_stream_parts(path, parts, [](std::string_view line) { return !line.empty(); });
}

template class clocked_batches<criteo_reader, criteo_batch>;

} // namespace actorps
