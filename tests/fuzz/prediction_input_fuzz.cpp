// Input files of `actorps predict` (actors/serving/prediction_input.hpp: IDX images, plain or
// gzip, and raw float32 rows) and CSV data (actors/data/csv_dataset.hpp), from whoever wrote
// them. The first byte picks the reader: 0, predict's automatic choice for a 784-input model;
// 1, IDX; 2, raw rows of 4 floats; 3-5, CSV with the default options, with the label last,
// no header and ';', with a header and tabs. A reader returns rows that fit what it was asked
// for, or throws the error that names the file; anything else is a finding.
#include "actors/data/csv_dataset.hpp"
#include "actors/serving/prediction_input.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cmath>
#include <cstdlib>

namespace actorps {
namespace {

/// Rows as a model takes them: rows × cols finite floats.
void check_rows(const dataset& d, int cols) {
  if (d.cols != cols || d.rows <= 0
      || d.x.size() != static_cast<std::size_t>(d.rows) * static_cast<std::size_t>(cols))
    std::abort();
  for (float v : d.x)
    if (!std::isfinite(v)) std::abort();
}

void prediction(const std::string& path, unsigned choice) {
  static const input_format formats[] = {input_format::automatic, input_format::idx,
                                         input_format::raw};
  const int cols = choice == 2 ? 4 : 784;
  try {
    check_rows(read_prediction_input(path, cols, 255.0f, formats[choice]), cols);
  } catch (const input_error&) {
  }
}

void csv(const std::string& path, unsigned choice) {
  csv_options options;
  if (choice == 4) {
    options.label_column = -1;
    options.header = false;
    options.delimiter = ';';
  } else if (choice == 5) {
    options.header = true;
    options.delimiter = '\t';
  }
  try {
    auto d = load_csv(path, options);
    check_rows(d, d.cols);
    if (d.y.size() != static_cast<std::size_t>(d.rows) || d.classes <= 0) std::abort();
    for (auto label : d.y)
      if (label < 0 || label >= d.classes) std::abort();
  } catch (const dataset_error&) {
  }
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  fuzz::selected in;
  if (!fuzz::select(data, size, 6, in)) return 0;
  auto path = fuzz::scratch_file("input", in.text());
  if (in.choice < 3)
    prediction(path, in.choice);
  else
    csv(path, in.choice);
  return 0;
}
