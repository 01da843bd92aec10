#include "actors/data/schema_reader.hpp"

#include "actors/data/text_fields.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace actorps {

namespace {

/// `text` as a finite double (a leading '+' allowed), or false.
bool parse_number(std::string_view text, double& x) {
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(skip_plus(text.data(), last), last, x);
  return !text.empty() && ec == std::errc() && ptr == last && std::isfinite(x);
}

/// Cuts `line` at each `delimiter` into `cells` (reused).
void split(std::string_view line, char delimiter, std::vector<std::string_view>& cells) {
  cells.clear();
  const char* p = line.data();
  const char* const end = p + line.size();
  for (;;) {
    const auto* q = static_cast<const char*>(std::memchr(p, delimiter, static_cast<size_t>(end - p)));
    if (!q) q = end;
    cells.emplace_back(p, static_cast<size_t>(q - p));
    if (q == end) return;
    p = q + 1;
  }
}

/// The key of value `v` of a key column: hashed, or out of the vocabulary.
uint64_t value_key(const feature_column& c, std::string_view v) {
  const uint64_t key = criteo_key(c.table, v);
  if (v.empty() || c.vocabulary.empty() || c.vocabulary.count(key)) return key;
  return out_of_vocabulary_key(c.table);
}

} // namespace

schema_reader::schema_reader(const std::string& path, int part, int parts,
                             std::shared_ptr<const feature_schema> schema,
                             const schema_read_options& options)
    : lines_(path, part, parts, "schema_reader"), schema_(std::move(schema)), options_(options) {
  if (!schema_) throw std::invalid_argument("schema_reader: no schema");
  require_a_data_row(path);
}

std::string schema_reader::parse_row(std::string_view line, criteo_batch& out) {
  const auto& s = *schema_;
  split(line, options_.delimiter, cells_);
  if (cells_.size() != s.columns.size())
    return std::to_string(cells_.size()) + (cells_.size() == 1 ? " column" : " columns")
           + ", expected " + std::to_string(s.columns.size()) + " (as " + s.path
           + " names them)";
  auto bad = [&](std::size_t i, const std::string& what) {
    return "column " + std::to_string(i + 1) + " (" + s.columns[i].name + ") "
           + quoted(cells_[i]) + " " + what;
  };
  const std::size_t r = out.rows();
  float* dense = out.dense.data() + r * static_cast<std::size_t>(s.dense_width);
  float label = 0;
  using kind = feature_column::kind;
  using transform = feature_column::transform;
  for (std::size_t i = 0; i < s.columns.size(); ++i) {
    const auto& c = s.columns[i];
    const std::string_view v = cells_[i];
    double x = 0;
    switch (c.what) {
      case kind::ignore: break;
      case kind::label:
        if (!parse_number(v, x) || (x != 0 && x != 1)) return bad(i, "is not 0 or 1");
        label = static_cast<float>(x);
        break;
      case kind::weight:
        if (!parse_number(v, x) || x < 0) return bad(i, "is not a weight (a number >= 0)");
        out.weights.push_back(static_cast<float>(x));
        break;
      case kind::numeric: {
        const bool present = !v.empty();
        if (present && !parse_number(v, x)) return bad(i, "is not a number");
        if (c.how == transform::bucketize) {
          if (!present) {
            out.keys.push_back(criteo_key(c.table, {}));
            break;
          }
          const auto bucket = std::upper_bound(c.boundaries.begin(), c.boundaries.end(), x)
                              - c.boundaries.begin();
          char digits[24];
          const auto end = std::to_chars(digits, digits + sizeof digits, bucket).ptr;
          out.keys.push_back(criteo_key(c.table, {digits, static_cast<size_t>(end - digits)}));
          break;
        }
        float y = 0;
        if (present) {
          switch (c.how) {
            case transform::log1p: y = x > 0 ? static_cast<float>(std::log1p(x)) : 0.0f; break;
            case transform::standardise: y = static_cast<float>((x - c.mean) / c.std); break;
            case transform::none:
            case transform::bucketize: y = static_cast<float>(x); break;
          }
          if (!std::isfinite(y)) return bad(i, "is out of float range");
        }
        dense[c.dense] = y;
        break;
      }
      case kind::categorical: out.keys.push_back(value_key(c, v)); break;
      case kind::multi_hot: {
        int kept = 0;
        for (std::size_t p = 0; p <= v.size() && kept < c.max_length;) {
          auto q = v.find(c.separator, p);
          if (q == std::string_view::npos) q = v.size();
          if (q > p) {
            out.keys.push_back(value_key(c, v.substr(p, q - p)));
            ++kept;
          }
          p = q + 1;
        }
        break;
      }
    }
    if (s.multi_hot && c.slot >= 0) out.offsets.push_back(static_cast<uint32_t>(out.keys.size()));
  }
  for (const auto& x : s.crosses) {
    const auto a = cells_[static_cast<std::size_t>(x.first)];
    const auto b = cells_[static_cast<std::size_t>(x.second)];
    if (a.empty() || b.empty()) {
      out.keys.push_back(criteo_key(x.table, {}));
    } else {
      cross_.assign(a);
      cross_ += '\x1f';  // no text holds it: ("a b", "c") and ("a", "b c") differ
      cross_ += b;
      out.keys.push_back(criteo_key(x.table, cross_));
    }
    if (s.multi_hot) out.offsets.push_back(static_cast<uint32_t>(out.keys.size()));
  }
  out.labels.push_back(label);
  return {};
}

size_t schema_reader::next_batch(size_t max_rows, criteo_batch& out) {
  if (max_rows == 0) throw std::invalid_argument("schema_reader::next_batch: max_rows is 0");
  const auto& s = *schema_;
  out.clear();
  out.dense_width = s.dense_width;
  out.fields = s.fields;
  if (s.multi_hot) {
    out.offsets.push_back(0);
    out.mean_fields.resize(static_cast<std::size_t>(s.fields));
    for (int f = 0; f < s.fields; ++f)
      out.mean_fields[static_cast<std::size_t>(f)] = s.field_pooling[f] == pooling::mean;
  }
  std::string_view line;
  while (out.rows() < max_rows && lines_.next(line)) {
    if (!lines_.ours(line)) continue;
    const size_t r = out.rows();
    const size_t keys = out.keys.size(), offsets = out.offsets.size(),
                 weights = out.weights.size();
    out.dense.resize((r + 1) * static_cast<size_t>(s.dense_width));
    std::string why = parse_row(line, out);
    if (why.empty()) continue;
    out.dense.resize(r * static_cast<size_t>(s.dense_width));
    out.keys.resize(keys);
    out.offsets.resize(offsets);
    out.weights.resize(weights);
    std::string message = path() + ":" + std::to_string(lines_.line_number()) + ": " + why;
    if (!options_.skip_bad_lines) throw dataset_error(message);
    if (lines_skipped_++ == 0) first_skip_reason_ = std::move(message);
  }
  if (out.rows() == 0) out.offsets.clear();
  rows_read_ += static_cast<int64_t>(out.rows());
  return out.rows();
}

size_t schema_reader::skip_rows(size_t max_rows) {
  if (options_.skip_bad_lines) {  // a bad line is no row: parsed to tell
    criteo_batch scratch;
    return next_batch(max_rows, scratch);
  }
  // A data line is a row (a bad one would have thrown when it was read before).
  const auto rows = lines_.pass(max_rows, [](std::string_view line) { return line; });
  rows_read_ += static_cast<int64_t>(rows);
  return rows;
}

void schema_reader::rewind() {
  lines_.rewind();
  rows_read_ = lines_skipped_ = 0;
  first_skip_reason_.clear();
}

template class clocked_batches<schema_reader, criteo_batch>;

} // namespace actorps
