#include "actors/data/csv_dataset.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace actorps {

namespace {

constexpr size_t initial_buffer_bytes = size_t{1} << 18;
// A text file has no line this long; a binary file passed by mistake may never break its
// "line", and must not grow the buffer to its own size.
constexpr size_t max_line_bytes = size_t{64} << 20;

/// The lines of a plain or gzip-compressed file, read in chunks: only the chunk at hand and the
/// line that crosses its end are ever held.
class line_reader {
public:
  explicit line_reader(const std::string& path)
      : path_(path), file_(open(path)), buffer_(initial_buffer_bytes) {}
  ~line_reader() { gzclose(file_); }
  line_reader(const line_reader&) = delete;
  line_reader& operator=(const line_reader&) = delete;

  /// The next line without its "\n" or "\r\n", valid until the next call; false at the end.
  bool next(std::string_view& line) {
    for (;;) {
      const size_t unscanned = end_ - scanned_;
      if (const void* nl = std::memchr(buffer_.data() + scanned_, '\n', unscanned)) {
        const size_t stop = static_cast<size_t>(static_cast<const char*>(nl) - buffer_.data());
        line = take_line(stop);
        begin_ = scanned_ = stop + 1;
        return true;
      }
      scanned_ = end_;
      if (at_end_) {
        if (begin_ == end_) return false;
        line = take_line(end_);  // the last line, without a line end
        begin_ = scanned_ = end_;
        return true;
      }
      refill();
    }
  }

  /// The 1-based number of the line next() returned last.
  int64_t line_number() const { return line_number_; }

private:
  static gzFile open(const std::string& path) {
    errno = 0;
    gzFile file = gzopen(path.c_str(), "rb");
    if (!file)
      throw dataset_error(path + ": missing or unreadable (" +
                          (errno ? std::strerror(errno) : "out of memory") + ")");
    gzbuffer(file, 1 << 17);
    return file;
  }

  std::string_view take_line(size_t stop) {
    ++line_number_;
    size_t length = stop - begin_;
    if (length > 0 && buffer_[begin_ + length - 1] == '\r') --length;
    return {buffer_.data() + begin_, length};
  }

  /// Moves the unfinished line to the front and reads more after it; grows the buffer only
  /// when that line fills all of it.
  void refill() {
    const size_t partial = end_ - begin_;
    std::memmove(buffer_.data(), buffer_.data() + begin_, partial);
    begin_ = 0;
    scanned_ = end_ = partial;
    if (end_ == buffer_.size()) {
      if (buffer_.size() >= max_line_bytes)
        throw dataset_error(path_ + ":" + std::to_string(line_number_ + 1) +
                            ": a line longer than " + std::to_string(max_line_bytes >> 20) +
                            " MiB (not a text file?)");
      buffer_.resize(buffer_.size() * 2);
    }
    const auto room = static_cast<unsigned>(buffer_.size() - end_);
    const int got = gzread(file_, buffer_.data() + end_, room);
    int errnum = Z_OK;
    const char* message = gzerror(file_, &errnum);
    if (got < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
      const std::string why = errnum == Z_ERRNO ? std::strerror(errno) : message;
      throw dataset_error(path_ + ": " + (errnum == Z_ERRNO ? "read error: " :
                                          "corrupt or truncated gzip stream: ") + why);
    }
    if (got == 0) at_end_ = true;
    end_ += static_cast<size_t>(got);
  }

  std::string path_;
  gzFile file_;
  std::vector<char> buffer_;
  size_t begin_ = 0;    ///< start of the line not yet returned
  size_t scanned_ = 0;  ///< [begin_, scanned_) holds no '\n'
  size_t end_ = 0;      ///< bytes read into buffer_
  bool at_end_ = false;
  int64_t line_number_ = 0;
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

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

/// from_chars refuses a leading '+', which some writers put before positive numbers.
const char* skip_plus(const char* first, const char* last) {
  return last - first > 1 && first[0] == '+' && first[1] != '+' && first[1] != '-' ? first + 1
                                                                                     : first;
}

enum class number { ok, not_a_number, not_finite, out_of_range };

/// Parses the whole of `text` as a float, correctly rounded and locale-free.
number parse_feature(std::string_view text, float& value) {
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(skip_plus(text.data(), last), last, value);
  if (ptr != last || text.empty()) return number::not_a_number;
  if (ec == std::errc::result_out_of_range) {
    // Too small for a float is zero, as a cast from double would make it; too large is refused.
    double wide = 0;
    if (std::from_chars(skip_plus(text.data(), last), last, wide).ec != std::errc() ||
        std::fabs(wide) >= 1)
      return number::out_of_range;
    value = static_cast<float>(wide);
    return number::ok;
  }
  if (ec != std::errc()) return number::not_a_number;
  return std::isfinite(value) ? number::ok : number::not_finite;
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

/// The text of a field as a message quotes it: cut short, since it may be binary junk.
std::string quoted(std::string_view text) {
  constexpr size_t shown = 40;
  return "'" + std::string(text.substr(0, shown)) + (text.size() > shown ? "...'" : "'");
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
        parse_feature(fields[i].text, ignored) == number::not_a_number)
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
      const number n = parse_feature(f.text, value);
      if (n != number::ok) {
        const std::string which = " (field " + std::to_string(i + 1) + ")";
        if (f.text.empty()) throw dataset_error(at(f.column) + "empty field" + which);
        throw dataset_error(at(f.column) + quoted(f.text) +
                            (n == number::not_finite     ? " is not a finite number"
                             : n == number::out_of_range ? " is out of float range"
                                                         : " is not a number") + which);
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
