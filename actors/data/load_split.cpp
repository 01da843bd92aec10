#include "actors/data/load_split.hpp"

#include "actors/data/criteo_reader.hpp"
#include "actors/data/csv_dataset.hpp"
#include "actors/data/libsvm_reader.hpp"
#include "actors/data/schema_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>

namespace actorps {

namespace {

/// The rows of a libsvm split: a test split whole (in `sparse`), a training split only counted
/// (its workers stream their parts).
dataset load_libsvm(const std::string& path, bool train) {
  dataset out;
  out.classes = 2;
  auto rows = int64_t{0};
  if (train) {
    rows = count_libsvm_rows(path);
  } else {
    libsvm_reader reader(path);
    sparse_batch batch;
    out.sparse.clear();
    while (reader.next_batch(1 << 16, batch) > 0) {
      auto base = out.sparse.keys.size();
      out.sparse.labels.insert(out.sparse.labels.end(), batch.labels.begin(), batch.labels.end());
      out.sparse.keys.insert(out.sparse.keys.end(), batch.keys.begin(), batch.keys.end());
      out.sparse.values.insert(out.sparse.values.end(), batch.values.begin(), batch.values.end());
      for (std::size_t r = 1; r < batch.offsets.size(); ++r)
        out.sparse.offsets.push_back(base + batch.offsets[r]);
    }
    rows = static_cast<int64_t>(out.sparse.rows());
  }
  if (rows > std::numeric_limits<int>::max())
    throw dataset_error(path + ": " + std::to_string(rows) + " rows, more than 2^31 - 1");
  out.rows = static_cast<int>(rows);
  return out;
}

/// The rows of a Criteo split: a test split whole (in `criteo`), a training split only counted.
dataset load_criteo(const std::string& path, bool train) {
  dataset out;
  out.classes = 2;
  auto rows = int64_t{0};
  if (train) {
    rows = count_criteo_rows(path);
  } else {
    criteo_reader reader(path);
    criteo_batch batch;
    auto& all = out.criteo;
    while (reader.next_batch(1 << 16, batch) > 0) {
      all.labels.insert(all.labels.end(), batch.labels.begin(), batch.labels.end());
      all.dense.insert(all.dense.end(), batch.dense.begin(), batch.dense.end());
      all.keys.insert(all.keys.end(), batch.keys.begin(), batch.keys.end());
    }
    rows = static_cast<int64_t>(all.rows());
  }
  if (rows > std::numeric_limits<int>::max())
    throw dataset_error(path + ": " + std::to_string(rows) + " rows, more than 2^31 - 1");
  out.rows = static_cast<int>(rows);
  return out;
}

/// The rows of a log a schema describes: a test split whole (in `criteo`), a training split
/// only counted (its non-empty lines, as Criteo's).
dataset load_logs(const data_source& src, bool train) {
  const auto& path = train ? src.train_path : src.test_path;
  dataset out;
  out.classes = 2;
  auto rows = int64_t{0};
  if (train) {
    rows = count_criteo_rows(path);
  } else {
    auto schema = std::make_shared<const feature_schema>(load_feature_schema(src.schema_path));
    schema_reader reader(path, 0, 1, schema, {src.delimiter});
    criteo_batch batch;
    while (reader.next_batch(1 << 16, batch) > 0) out.criteo.append(batch);
    rows = static_cast<int64_t>(out.criteo.rows());
    if (src.group_field >= schema->fields || src.slice_field >= schema->fields)
      throw std::invalid_argument("the GAUC group or slice field "
                                  + std::to_string(std::max(src.group_field, src.slice_field))
                                  + " is not one of " + src.schema_path + "'s");
    // GAUC's groups and the slices: a field's (first) key
    auto keys_of = [&](int field, std::vector<uint64_t>& into) {
      const auto& c = out.criteo;
      const auto fields = static_cast<std::size_t>(c.fields);
      const auto f = static_cast<std::size_t>(field);
      into.resize(c.rows());
      for (std::size_t r = 0; r < c.rows(); ++r) {
        if (c.offsets.empty()) {
          into[r] = c.keys[r * fields + f];
        } else {
          const auto first = c.offsets[r * fields + f];
          into[r] = first < c.offsets[r * fields + f + 1] ? c.keys[first] : 0;
        }
      }
    };
    if (src.group_field >= 0) keys_of(src.group_field, out.groups.gauc);
    if (src.slice_field >= 0) keys_of(src.slice_field, out.groups.slices);
  }
  if (rows > std::numeric_limits<int>::max())
    throw dataset_error(path + ": " + std::to_string(rows) + " rows, more than 2^31 - 1");
  out.rows = static_cast<int>(rows);
  return out;
}

/// A CSV file, or every file of a directory in name order as one set of rows (stream_files):
/// the files must have the same columns.
dataset load_csv_files(const std::string& path) {
  const auto files = stream_files(path);
  dataset out = load_csv(files.front());
  for (std::size_t i = 1; i < files.size(); ++i) {
    auto more = load_csv(files[i]);
    if (more.cols != out.cols)
      throw dataset_error(files[i] + ": " + std::to_string(more.cols) + " feature columns, but "
                          + files.front() + " has " + std::to_string(out.cols));
    if (int64_t(out.rows) + more.rows > std::numeric_limits<int>::max())
      throw dataset_error(path + ": more than 2^31 - 1 rows");
    out.rows += more.rows;
    out.classes = std::max(out.classes, more.classes);
    out.x.insert(out.x.end(), more.x.begin(), more.x.end());
    out.y.insert(out.y.end(), more.y.begin(), more.y.end());
  }
  return out;
}

/// Classes are the labels 0..max: a training file whose labels start above 0 (1..3, as
/// one-based labels are often written) would train a class no row has and report one class
/// too many, so it is refused, saying how to fix it.
void check_classes_from_zero(const csv_counts& c, const std::string& path) {
  if (c.min_label == 0) return;
  throw dataset_error(path + ": the labels run from " + std::to_string(c.min_label) + " to "
                      + std::to_string(c.max_label) + ", but classes are numbered from 0 and no "
                        "row has label 0 (subtract " + std::to_string(c.min_label)
                      + " from every label)");
}

} // namespace

int key_field_index(const data_source& src, const std::string& name) {
  if (src.what == data_source::kind::logs) {
    int field = -1;
    try {
      field = load_feature_schema(src.schema_path).field(name);
    } catch (const std::exception& e) {
      throw std::invalid_argument(name + ": " + e.what());
    }
    if (field < 0) throw std::invalid_argument(name + " is no key field of " + src.schema_path);
    return field;
  }
  if (src.what != data_source::kind::criteo)
    throw std::invalid_argument(name + " needs Criteo data or a log a schema describes "
                                       "(--dataset criteo:PATH, or tsv:PATH with --schema)");
  const bool named = name.size() >= 2 && name.size() <= 3 && (name[0] == 'C' || name[0] == 'c')
                     && name.find_first_not_of("0123456789", 1) == std::string::npos;
  const int k = named ? std::stoi(name.substr(1)) : 0;
  if (k < 1 || k > criteo_categorical_fields)
    throw std::invalid_argument(name + " is not a categorical field of the Criteo layout, "
                                       "C1..C26");
  return k - 1;
}

dataset count_csv_training(const std::string& path, int workers, std::vector<stream_file>* files) {
  auto counts = count_csv_parts(path, workers);
  check_classes_from_zero(counts, path);
  if (counts.rows > std::numeric_limits<int>::max())
    throw dataset_error(path + ": " + std::to_string(counts.rows) + " rows, more than 2^31 - 1");
  dataset out;
  out.rows = static_cast<int>(counts.rows);
  out.cols = counts.cols;
  out.classes = counts.max_label + 1;
  std::error_code ec;
  if (files && std::filesystem::is_directory(path, ec))
    for (auto& part : counts.files)
      files->push_back({std::filesystem::path(part.path).filename().string(), part.bytes,
                        std::move(part.rows)});
  return out;
}

std::shared_ptr<const dataset> load_split(const data_source& src, bool train) {
  if (src.what == data_source::kind::criteo) {
    auto d = std::make_shared<dataset>(load_criteo(train ? src.train_path : src.test_path, train));
    if (src.group_field >= criteo_categorical_fields
        || src.slice_field >= criteo_categorical_fields)
      throw std::invalid_argument("the GAUC group or slice field "
                                  + std::to_string(std::max(src.group_field, src.slice_field))
                                  + " is not one of C1..C26");
    // GAUC's groups and the slices: the value (key) of one field
    auto keys_of = [&](int field, std::vector<uint64_t>& into) {
      const auto& c = d->criteo;
      into.resize(c.rows());
      for (std::size_t r = 0; r < c.rows(); ++r)
        into[r] = c.keys[r * criteo_categorical_fields + field];
    };
    if (!train && src.group_field >= 0) keys_of(src.group_field, d->groups.gauc);
    if (!train && src.slice_field >= 0) keys_of(src.slice_field, d->groups.slices);
    return d;
  }
  if (src.what == data_source::kind::logs)
    return std::make_shared<dataset>(load_logs(src, train));
  if (src.what == data_source::kind::libsvm)
    return std::make_shared<dataset>(load_libsvm(train ? src.train_path : src.test_path, train));
  if (src.what == data_source::kind::fashion_mnist)
    return std::make_shared<dataset>(load_fashion_mnist(src.dir, train));
  if (src.what == data_source::kind::csv)
    return std::make_shared<dataset>(train ? count_csv_training(src.train_path, 1, nullptr)
                                           : load_csv_files(src.test_path));
  return std::make_shared<dataset>(
    make_synthetic(train ? src.train_rows : src.test_rows, src.cols, src.seed, train));
}

int64_t training_rows(const data_source& src) {
  switch (src.what) {
    case data_source::kind::fashion_mnist: return fashion_mnist_rows(src.dir, true);
    case data_source::kind::synthetic: return src.train_rows;
    case data_source::kind::csv: return count_csv_parts(src.train_path, 1).rows;
    case data_source::kind::libsvm: return count_libsvm_rows(src.train_path);
    case data_source::kind::criteo:
    case data_source::kind::logs: return count_criteo_rows(src.train_path);
  }
  return 0;
}

namespace {

/// Each file of `path` with the rows each of `workers` workers reads of it.
std::vector<stream_file_rows> count_parts(const data_source& src, const std::string& path,
                                          int workers) {
  switch (src.what) {
    case data_source::kind::libsvm: return count_libsvm_parts(path, workers);
    case data_source::kind::csv: return count_csv_parts(path, workers).files;
    default: return count_criteo_parts(path, workers);
  }
}

} // namespace

stream_file count_stream_file(const data_source& src, const std::string& path, int workers) {
  auto parts = count_parts(src, path, workers);
  if (parts.size() != 1) throw dataset_error(path + ": not one file of a stream");
  auto& part = parts.front();
  return {std::filesystem::path(part.path).filename().string(), part.bytes, std::move(part.rows)};
}

int64_t training_rows(const data_source& src, int workers, std::vector<stream_file>* files) {
  std::error_code ec;
  if (!read_in_parts(src.what) || !std::filesystem::is_directory(src.train_path, ec))
    return training_rows(src);
  auto parts = count_parts(src, src.train_path, workers);
  int64_t rows = 0;
  for (auto& part : parts) {
    for (auto r : part.rows) rows += r;
    if (files)
      files->push_back({std::filesystem::path(part.path).filename().string(), part.bytes,
                        std::move(part.rows)});
  }
  return rows;
}

} // namespace actorps
