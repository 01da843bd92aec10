// A click-through-rate model (lr, dlrm, wdl or deepfm on Criteo logs) ready for serving: its
// dense tensors and, per categorical field C1..C26, a vocabulary and a matrix of rows (wdl and
// deepfm: two, the embeddings' and the wide weights').
//
// Training keeps all 26 fields in one sparse table whose keys carry their field in the top byte
// (actors/ps/criteo_keys.hpp). Serving wants them apart: field f's vocabulary is its keys,
// ascending, and its matrix has (keys + 1) rows — row 0 for a key the model never saw (zeros),
// row i + 1 for vocabulary key i. A model whose table lacks a field still has its row 0.
//
//   auto table = merge_rows(parts_per_shard, dim);       // every row the shards hold
//   ctr_model m = make_ctr_model(spec.model, dense, table);
//   uint32_t row = m.fields[2].row_of(criteo_key(2, "68fd1e64"));  // 0: unknown
#pragma once

#include "actors/protocol/model_spec.hpp"
#include "actors/ps/feature_schema.hpp"
#include "actors/serving/exported_model.hpp"  // tensor_slot
#include "kernels/dlrm.hpp"
#include "kernels/wide_deep.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorps {

enum class ctr_kind {
  lr,    ///< σ(bias + dense·w + Σ_f wide_f[row]): criteo_lr_plugin.hpp
  dlrm,  ///< kernels/dlrm.hpp
  wdl,     ///< kernels/wide_deep.hpp: Wide & Deep
  deepfm,  ///< kernels/wide_deep.hpp with the FM term
};

/// "lr", "dlrm", "wdl" or "deepfm".
const char* to_string(ctr_kind kind);

/// One categorical field's part of the model.
struct ctr_field {
  std::vector<uint64_t> keys;  ///< strictly ascending; keys[i] has row i + 1
  std::vector<float> rows;     ///< (keys.size() + 1) × dim; row 0 zeros (unknown keys)

  /// The row of `key`: its place in `keys` + 1, or 0 when it is not there.
  uint32_t row_of(uint64_t key) const;
};

struct ctr_model {
  ctr_kind kind = ctr_kind::dlrm;
  std::string name;               ///< the model string trained: "lr:ftrl", "dlrm:16:64-32:64-32"
  dlrm_shape shape;               ///< the sizes; lr: 13 dense features, 26 fields, dim 1, no MLP;
                                  ///< wdl, deepfm: dense_in, fields and dim, no bottom or top
  std::vector<int> hidden;        ///< wdl, deepfm: the deep MLP's hidden widths
  std::string table;              ///< the (first) sparse table trained: "wide" (lr), "embeddings"
  std::vector<float> dense;       ///< every dense tensor, flat in the order of tensor_slots()
  std::vector<ctr_field> fields;  ///< one per table: C1, C2, ... (a schema's: its tables)
  std::vector<ctr_field> wide;    ///< wdl, deepfm: the table "wide" cut as `fields`, 1 float a
                                  ///< row (its keys may differ); empty for lr and dlrm
  // A model a log's schema shaped (layout "schema"); all empty for Criteo's layout, where key
  // field f is table f.
  std::string schema;             ///< the schema, self-contained JSON (self_contained_schema)
  std::shared_ptr<const feature_schema> input;  ///< `schema` parsed: how lines become rows
  char delimiter = '\t';          ///< '\t' (tsv:) or ',' (csv:)
  std::vector<int> field_tables;  ///< per key field: its table, an index into `fields`
  std::vector<uint8_t> mean_fields;  ///< per key field: 1 where its bag pools by the mean

  /// Whether a schema shaped the model (its input is not Criteo's layout).
  bool shaped() const { return input != nullptr; }

  /// Floats per row of the field matrices: 1 for lr, shape.dim for the others.
  int dim() const { return kind == ctr_kind::lr ? 1 : shape.dim; }
  /// Whether the model has the second table "wide" (wdl, deepfm).
  bool has_wide() const { return kind == ctr_kind::wdl || kind == ctr_kind::deepfm; }
  /// wdl's and deepfm's sizes, for kernels/wide_deep.
  wide_deep_shape wide_deep_sizes() const;
  /// The dense tensors in layout order: lr "dense/kernel" [13], "bias" [1]; dlrm those of
  /// dlrm_tensors(shape); wdl and deepfm those of wide_deep_tensors.
  std::vector<tensor_slot> tensor_slots() const;
};

/// The name of wdl's and deepfm's second table, the wide weights.
inline constexpr const char* ctr_wide_table = "wide";

/// Every row of one sparse table: keys strictly ascending, values keys × dim.
struct gathered_rows {
  std::vector<uint64_t> keys;
  std::vector<float> values;
};

/// One table from its parts on each shard (any order, shards own disjoint keys). Throws
/// std::invalid_argument when values do not fit keys × dim or a key comes twice.
gathered_rows merge_rows(const std::vector<gathered_rows>& parts, uint32_t dim);

/// The kind of `model` when it is one of the CTR models exports know ("lr…", "dlrm…", "wdl…",
/// "deepfm…").
std::optional<ctr_kind> ctr_kind_of(const model_spec& model);

/// Whether `model` is a CTR model a log's schema shaped (its name ends in ":DENSExFIELDS"
/// other than Criteo's 13 and 26): its export needs that schema.
bool schema_shaped(const model_spec& model);

/// The serving form of a trained CTR model: `dense` (model.total_floats(), flat) and `tables`,
/// every row of each of its sparse tables in spec order (wdl, deepfm: "embeddings", "wide").
/// Throws std::invalid_argument when the spec is not one of the CTR specs, the sizes do not fit
/// it, a key's field is not one of the 26, or a value is not finite.
/// A model on another layout than Criteo's (a name ending in ":DENSExFIELDS") needs the schema
/// it trained on: `schema` (self_contained_schema's JSON) and the delimiter of its lines; its
/// table is cut into the schema's tables, not fields.
ctr_model make_ctr_model(const model_spec& model, std::vector<float> dense,
                         const std::vector<gathered_rows>& tables, const std::string& schema = "",
                         char delimiter = '\t');
/// The same for a model of one table (lr, dlrm).
ctr_model make_ctr_model(const model_spec& model, std::vector<float> dense,
                         const gathered_rows& table, const std::string& schema = "",
                         char delimiter = '\t');

/// Sets model.schema, input, delimiter, field_tables and mean_fields from `schema` (JSON), after
/// checking that its dense width and key fields are the model's. Throws std::invalid_argument.
void set_ctr_schema(ctr_model& model, const std::string& schema, char delimiter);

/// How many tables the model's keys fall in: shape.fields for Criteo's layout, else one past the
/// schema's highest table number.
int ctr_tables(const ctr_model& model);

/// The table cut into `fields` fields by each key's top byte (criteo_field_of), each matrix
/// starting with its zero row 0. Throws std::invalid_argument naming the first key that is not
/// strictly above the one before or belongs to no field, or values that do not fit keys × dim.
std::vector<ctr_field> split_fields(const gathered_rows& table, int fields, std::size_t dim);

/// The model's table again, as training held it (keys ascending, field after field), which
/// make_ctr_model cut into fields.
gathered_rows joined_rows(const ctr_model& model);
/// The same for any field matrices of rows of `dim` floats (model.wide: 1).
gathered_rows joined_rows(const std::vector<ctr_field>& fields, std::size_t dim);

/// Field f's vocabulary as served (vocab/C<f>.tsv, model.onnx's indices): its keys in
/// model.fields, and for wdl and deepfm those in model.wide too, ascending.
std::vector<uint64_t> served_keys(const ctr_model& model, std::size_t f);

/// `field`'s matrix laid along `keys` (a superset of its keys, ascending): row 0 and each key's
/// row i + 1, zeros for a key the field lacks.
std::vector<float> rows_along(const ctr_field& field, const std::vector<uint64_t>& keys,
                              std::size_t dim);

} // namespace actorps
