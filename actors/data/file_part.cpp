#include "actors/data/file_part.hpp"

#include "actors/ps/dataset.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace actorps {

namespace fs = std::filesystem;

namespace {

/// The part's first argument, checked before the file is opened.
const std::string& checked(const std::string& path, int part, int parts, const char* reader) {
  if (parts < 1 || part < 0 || part >= parts)
    throw std::invalid_argument(std::string(reader) + ": part " + std::to_string(part) + " of "
                                + std::to_string(parts) + " (need 0 <= part < parts)");
  return path;
}

/// Byte `b` of part p of a plain file of `size` bytes cut in `parts`: p·size/parts.
uint64_t part_begin(uint64_t size, int part, int parts) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(size) * part / parts);
}

/// A file's size and modification time now ({0, 0} when it cannot be read).
std::pair<uint64_t, int64_t> size_and_time(const std::string& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return {0, 0};
  const auto time = fs::last_write_time(file, ec);
  if (ec) return {0, 0};
  return {size, static_cast<int64_t>(time.time_since_epoch().count())};
}

/// The data lines each part of each file has (by reader, part and parts), as this process read
/// them to a file's end, with the file's size and time then: a file unchanged since need not be
/// read again to pass them. Shared by every file_part of the process (workers started again).
class known_lines {
public:
  struct key {
    std::string file, reader;
    int part, parts;
    uint64_t size;
    int64_t time;
    bool operator<(const key& o) const {
      return std::tie(file, reader, part, parts, size, time)
             < std::tie(o.file, o.reader, o.part, o.parts, o.size, o.time);
    }
  };
  static known_lines& of_process() {
    static known_lines instance;
    return instance;
  }
  std::optional<int64_t> find(const key& k) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = lines_.find(k);
    if (it == lines_.end()) return std::nullopt;
    return it->second;
  }
  void remember(key k, int64_t lines) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lines_.size() >= max_entries) lines_.clear();  // a bound: a stream of very many files
    lines_[std::move(k)] = lines;
  }

private:
  static constexpr std::size_t max_entries = 1 << 16;
  std::mutex mutex_;
  std::map<key, int64_t> lines_;
};

} // namespace

void require_a_data_row(const std::string& path,
                        const std::function<bool(std::string_view)>& is_data,
                        const std::string& lines) {
  for (const auto& file : stream_files(path)) {
    line_reader reader(file);
    std::string_view line;
    while (reader.next(line))
      if (is_data ? is_data(line) : !line.empty()) return;
  }
  throw dataset_error(path + ": no data rows (the file is empty or holds only " + lines + ")");
}

std::vector<std::string> stream_files(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {path};
  std::vector<std::string> out;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code kind;
    if (fs::is_regular_file(it->path(), kind)) out.push_back(it->path().string());
  }
  if (ec) throw dataset_error(path + ": cannot be listed (" + ec.message() + ")");
  if (out.empty()) throw dataset_error(path + ": a directory without data files");
  std::sort(out.begin(), out.end());
  return out;
}

file_part::file_part(const std::string& path, int part, int parts, const char* reader)
    : path_(path), files_(stream_files(checked(path, part, parts, reader))), part_(part),
      parts_(parts), reader_(reader) {
  open(0);
}

void file_part::open(std::size_t file) {
  if (!lines_ || file_ != file) {
    lines_.reset();  // one descriptor at a time
    lines_ = std::make_unique<line_reader>(files_[file]);
    file_ = file;
  }
  data_lines_seen_ = 0;
  std::tie(file_size_, file_time_) = size_and_time(files_[file]);
  at_start_ = true;
  ours_in_file_ = 0;
  if (!lines_->compressed() && parts_ > 1) {
    const uint64_t size = file_size_ > 0 ? file_size_ : fs::file_size(files_[file]);
    lines_->restrict_to(part_begin(size, part_, parts_), part_begin(size, part_ + 1, parts_));
  } else {
    lines_->rewind();
  }
}

bool file_part::next(std::string_view& line) {
  while (!line_in_file(line))
    if (!next_file()) return false;
  return true;
}

bool file_part::line_in_file(std::string_view& line) {
  if (!lines_->next(line)) return false;
  at_start_ = false;
  return true;
}

bool file_part::next_file() {
  remember_file();
  if (file_ + 1 >= files_.size() && !list_again()) return false;
  open(file_ + 1);
  return true;
}

void file_part::remember_file() {
  if (file_size_ == 0 || size_and_time(files_[file_]) != std::make_pair(file_size_, file_time_))
    return;  // unreadable, or changed while it was read: not known
  known_lines::of_process().remember(
    {files_[file_], reader_, part_, parts_, file_size_, file_time_}, ours_in_file_);
}

std::size_t file_part::pass_known_files(std::size_t max) {
  std::size_t passed = 0;
  while (at_start_ && file_ + 1 < files_.size() && file_size_ > 0) {
    const auto lines = known_lines::of_process().find(
      {files_[file_], reader_, part_, parts_, file_size_, file_time_});
    if (!lines || static_cast<std::size_t>(*lines) > max - passed) break;
    passed += static_cast<std::size_t>(*lines);
    open(file_ + 1);
  }
  return passed;
}

void file_part::follow() {
  std::error_code ec;
  if (fs::is_directory(path_, ec)) dir_ = path_;
}

bool file_part::list_again() {
  if (dir_.empty()) return false;
  const auto before = files_.size();
  for (auto& file : stream_files(dir_))
    if (file > files_.back()) files_.push_back(std::move(file));
  return files_.size() > before;
}

bool file_part::ours(std::string_view data) {
  if (data.empty()) return false;
  const bool mine = !lines_->compressed()  // the byte range already chose
                    || data_lines_seen_++ % parts_ == part_;
  ours_in_file_ += mine ? 1 : 0;
  return mine;
}

void file_part::rewind() { open(0); }

std::vector<stream_file_rows> count_stream_parts(
    const std::string& path, int parts, const std::function<bool(std::string_view)>& is_data) {
  return count_stream_parts(
    path, parts, [&](line_reader&, std::string_view line) { return is_data(line); },
    [](const std::string&) {});
}

std::vector<stream_file_rows> count_stream_parts(
    const std::string& path, int parts,
    const std::function<bool(line_reader&, std::string_view)>& is_data,
    const std::function<void(const std::string&)>& enter) {
  if (parts < 1) throw std::invalid_argument("count_stream_parts: no parts");
  std::vector<stream_file_rows> out;
  for (const auto& file : stream_files(path)) {
    stream_file_rows counted;
    counted.path = file;
    counted.rows.assign(static_cast<std::size_t>(parts), 0);
    enter(file);
    line_reader lines(file);
    std::error_code ec;
    counted.bytes = fs::file_size(file, ec);
    const uint64_t size = counted.bytes;
    int64_t data_lines = 0;
    int part = 0;
    for (std::string_view line; lines.next(line);) {
      if (!is_data(lines, line)) continue;
      if (lines.compressed()) {
        part = static_cast<int>(data_lines++ % parts);
      } else {  // the part whose byte range holds the line's first byte (ranges only grow)
        while (part + 1 < parts && part_begin(size, part + 1, parts) <= lines.line_offset()) ++part;
      }
      ++counted.rows[static_cast<std::size_t>(part)];
    }
    out.push_back(std::move(counted));
  }
  return out;
}

} // namespace actorps
