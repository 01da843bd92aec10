// A labelled dataset from a CSV file, plain or gzip-compressed: the format a user tries first.
#pragma once

#include "actors/data/dataset.hpp"

#include <optional>
#include <string>

namespace actorps {

/// How load_csv reads a file.
struct csv_options {
  int label_column = 0;        ///< 0-based; -1: the last column
  std::optional<bool> header;  ///< nullopt: detect (a first line with a non-numeric feature field
                               ///< is a header)
  char delimiter = ',';
};

/// Loads a CSV file, plain or gzip (zlib's gzopen reads both transparently), into a dataset:
/// the label column holds class indices 0..K-1 (integers; K = max label + 1 = dataset.classes),
/// every other column a numeric feature (float). Throws dataset_error naming file, line and
/// column on a bad field, a ragged row, a negative or fractional label, an empty file.
///
/// The file is read in chunks, never whole. Fields may be surrounded by spaces or tabs and
/// enclosed in double quotes (which may hold the delimiter; no line breaks inside); lines may
/// end in "\r\n"; blank lines are skipped; a UTF-8 byte order mark is ignored. Features are
/// read locale-free and correctly rounded to float; NaN, infinity and values beyond float's
/// range are refused, since one of them silently poisons a model. A label may be written as
/// an integral float ("3.0", numpy's "3.000000000000000000e+00"). Lines and columns in
/// messages are 1-based, as editors show them, e.g.
///   data.csv:17:4: 'abc' is not a number (field 2)
///   data.csv:9: 5 fields, expected 21 (as on line 1)
///   data.csv:3:1: label '2.5' is not a non-negative integer
///   data.csv: no data rows
/// Throws std::invalid_argument for a label_column below -1 or a delimiter that cannot
/// separate fields ('"', '\r', '\n').
dataset load_csv(const std::string& path, const csv_options& options = {});

} // namespace actorps
