#include "actors/ps/dataset.hpp"

#include "actors/protocol/input_file.hpp"
#include "actors/ps/splitmix64.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

namespace actorps {

namespace {

// ---- deterministic random numbers (no <random> distributions, so bits are portable) ----

/// Derives an independent stream seed from a parent seed and a tag.
uint64_t derive(uint64_t seed, uint64_t tag) {
  return splitmix64_mix(seed ^ splitmix64_mix(tag + 0x9e3779b97f4a7c15ULL));
}

/// Uniform in [0, n); the modulo bias (n / 2^64) is negligible for row counts.
uint64_t below(splitmix64& gen, uint64_t n) { return gen.next() % n; }

/// Standard normals by Box–Muller, both outputs used.
struct gaussian {
  splitmix64 gen;
  bool has_spare = false;
  double spare = 0;
  double next() {
    if (has_spare) {
      has_spare = false;
      return spare;
    }
    const double u1 = static_cast<double>((gen.next() >> 11) + 1) * 0x1p-53;  // (0, 1]
    const double u2 = static_cast<double>(gen.next() >> 11) * 0x1p-53;        // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double t = 6.283185307179586 * u2;
    spare = r * std::sin(t);
    has_spare = true;
    return r * std::cos(t);
  }
};

// ---- IDX reading ----

constexpr uint32_t images_magic = 0x00000803, labels_magic = 0x00000801;
constexpr int side = 28;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(v));
  return buf;
}

/// An open (possibly gzip-compressed) file; closes itself.
class gz_file {
public:
  /// dir/name.gz, or else dir/name.
  gz_file(const std::string& dir, const std::string& name) {
    path_ = dir + "/" + name + ".gz";
    auto input = open_input_file(path_);
    struct stat st {};
    if (!input && ::stat(path_.c_str(), &st) == 0) throw dataset_error(input.why);
    if (!input) {  // no .gz: the plain file
      const std::string plain = dir + "/" + name;
      input = open_input_file(plain);
      if (!input) throw dataset_error(input.why + " (also tried " + path_ + ")");
      path_ = plain;
    }
    open(input);
  }

  /// Exactly `path` (zlib reads a file that is not gzip-compressed as it is).
  explicit gz_file(const std::string& path) : path_(path) {
    auto input = open_input_file(path);
    if (!input) throw dataset_error(input.why);
    open(input);
  }
  ~gz_file() { gzclose(f_); }
  gz_file(const gz_file&) = delete;
  gz_file& operator=(const gz_file&) = delete;

  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& what) const { throw dataset_error(path_ + ": " + what); }

  /// Reads up to n bytes in large chunks; returns how many arrived before end of file.
  size_t read(unsigned char* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, size_t{1} << 24));
      const int r = gzread(f_, dst + got, chunk);
      if (r < 0) fail(std::string("read error: ") + gz_message());
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    int errnum = Z_OK;
    gzerror(f_, &errnum);
    if (errnum != Z_OK && errnum != Z_STREAM_END)
      fail(std::string("corrupt or truncated gzip stream: ") + gz_message());
    return got;
  }

  /// Reads exactly n bytes or fails with "truncated <what>".
  void read_exact(unsigned char* dst, size_t n, const char* what) {
    const size_t got = read(dst, n);
    if (got < n)
      fail(std::string("truncated ") + what + ": got " + std::to_string(got) + " bytes, header promises " +
           std::to_string(n));
  }

  /// Reads exactly n bytes into `out`, growing it only as the bytes arrive: a header that
  /// promises more than the file holds costs what the file holds, not what it promises (a
  /// 33-byte file claiming 2.2 M images asked for 1.7 GB at once: a fuzz finding).
  void read_exact_into(std::vector<unsigned char>& out, size_t n, const char* what) {
    constexpr size_t step = size_t{1} << 24;
    out.clear();
    while (out.size() < n) {
      const size_t at = out.size(), want = std::min(n - at, step);
      out.resize(at + want);
      const size_t got = read(out.data() + at, want);
      if (got < want) {
        fail(std::string("truncated ") + what + ": got " + std::to_string(at + got)
             + " bytes, header promises " + std::to_string(n));
      }
    }
  }

  uint32_t read_be32(const char* what) {
    unsigned char b[4];
    read_exact(b, 4, what);
    return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | uint32_t{b[3]};
  }

  void check_magic(uint32_t expected) {
    const uint32_t m = read_be32("header");
    if (m != expected) fail("bad magic " + hex32(m) + ", expected " + hex32(expected));
  }

  void expect_end(size_t consumed) {
    unsigned char extra;
    if (read(&extra, 1) != 0)
      fail("trailing garbage after the " + std::to_string(consumed) + " bytes the header describes");
  }

private:
  /// zlib on the checked descriptor (a FIFO or a device was refused before any read).
  void open(const input_file& input) {
    f_ = gzdopen(input.fd, "rb");
    if (!f_) {
      ::close(input.fd);
      fail("cannot be read (out of memory)");
    }
    gzbuffer(f_, 1 << 18);
  }

  const char* gz_message() {
    int errnum = 0;
    const char* msg = gzerror(f_, &errnum);
    return errnum == Z_ERRNO ? std::strerror(errno) : msg;
  }

  gzFile f_ = nullptr;
  std::string path_;
};

/// Reads an IDX image file into d: rows, cols = 28·28, x scaled to [0, 1].
void read_images(gz_file& images, dataset& d) {
  images.check_magic(images_magic);
  const uint32_t count = images.read_be32("header");
  const uint32_t h = images.read_be32("header"), w = images.read_be32("header");
  if (h != side || w != side)
    images.fail("wrong image size " + std::to_string(h) + "x" + std::to_string(w) + ", expected 28x28");
  d.cols = side * side;
  if (count > static_cast<uint32_t>(INT32_MAX / d.cols))
    images.fail("implausible image count " + std::to_string(count));
  d.rows = static_cast<int>(count);
  const size_t pixels = size_t{count} * static_cast<size_t>(d.cols);
  std::vector<unsigned char> buf;
  images.read_exact_into(buf, pixels, "pixel data");
  images.expect_end(16 + pixels);
  d.x.resize(pixels);
  for (size_t i = 0; i < pixels; ++i) d.x[i] = static_cast<float>(buf[i]) / pixel_divisor;
}

} // namespace

dataset load_idx_images(const std::string& path) {
  gz_file images(path);
  dataset d;
  read_images(images, d);
  return d;
}

int64_t fashion_mnist_rows(const std::string& dir, bool train) {
  gz_file images(dir, std::string(train ? "train" : "t10k") + "-images-idx3-ubyte");
  images.check_magic(images_magic);
  return images.read_be32("header");
}

dataset load_fashion_mnist(const std::string& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  dataset d;
  d.classes = 10;

  gz_file images(dir, prefix + "-images-idx3-ubyte");
  read_images(images, d);
  const uint32_t count = static_cast<uint32_t>(d.rows);

  gz_file labels(dir, prefix + "-labels-idx1-ubyte");
  labels.check_magic(labels_magic);
  const uint32_t nlabels = labels.read_be32("header");
  if (nlabels != count)
    labels.fail("count mismatch: " + std::to_string(nlabels) + " labels but " + images.path() + " has " +
                std::to_string(count) + " images");
  std::vector<unsigned char> buf;
  labels.read_exact_into(buf, count, "label data");
  labels.expect_end(8 + size_t{count});
  d.y.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (buf[i] >= d.classes)
      labels.fail("label " + std::to_string(buf[i]) + " at index " + std::to_string(i) + " outside 0-9");
    d.y[i] = buf[i];
  }
  return d;
}

dataset make_synthetic(int rows, int cols, uint64_t seed, bool train) {
  if (rows <= 0 || cols <= 0)
    throw std::invalid_argument("make_synthetic: rows and cols must be positive, got rows=" + std::to_string(rows) +
                                " cols=" + std::to_string(cols));
  constexpr int classes = 10;
  // Centroids are orthogonal with norm centroid_radius (noise is unit variance per feature), so the
  // nearest-true-centroid accuracy, P(R + n_c > max_{j≠c} n_j), is about 0.97 whatever cols is
  // (for cols >= 10; fewer columns cannot hold 10 orthogonal centroids and are harder).
  constexpr double centroid_radius = 3.75;
  const size_t n = static_cast<size_t>(rows), m = static_cast<size_t>(cols);

  std::vector<double> centroids(classes * m);
  gaussian cg{splitmix64{derive(seed, 0x63656e74)}};
  for (int k = 0; k < classes; ++k) {
    double* c = &centroids[k * m];
    for (size_t j = 0; j < m; ++j) c[j] = cg.next();
    for (int p = 0; k < cols && p < k; ++p) {  // Gram–Schmidt against earlier centroids
      const double* q = &centroids[p * m];
      double dot = 0;
      for (size_t j = 0; j < m; ++j) dot += c[j] * q[j];
      const double f = dot / (centroid_radius * centroid_radius);
      for (size_t j = 0; j < m; ++j) c[j] -= f * q[j];
    }
    double norm = 0;
    for (size_t j = 0; j < m; ++j) norm += c[j] * c[j];
    const double scale = centroid_radius / std::sqrt(norm);
    for (size_t j = 0; j < m; ++j) c[j] *= scale;
  }

  dataset d;
  d.rows = rows;
  d.cols = cols;
  d.classes = classes;
  d.y.resize(n);
  d.x.resize(n * m);
  splitmix64 lg{derive(seed, train ? 0x6c747261 : 0x6c747374)};
  for (size_t i = 0; i < n; ++i) d.y[i] = static_cast<int32_t>(i % classes);  // balanced, then shuffled
  for (size_t i = n; i > 1; --i) std::swap(d.y[i - 1], d.y[below(lg, i)]);
  gaussian ng{splitmix64{derive(seed, train ? 0x6e747261 : 0x6e747374)}};
  for (size_t i = 0; i < n; ++i) {
    const double* c = &centroids[static_cast<size_t>(d.y[i]) * m];
    float* x = &d.x[i * m];
    for (size_t j = 0; j < m; ++j) x[j] = static_cast<float>(c[j] + ng.next());
  }
  return d;
}

data_shard::data_shard(std::shared_ptr<const dataset> data, int worker, int workers, int batch, uint64_t seed)
    : data_(std::move(data)), worker_(worker), batch_(batch), seed_(seed) {
  if (!data_) throw std::invalid_argument("data_shard: null dataset");
  if (workers <= 0 || worker < 0 || worker >= workers)
    throw std::invalid_argument("data_shard: worker " + std::to_string(worker) + " not in [0, " +
                                std::to_string(workers) + ")");
  if (batch <= 0) throw std::invalid_argument("data_shard: batch must be positive, got " + std::to_string(batch));
  const int64_t n = data_->rows;
  begin_ = first_row_of(n, worker, workers);
  size_ = rows_of(n, worker, workers);
  if (size_ < batch)
    throw std::invalid_argument("data_shard: the shard of worker " + std::to_string(worker) + " has " +
                                std::to_string(size_) + " rows, fewer than the batch " + std::to_string(batch));
}

const std::vector<int64_t>& data_shard::permutation(int64_t epoch) const {
  if (epoch != cached_epoch_) {
    cached_perm_.resize(static_cast<size_t>(size_));
    for (int64_t i = 0; i < size_; ++i) cached_perm_[i] = begin_ + i;
    splitmix64 g{derive(derive(seed_, static_cast<uint64_t>(worker_)), static_cast<uint64_t>(epoch))};
    for (int64_t i = size_; i > 1; --i)
      std::swap(cached_perm_[i - 1], cached_perm_[below(g, static_cast<uint64_t>(i))]);
    cached_epoch_ = epoch;
  }
  return cached_perm_;
}

std::vector<int64_t> data_shard::batch_rows(int64_t step) const {
  if (step < 0) throw std::invalid_argument("data_shard: negative step " + std::to_string(step));
  const int64_t spe = steps_per_epoch();
  const auto& perm = permutation(step / spe);
  const auto first = perm.begin() + (step % spe) * batch_;
  return std::vector<int64_t>(first, first + batch_);
}

void data_shard::fill_batch(int64_t step, float* x, int32_t* y) const {
  if (step < 0) throw std::invalid_argument("data_shard: negative step " + std::to_string(step));
  const size_t cols = static_cast<size_t>(data_->cols);
  const int64_t spe = steps_per_epoch();
  const int64_t* rows = permutation(step / spe).data() + (step % spe) * batch_;
  for (size_t i = 0; i < static_cast<size_t>(batch_); ++i) {
    const size_t r = static_cast<size_t>(rows[i]);
    std::copy_n(&data_->x[r * cols], cols, x + i * cols);
    y[i] = data_->y[r];
  }
}

} // namespace actorps
