// A feature schema: how the columns of a user's own TSV or CSV log become a CTR model's input
// (labels, weights, dense values, one key list per field), read from a JSON or YAML file. The
// format is in actors/data/SCHEMA_FORMAT.md, next to its reader; the Criteo layout is one such
// schema (apps/examples/criteo_schema.json).
#pragma once

#include "actors/ps/dataset.hpp"

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace actorps {

/// Thrown for a schema file that cannot be read or says something wrong; what() names the
/// file and, where one is to blame, the line and column of the JSON, or the schema column,
/// e.g. "s.json: column 3 (price): transform 'log2' is not one of none, log1p, standardise,
/// bucketize". A dataset_error, so that it reaches the user as a bad data file does.
struct schema_error : dataset_error {
  using dataset_error::dataset_error;
};

/// How the bag of keys of a multi-hot field becomes one vector per sample.
enum class pooling { sum, mean };

/// One column of the log, in file order.
struct feature_column {
  enum class kind { label, weight, numeric, categorical, multi_hot, ignore };
  enum class transform { none, log1p, standardise, bucketize };

  std::string name;
  kind what = kind::ignore;
  // numeric
  transform how = transform::none;
  double mean = 0, std = 1;         ///< standardise: (x − mean) / std
  std::vector<double> boundaries;   ///< bucketize: ascending; bucket = #boundaries ≤ x
  int dense = -1;                   ///< a numeric without bucketize: its index in a dense row
  // categorical, multi_hot and a bucketized numeric: a key field (slot) of the batch
  int slot = -1;                    ///< the field's index in the batch's key fields
  int table = -1;                   ///< the key's top byte (the named table's number)
  std::string table_name;
  std::string vocabulary_path;      ///< "" : every value hashed
  std::unordered_set<uint64_t> vocabulary;  ///< the keys of the vocabulary's values
  // multi_hot
  char separator = '|';
  int max_length = 0;               ///< the first max_length values of a bag are kept
  pooling pool = pooling::sum;
};

/// A key field made of the values of two single-valued categorical columns.
struct feature_cross {
  std::string name;
  int first = -1, second = -1;      ///< their indices in feature_schema::columns
  int slot = -1, table = -1;
  std::string table_name;
};

/// A parsed, checked schema.
struct feature_schema {
  std::string path;                 ///< the file it came from, for messages
  std::vector<feature_column> columns;
  std::vector<feature_cross> crosses;
  int label = -1;                   ///< the label's column
  int weight = -1;                  ///< the weight's column; -1: every row weighs 1
  int dense_width = 0;              ///< numeric columns that stay numbers
  int fields = 0;                   ///< key fields: categorical, multi-hot, bucketized, crosses
  std::vector<std::string> field_names;  ///< per key field: its column's (or cross's) name
  std::vector<int> field_tables;    ///< per key field: its table number
  std::vector<pooling> field_pooling;    ///< per key field (single-valued ones: sum)
  bool multi_hot = false;           ///< whether a field holds a bag of keys

  /// The key field named `name` ("": none), or -1.
  int field(const std::string& name) const;
};

/// Reads and checks the schema in the JSON file `path` (YAML when it is named *.yaml or *.yml).
/// Throws schema_error naming the file and what is wrong (line and column of a syntax error;
/// the schema column otherwise).
/// Vocabulary files are read now, relative to the schema's directory unless absolute.
feature_schema load_feature_schema(const std::string& path);

/// The schema in the JSON text `json_text` (vocabularies as lists of values, or files relative to
/// the working directory); `origin` names it in errors. Throws schema_error.
feature_schema parse_feature_schema(const std::string& json_text, const std::string& origin);

/// The schema file `path` (JSON or YAML) as one JSON text that needs no other file: each
/// vocabulary file's values inlined as the column's "vocabulary" list. What an export of a model
/// trained on it records (parse_feature_schema reads it back). Throws schema_error.
std::string self_contained_schema(const std::string& path);

/// The one key every value outside a column's vocabulary gets: (table << 56) | (2^56 − 1).
/// (A missing value's key is criteo_key(table, ""), table << 56 itself.)
uint64_t out_of_vocabulary_key(int table);

} // namespace actorps
