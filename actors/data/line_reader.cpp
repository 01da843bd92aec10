#include "actors/data/line_reader.hpp"

#include "actors/protocol/input_file.hpp"
#include "actors/ps/dataset.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace actorps {

namespace {

constexpr size_t initial_buffer_bytes = size_t{1} << 18;
// A text file has no line this long; a binary file passed by mistake may never break its
// "line", and must not grow the buffer to its own size.
constexpr size_t max_line_bytes = size_t{64} << 20;

gzFile open_text(const std::string& path) {
  auto input = open_input_file(path);  // a FIFO or a device is refused before any read
  if (!input) throw dataset_error(input.why);
  gzFile file = gzdopen(input.fd, "rb");
  if (!file) {
    ::close(input.fd);
    throw dataset_error(path + ": cannot be read (out of memory)");
  }
  gzbuffer(file, 1 << 17);
  return file;
}

/// gzread into `into`, or dataset_error naming the file and what zlib or the system said.
size_t read_some(gzFile file, const std::string& path, char* into, size_t room) {
  const int got = gzread(file, into, static_cast<unsigned>(std::min<size_t>(room, 1u << 30)));
  int errnum = Z_OK;
  const char* message = gzerror(file, &errnum);
  if (got < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
    const std::string why = errnum == Z_ERRNO ? std::strerror(errno) : message;
    throw dataset_error(path + ": " + (errnum == Z_ERRNO ? "read error: " :
                                       "corrupt or truncated gzip stream: ") + why);
  }
  return static_cast<size_t>(got);
}

} // namespace

line_reader::line_reader(const std::string& path)
    : path_(path), file_(open_text(path)), buffer_(initial_buffer_bytes) {
  // gzdirect tells a plain file by its missing gzip magic; an empty file has no magic to miss.
  std::error_code ec;
  compressed_ = std::filesystem::file_size(path, ec) > 0 && !ec && gzdirect(file_) == 0;
}

line_reader::~line_reader() { gzclose(file_); }

void line_reader::restrict_to(uint64_t begin, uint64_t end) {
  if (compressed_)
    throw std::logic_error("line_reader::restrict_to: " + path_ + " is gzip-compressed, which "
                           "cannot be read from an offset");
  range_begin_ = begin;
  range_end_ = std::max(begin, end);
  lines_before_range_ = -1;
  rewind();
}

void line_reader::rewind() {
  lines_returned_ = 0;
  if (range_begin_ == 0) {
    seek(0);
    first_line_offset_ = 0;
    return;
  }
  // The byte before the range: a '\n' there means a line starts right at range_begin_; any
  // other byte is inside a line that belongs to the range before. Either way, what runs up to
  // the first '\n' from there is not ours.
  seek(range_begin_ - 1);
  std::string_view partial;
  const uint64_t keep_end = range_end_;
  range_end_ = UINT64_MAX;
  next(partial);
  range_end_ = keep_end;
  lines_returned_ = 0;
  first_line_offset_ = buffer_offset_ + begin_;
}

bool line_reader::next(std::string_view& line) {
  for (;;) {
    const size_t unscanned = end_ - scanned_;
    if (const void* nl = std::memchr(buffer_.data() + scanned_, '\n', unscanned)) {
      if (buffer_offset_ + begin_ >= range_end_) return false;
      const size_t stop = static_cast<size_t>(static_cast<const char*>(nl) - buffer_.data());
      line = take_line(stop);
      begin_ = scanned_ = stop + 1;
      return true;
    }
    scanned_ = end_;
    if (at_end_) {
      if (begin_ == end_ || buffer_offset_ + begin_ >= range_end_) return false;
      line = take_line(end_);  // the last line, without a line end
      begin_ = scanned_ = end_;
      return true;
    }
    refill();
  }
}

int64_t line_reader::line_number() {
  if (lines_before_range_ < 0)
    lines_before_range_ = range_begin_ == 0 ? 0 : line_number_at(path_, first_line_offset_) - 1;
  return lines_before_range_ + lines_returned_;
}

std::string_view line_reader::take_line(size_t stop) {
  ++lines_returned_;
  last_line_offset_ = buffer_offset_ + begin_;
  size_t length = stop - begin_;
  if (length > 0 && buffer_[begin_ + length - 1] == '\r') --length;
  return {buffer_.data() + begin_, length};
}

/// Moves the unfinished line to the front and reads more after it; grows the buffer only when
/// that line fills all of it.
void line_reader::refill() {
  const size_t partial = end_ - begin_;
  std::memmove(buffer_.data(), buffer_.data() + begin_, partial);
  buffer_offset_ += begin_;
  begin_ = 0;
  scanned_ = end_ = partial;
  if (end_ == buffer_.size()) {
    if (buffer_.size() >= max_line_bytes)
      throw dataset_error(path_ + ":" + std::to_string(line_number_at(path_, buffer_offset_)) +
                          ": a line longer than " + std::to_string(max_line_bytes >> 20) +
                          " MiB (not a text file?)");
    buffer_.resize(buffer_.size() * 2);
  }
  const size_t got = read_some(file_, path_, buffer_.data() + end_, buffer_.size() - end_);
  if (got == 0) at_end_ = true;
  end_ += got;
}

void line_reader::seek(uint64_t offset) {
  // For a plain file zlib's gzseek is an lseek; for gzip it can only rewind (offset 0).
  if (gzseek(file_, static_cast<z_off_t>(offset), SEEK_SET) != static_cast<z_off_t>(offset))
    throw dataset_error(path_ + ": cannot seek to byte " + std::to_string(offset));
  begin_ = scanned_ = end_ = 0;
  buffer_offset_ = offset;
  at_end_ = false;
}

int64_t line_number_at(const std::string& path, uint64_t offset) {
  gzFile file = open_text(path);
  std::vector<char> chunk(size_t{1} << 20);
  int64_t line_ends = 0;
  try {
    for (uint64_t done = 0; done < offset;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), offset - done));
      const size_t got = read_some(file, path, chunk.data(), want);
      if (got == 0) break;
      line_ends += std::count(chunk.data(), chunk.data() + got, '\n');
      done += got;
    }
  } catch (...) {
    gzclose(file);
    throw;
  }
  gzclose(file);
  return line_ends + 1;
}

} // namespace actorps
