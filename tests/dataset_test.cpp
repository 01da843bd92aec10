#include "actors/ps/dataset.hpp"

#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

using namespace actorps;

namespace {

/// A fresh directory, removed with its contents at scope exit.
struct temp_dir : actorps::test::scratch_dir {
  temp_dir() : scratch_dir("actorps_dataset") {}
};

void put_be32(std::vector<unsigned char>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
}

std::vector<unsigned char> idx_images(uint32_t magic, uint32_t count, uint32_t h, uint32_t w, size_t pixel_bytes) {
  std::vector<unsigned char> b;
  put_be32(b, magic), put_be32(b, count), put_be32(b, h), put_be32(b, w);
  for (size_t i = 0; i < pixel_bytes; ++i) b.push_back(static_cast<unsigned char>(i * 51 % 256));
  return b;
}

std::vector<unsigned char> idx_labels(uint32_t magic, uint32_t count, std::vector<unsigned char> labels) {
  std::vector<unsigned char> b;
  put_be32(b, magic), put_be32(b, count);
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

/// Writes `bytes` to `path`, gzip-compressed when the path ends in .gz.
void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
    REQUIRE(gzclose(f) == Z_OK);
  } else {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
}

/// Asserts load_fashion_mnist(dir, train) throws dataset_error mentioning `file` and `word`.
void check_load_error(const std::string& dir, bool train, const std::string& file, const std::string& word) {
  try {
    load_fashion_mnist(dir, train);
    FAIL("expected dataset_error mentioning " << word);
  } catch (const dataset_error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(file) != std::string::npos);
    CHECK(msg.find(word) != std::string::npos);
  }
}

/// Per-class means of d's rows (10 × cols), an estimate of the true centroids.
std::vector<double> class_means(const dataset& d) {
  const size_t m = static_cast<size_t>(d.cols);
  std::vector<double> c(10 * m, 0);
  std::vector<int> n(10, 0);
  for (size_t i = 0; i < static_cast<size_t>(d.rows); ++i) {
    ++n[d.y[i]];
    for (size_t j = 0; j < m; ++j) c[d.y[i] * m + j] += d.x[i * m + j];
  }
  for (size_t k = 0; k < 10; ++k)
    for (size_t j = 0; j < m; ++j) c[k * m + j] /= n[k];
  return c;
}

/// Test accuracy of nearest class-mean centroids (means of `train`) on `test`.
double nearest_centroid_accuracy(const dataset& train, const dataset& test) {
  const size_t m = static_cast<size_t>(train.cols);
  const std::vector<double> c = class_means(train);
  int correct = 0;
  for (size_t i = 0; i < static_cast<size_t>(test.rows); ++i) {
    int best = -1;
    double best_d = 1e300;
    for (int k = 0; k < 10; ++k) {
      double d = 0;
      for (size_t j = 0; j < m; ++j) d += (test.x[i * m + j] - c[k * m + j]) * (test.x[i * m + j] - c[k * m + j]);
      if (d < best_d) best_d = d, best = k;
    }
    correct += best == test.y[i];
  }
  return static_cast<double>(correct) / test.rows;
}

void check_real_split(bool train) {
  const dataset d = load_fashion_mnist(default_fashion_mnist_dir, train);
  const int rows = train ? 60000 : 10000;
  REQUIRE(d.rows == rows);
  CHECK(d.cols == 784);
  CHECK(d.classes == 10);
  REQUIRE(d.x.size() == size_t{784} * rows);
  REQUIRE(d.y.size() == static_cast<size_t>(rows));
  std::vector<int> counts(10, 0);
  int out_of_range = 0;
  for (int32_t label : d.y) (label >= 0 && label < 10) ? ++counts[label] : ++out_of_range;
  CHECK(out_of_range == 0);
  for (int k = 0; k < 10; ++k) CHECK(counts[k] == rows / 10);
  const auto [lo, hi] = std::minmax_element(d.x.begin(), d.x.end());
  CHECK(*lo == 0.f);
  CHECK(*hi == 1.f);

  // the first label byte, read independently of the loader
  const std::string path =
      std::string(default_fashion_mnist_dir) + (train ? "/train" : "/t10k") + "-labels-idx1-ubyte.gz";
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  unsigned char head[9];
  REQUIRE(gzread(f, head, 9) == 9);
  gzclose(f);
  CHECK(d.y[0] == head[8]);
}

} // namespace

TEST_CASE("fashion-mnist: the real train and test splits load with balanced labels and [0,1] pixels") {
  check_real_split(true);
  check_real_split(false);
}

TEST_CASE("fashion-mnist: a small well-formed set loads from .gz and from plain files") {
  temp_dir t;
  SUBCASE("gzip") {
    write_file(t.path + "/t10k-images-idx3-ubyte.gz", idx_images(0x803, 2, 28, 28, 2 * 784));
    write_file(t.path + "/t10k-labels-idx1-ubyte.gz", idx_labels(0x801, 2, {9, 0}));
  }
  SUBCASE("plain") {
    write_file(t.path + "/t10k-images-idx3-ubyte", idx_images(0x803, 2, 28, 28, 2 * 784));
    write_file(t.path + "/t10k-labels-idx1-ubyte", idx_labels(0x801, 2, {9, 0}));
  }
  const dataset d = load_fashion_mnist(t.path, false);
  CHECK(d.rows == 2);
  CHECK(d.cols == 784);
  CHECK(d.y == std::vector<int32_t>{9, 0});
  CHECK(d.x[0] == 0.f);
  CHECK(d.x[1] == 51 / 255.f);
  CHECK(d.x[5] == 1.f);  // byte 255
}

TEST_CASE("fashion-mnist: malformed files throw dataset_error naming the file and the problem") {
  temp_dir t;
  const std::string images = t.path + "/train-images-idx3-ubyte.gz";
  const std::string labels = t.path + "/train-labels-idx1-ubyte.gz";
  const auto good_labels = idx_labels(0x801, 3, {1, 2, 3});

  SUBCASE("missing file") { check_load_error(t.path, true, images, "missing"); }
  SUBCASE("bad magic") {
    write_file(images, idx_images(0x801, 3, 28, 28, 3 * 784));
    write_file(labels, good_labels);
    check_load_error(t.path, true, images, "bad magic 0x00000801, expected 0x00000803");
  }
  SUBCASE("wrong image size") {
    write_file(images, idx_images(0x803, 3, 27, 28, 3 * 27 * 28));
    write_file(labels, good_labels);
    check_load_error(t.path, true, images, "image size 27x28");
  }
  SUBCASE("truncated pixel data") {
    write_file(images, idx_images(0x803, 3, 28, 28, 2 * 784 + 100));
    write_file(labels, good_labels);
    check_load_error(t.path, true, images, "truncated");
  }
  SUBCASE("trailing garbage") {
    write_file(images, idx_images(0x803, 3, 28, 28, 3 * 784 + 1));
    write_file(labels, good_labels);
    check_load_error(t.path, true, images, "trailing");
  }
  SUBCASE("missing labels file") {
    write_file(images, idx_images(0x803, 3, 28, 28, 3 * 784));
    check_load_error(t.path, true, labels, "missing");
  }
  SUBCASE("count mismatch between images and labels") {
    write_file(images, idx_images(0x803, 3, 28, 28, 3 * 784));
    write_file(labels, idx_labels(0x801, 2, {1, 2}));
    check_load_error(t.path, true, labels, "mismatch");
  }
  SUBCASE("label outside 0-9") {
    write_file(images, idx_images(0x803, 3, 28, 28, 3 * 784));
    write_file(labels, idx_labels(0x801, 3, {1, 11, 3}));
    check_load_error(t.path, true, labels, "label 11");
  }
  SUBCASE("truncated labels, plain file") {
    write_file(images, idx_images(0x803, 3, 28, 28, 3 * 784));
    write_file(t.path + "/train-labels-idx1-ubyte", idx_labels(0x801, 3, {1, 2}));
    check_load_error(t.path, true, t.path + "/train-labels-idx1-ubyte", "truncated");
  }
}

TEST_CASE("idx images: one file by path, .gz or plain, scaled like training, errors naming it") {
  temp_dir t;
  for (const std::string name : {"/images.idx.gz", "/images.idx"}) {
    CAPTURE(name);
    write_file(t.path + name, idx_images(0x803, 3, 28, 28, 3 * 784));
    const dataset d = load_idx_images(t.path + name);
    CHECK(d.rows == 3);
    CHECK(d.cols == 784);
    CHECK(d.y.empty());
    REQUIRE(d.x.size() == 3 * 784);
    CHECK(d.x[1] == 51 / pixel_divisor);
    CHECK(d.x[3 * 784 - 1] == static_cast<float>((3 * 784 - 1) * 51 % 256) / 255.f);
  }
  auto check_error = [](const std::string& path, const std::string& word) {
    try {
      load_idx_images(path);
      FAIL("expected dataset_error mentioning " << word);
    } catch (const dataset_error& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.rfind(path + ": ", 0) == 0);
      CHECK(msg.find(word) != std::string::npos);
    }
  };
  check_error(t.path + "/absent.idx", "missing");
  write_file(t.path + "/labels.idx", idx_labels(0x801, 2, {1, 2}));
  check_error(t.path + "/labels.idx", "bad magic 0x00000801");
  write_file(t.path + "/short.idx.gz", idx_images(0x803, 3, 28, 28, 784));
  check_error(t.path + "/short.idx.gz", "truncated pixel data");
}

TEST_CASE("synthetic: deterministic per seed, train and test share centroids but not noise") {
  const dataset a = make_synthetic(500, 32, 7, true), b = make_synthetic(500, 32, 7, true);
  CHECK(a.rows == 500);
  CHECK(a.cols == 32);
  CHECK(a.classes == 10);
  REQUIRE(a.x.size() == size_t{500} * 32);
  CHECK(std::memcmp(a.x.data(), b.x.data(), a.x.size() * sizeof(float)) == 0);
  CHECK(a.y == b.y);
  const dataset other = make_synthetic(500, 32, 8, true);
  CHECK(other.x != a.x);
  const dataset test = make_synthetic(500, 32, 7, false);
  CHECK(test.x != a.x);
  CHECK(test.y != a.y);

  // the noise (row minus its class mean) of train row i and test row i must be unrelated
  const std::vector<double> means = class_means(a);
  double mean_cosine = 0;
  for (size_t i = 0; i < 500; ++i) {
    double dot = 0, na = 0, nt = 0;
    for (size_t j = 0; j < 32; ++j) {
      const double ra = a.x[i * 32 + j] - means[a.y[i] * 32 + j], rt = test.x[i * 32 + j] - means[test.y[i] * 32 + j];
      dot += ra * rt, na += ra * ra, nt += rt * rt;
    }
    mean_cosine += dot / std::sqrt(na * nt) / 500;
  }
  CHECK(std::abs(mean_cosine) < 0.1);

  std::vector<int> counts(10, 0);
  for (int32_t label : a.y) ++counts[label];
  for (int c : counts) CHECK(c == 50);

  CHECK_THROWS_AS(make_synthetic(0, 32, 1, true), std::invalid_argument);
  CHECK_THROWS_AS(make_synthetic(10, 0, 1, true), std::invalid_argument);
  CHECK_THROWS_AS(make_synthetic(10, -1, 1, true), std::invalid_argument);
}

TEST_CASE("synthetic: nearest class-mean centroid accuracy on the test split is in [0.90, 0.99]") {
  for (int cols : {32, 784}) {
    for (uint64_t seed : {1, 99}) {
      const double acc = nearest_centroid_accuracy(make_synthetic(20000, cols, seed, true),
                                                   make_synthetic(5000, cols, seed, false));
      INFO("cols " << cols << " seed " << seed << " accuracy " << acc);
      CHECK(acc >= 0.90);
      CHECK(acc <= 0.99);
    }
  }
  // centroids from another seed's train split do not fit this seed's test split
  CHECK(nearest_centroid_accuracy(make_synthetic(2000, 32, 1, true), make_synthetic(2000, 32, 2, false)) < 0.5);
}

TEST_CASE("data_shard: shards partition the rows, batches are deterministic permutations") {
  auto data = std::make_shared<dataset>(make_synthetic(103, 4, 3, true));

  SUBCASE("the W shards cover every row exactly once, sizes differ by at most one") {
    for (int workers : {1, 2, 3, 4, 7}) {
      int64_t next = 0, lo = 1 << 30, hi = 0;
      for (int w = 0; w < workers; ++w) {
        const data_shard s(data, w, workers, 1, 0);
        CHECK(s.begin() == next);
        next = s.begin() + s.size();
        lo = std::min(lo, s.size()), hi = std::max(hi, s.size());
      }
      CHECK(next == 103);
      CHECK(hi - lo <= 1);
    }
  }

  SUBCASE("one epoch visits distinct shard rows; epochs differ; the same args replay the same batches") {
    const data_shard s(data, 1, 4, 5, 42), same(data, 1, 4, 5, 42);
    REQUIRE(s.size() == 26);
    REQUIRE(s.steps_per_epoch() == 5);
    std::vector<int64_t> epoch0, epoch1;
    for (int64_t step = 0; step < 10; ++step) {
      const auto rows = s.batch_rows(step);
      REQUIRE(rows.size() == 5);
      (step < 5 ? epoch0 : epoch1).insert((step < 5 ? epoch0 : epoch1).end(), rows.begin(), rows.end());
    }
    for (int64_t r : epoch0) CHECK((r >= s.begin() && r < s.begin() + s.size()));
    CHECK(std::set<int64_t>(epoch0.begin(), epoch0.end()).size() == 25);
    CHECK(std::set<int64_t>(epoch1.begin(), epoch1.end()).size() == 25);
    CHECK(epoch0 != epoch1);
    // out-of-order queries (cache misses across epochs) and a second object agree
    for (int64_t step : {7, 2, 9, 0, 12, 3})
      CHECK(same.batch_rows(step) == s.batch_rows(step));
    CHECK(data_shard(data, 1, 4, 5, 43).batch_rows(0) != s.batch_rows(0));
    CHECK(data_shard(data, 2, 4, 5, 42).batch_rows(0) != s.batch_rows(0));
  }

  SUBCASE("fill_batch copies the rows named by batch_rows") {
    const data_shard s(data, 3, 4, 6, 5);
    std::vector<float> x(6 * 4);
    std::vector<int32_t> y(6);
    for (int64_t step : {0, 3, 4, 11}) {
      s.fill_batch(step, x.data(), y.data());
      const auto rows = s.batch_rows(step);
      for (size_t i = 0; i < rows.size(); ++i) {
        CHECK(y[i] == data->y[rows[i]]);
        CHECK(std::equal(x.begin() + i * 4, x.begin() + i * 4 + 4, data->x.begin() + rows[i] * 4));
      }
    }
  }

  SUBCASE("the constructor rejects bad arguments") {
    auto small = std::make_shared<dataset>(make_synthetic(10, 4, 3, true));  // shards of 2, 3, 2, 3 rows
    CHECK_NOTHROW(data_shard(small, 1, 4, 3, 0));
    try {
      data_shard(small, 0, 4, 3, 0);
      FAIL("expected invalid_argument");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("worker 0 has 2 rows, fewer than the batch 3") != std::string::npos);
    }
    CHECK_THROWS_AS(data_shard(small, 4, 4, 1, 0), std::invalid_argument);
    CHECK_THROWS_AS(data_shard(small, -1, 4, 1, 0), std::invalid_argument);
    CHECK_THROWS_AS(data_shard(small, 0, 0, 1, 0), std::invalid_argument);
    CHECK_THROWS_AS(data_shard(small, 0, 1, 0, 0), std::invalid_argument);
    CHECK_THROWS_AS(data_shard(nullptr, 0, 1, 1, 0), std::invalid_argument);
  }
}
