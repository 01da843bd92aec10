// libsvm and Criteo lines (actors/data/libsvm_reader.hpp, criteo_reader.hpp, and the
// text_fields.hpp they share), from files nobody checked. The first byte picks the reader
// (bit 0: libsvm or Criteo), whether bad lines are skipped (bit 1) and the batch size (bits
// 4-6). The file is read whole and in 2 and 3 parts: every batch must be well formed, and
// when no line is refused the parts together must read exactly the lines that
// count_*_rows counts (the promise that lets workers stream parts of one file).
#include "actors/data/criteo_reader.hpp"
#include "actors/data/libsvm_reader.hpp"
#include "actors/ps/dataset.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>

namespace actorps {
namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "text_lines_fuzz: %s\n", what);
  std::abort();
}

void check(const sparse_batch& b) {
  if (b.offsets.size() != b.rows() + 1 || b.offsets.front() != 0 || b.offsets.back() != b.keys.size()
      || b.values.size() != b.keys.size())
    broken("a libsvm batch out of shape");
  for (float label : b.labels)
    if (label != 0.0f && label != 1.0f) broken("a libsvm label that is not 0 or 1");
  for (float v : b.values)
    if (!std::isfinite(v)) broken("a libsvm value that is not finite");
}

void check(const criteo_batch& b) {
  if (b.dense.size() != b.rows() * criteo_dense_fields
      || b.keys.size() != b.rows() * criteo_categorical_fields)
    broken("a Criteo batch out of shape");
  for (float label : b.labels)
    if (label != 0.0f && label != 1.0f) broken("a Criteo label that is not 0 or 1");
  for (float v : b.dense)
    if (!std::isfinite(v)) broken("a Criteo dense value that is not finite");
}

/// Rows of part `part` of `parts`, read twice (rewind must give the same count); nullopt when
/// a line was refused or skipped.
template <class Reader, class Batch, class Options>
std::optional<int64_t> read_part(const std::string& path, int part, int parts, Options options,
                                 std::size_t batch_rows) {
  Reader reader(path, part, parts, options);
  Batch batch;
  int64_t rows[2] = {0, 0};
  for (auto& count : rows) {
    while (auto n = reader.next_batch(batch_rows, batch)) {
      if (n > batch_rows || n != batch.rows()) broken("a batch of the wrong size");
      check(batch);
      count += static_cast<int64_t>(n);
    }
    if (reader.lines_skipped() > 0) return std::nullopt;
    if (reader.rows_read() != count) broken("rows_read disagrees with the rows returned");
    reader.rewind();
  }
  if (rows[0] != rows[1]) broken("rewind read another number of rows");
  return rows[0];
}

template <class Reader, class Batch, class Options, class Count>
void read_all(const std::string& path, Options options, std::size_t batch_rows, Count count_rows) {
  try {
    auto lines = count_rows(path);
    for (int parts = 1; parts <= 3; ++parts) {
      int64_t total = 0;
      for (int part = 0; part < parts; ++part) {
        auto rows = read_part<Reader, Batch>(path, part, parts, options, batch_rows);
        if (!rows) return;
        total += *rows;
      }
      if (total != lines) broken("the parts do not read every line exactly once");
    }
  } catch (const dataset_error&) {
    // refused with file, line and field: what a malformed line must get
  }
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  if (size == 0) return 0;
  const uint8_t how = data[0];
  auto path = fuzz::scratch_file("lines", {reinterpret_cast<const char*>(data + 1), size - 1});
  const bool skip = how & 2;
  const std::size_t batch_rows = 1 + ((how >> 4) & 7);
  if ((how & 1) == 0) {
    libsvm_options options;
    options.skip_bad_lines = skip;
    read_all<libsvm_reader, sparse_batch>(path, options, batch_rows, count_libsvm_rows);
  } else {
    criteo_options options;
    options.skip_bad_lines = skip;
    read_all<criteo_reader, criteo_batch>(path, options, batch_rows, count_criteo_rows);
  }
  return 0;
}
