// Loads what a data_source describes, on the host that trains or evaluates on it.
#pragma once

#include "actors/ps/data_source.hpp"
#include "actors/ps/dataset.hpp"

#include "actors/protocol/wire.hpp"

#include <memory>
#include <vector>

namespace actorps {

/// Loads the training (or test) split; throws dataset_error naming the file on bad data. A
/// libsvm or csv training split is only counted (rows set, no data): its workers stream their
/// parts.
std::shared_ptr<const dataset> load_split(const data_source& src, bool train);

/// The index of key field `name` of `src`: C1..C26 (0..25) of Criteo data, a key field of a
/// log's schema (loaded from src.schema_path). Throws std::invalid_argument starting with
/// `name` and saying why it is none (the caller puts its flag or option in front).
int key_field_index(const data_source& src, const std::string& name);

/// The rows of the training split really there (epochs count them); throws dataset_error.
int64_t training_rows(const data_source& src);

/// The same, for `workers` workers; a streamed training directory's files (their names, sizes
/// and the rows each worker reads of them) also go to `files` (left empty for a single file).
int64_t training_rows(const data_source& src, int workers, std::vector<stream_file>* files);

/// A CSV training file or directory counted for `workers` workers in one pass that parses only
/// the labels (count_csv_parts): rows, cols and classes set, no rows held; a directory's files
/// also go to `files` as training_rows puts them. Throws dataset_error, also for labels that do
/// not start at 0.
dataset count_csv_training(const std::string& path, int workers, std::vector<stream_file>* files);

/// File `path` of a streamed training directory (libsvm, criteo, csv) with its size and the rows
/// each of `workers` workers reads of it; throws dataset_error.
stream_file count_stream_file(const data_source& src, const std::string& path, int workers);

} // namespace actorps
