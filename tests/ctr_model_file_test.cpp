// A CTR model's serving form without a run: the table cut into fields, model.capnp format 2
// round trip and every kind of damage refused by name, the vocabulary files, and model.onnx's
// inputs, outputs and per-field matrices.
#include "actors/ps/criteo_keys.hpp"
#include "actors/model/criteo_lr_plugin.hpp"
#include "actors/model/dlrm_plugin.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "actors/model/wide_deep_plugin.hpp"
#include "actors/serving/ctr_model_file.hpp"
#include "actors/serving/ctr_onnx.hpp"
#include "actors/serving/served_model.hpp"
#include "actors/serving/vocab_files.hpp"

#include "tests/model_bytes_edit.hpp"

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <limits>
#include <map>

namespace actorps {
namespace {

constexpr int dim = 3;

/// A dlrm:3:4:5 spec, dense parameters 0.01·i and a table with keys in fields C1, C4 and C26.
struct ctr_case {
  model_spec spec = dlrm_model(parse_dlrm_shape("3:4:5"));
  std::vector<float> dense;
  gathered_rows table;

  ctr_case() {
    for (std::size_t i = 0; i < spec.total_floats(); ++i) dense.push_back(0.01f * float(i % 50));
    for (auto [field, value] : {std::pair{0, "a"}, {0, "b"}, {3, "x"}, {25, ""}, {25, "z"}})
      table.keys.push_back(criteo_key(field, value));
    std::sort(table.keys.begin(), table.keys.end());
    for (std::size_t i = 0; i < table.keys.size() * dim; ++i)
      table.values.push_back(float(i) + 1.0f);
  }

  ctr_model model() const { return make_ctr_model(spec, dense, table); }
};

void check_refused(const std::string& bytes, const std::string& words) {
  try {
    decode_served_model(bytes, "/m/model.capnp");
    FAIL("accepted a damaged model");
  } catch (const model_file_error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.rfind("/m/model.capnp: ", 0) == 0);
    CHECK(msg.find(words) != std::string::npos);
  }
}

} // namespace

TEST_CASE("ctr model: the table cut into fields, each with a zero row 0, and joined again") {
  const ctr_case c;
  const auto m = c.model();
  CHECK(m.kind == ctr_kind::dlrm);
  CHECK(m.table == "embeddings");
  CHECK(m.dim() == dim);
  REQUIRE(m.fields.size() == 26);
  CHECK(m.fields[0].keys.size() == 2);
  CHECK(m.fields[3].keys == std::vector<uint64_t>{criteo_key(3, "x")});
  CHECK(m.fields[1].keys.empty());
  CHECK(m.fields[1].rows == std::vector<float>(dim, 0.0f));  // only the unknown row
  CHECK(m.fields[25].keys.size() == 2);
  for (const auto& f : m.fields)
    CHECK(std::vector<float>(f.rows.begin(), f.rows.begin() + dim) == std::vector<float>(dim, 0.0f));
  // C4's one key is the table's third: rows 7, 8, 9
  CHECK(m.fields[3].row_of(criteo_key(3, "x")) == 1);
  CHECK(std::vector<float>(m.fields[3].rows.begin() + dim, m.fields[3].rows.end())
        == std::vector<float>{7, 8, 9});
  CHECK(m.fields[3].row_of(criteo_key(3, "never seen")) == 0);
  CHECK(m.fields[3].row_of(criteo_key(2, "x")) == 0);  // the same value in another field
  const auto joined = joined_rows(m);
  CHECK(joined.keys == c.table.keys);
  CHECK(joined.values == c.table.values);
}

TEST_CASE("ctr model: merge_rows sorts the shards' parts and refuses a key twice") {
  const gathered_rows a{{5, 9}, {5, 50, 9, 90}}, b{{1, 7}, {1, 10, 7, 70}};
  const auto merged = merge_rows({a, b}, 2);
  CHECK(merged.keys == std::vector<uint64_t>{1, 5, 7, 9});
  CHECK(merged.values == std::vector<float>{1, 10, 5, 50, 7, 70, 9, 90});
  CHECK_THROWS_WITH_AS(merge_rows({a, a}, 2), doctest::Contains("comes from two shards"),
                       std::invalid_argument);
  CHECK_THROWS_AS(merge_rows({{{1}, {1}}}, 2), std::invalid_argument);
}

TEST_CASE("ctr model: only the CTR specs (lr, dlrm, wdl, deepfm) become CTR models") {
  const ctr_case c;
  CHECK(ctr_kind_of(mlp_model({4, 2})) == std::nullopt);
  CHECK(ctr_kind_of(criteo_lr_model(row_optimizer_kind::ftrl)) == ctr_kind::lr);
  CHECK(ctr_kind_of(wide_deep_model(parse_wide_deep_shape("", false))) == ctr_kind::wdl);
  CHECK(ctr_kind_of(wide_deep_model(parse_wide_deep_shape("", true))) == ctr_kind::deepfm);
  CHECK_THROWS_AS(make_ctr_model(mlp_model({4, 2}), {}, gathered_rows{}), std::invalid_argument);
  auto wrong_dim = c.spec;
  wrong_dim.sparse_tables[0].config.dim = 4;
  CHECK_THROWS_WITH_AS(make_ctr_model(wrong_dim, c.dense, c.table),
                       doctest::Contains("one sparse table of rows of 3 floats"),
                       std::invalid_argument);
  auto short_dense = c.dense;
  short_dense.pop_back();
  CHECK_THROWS_AS(make_ctr_model(c.spec, short_dense, c.table), std::invalid_argument);
  auto stray = c.table;
  stray.keys.back() = (uint64_t{30} << 56) | 1;  // no field C31
  CHECK_THROWS_WITH_AS(make_ctr_model(c.spec, c.dense, stray),
                       doctest::Contains("belongs to no field"), std::invalid_argument);
  auto nan = c.table;
  nan.values[4] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(make_ctr_model(c.spec, c.dense, nan), std::invalid_argument);
}

TEST_CASE("model.capnp format 2: a CTR model round trip, and damage refused by name") {
  const ctr_case c;
  const auto m = c.model();
  const auto good = encode_ctr_model(m);
  const auto back = std::get<ctr_model>(decode_served_model(good, "/m/model.capnp"));
  CHECK(back.name == "dlrm:3:4:5");
  CHECK(back.kind == m.kind);
  CHECK(back.shape.bottom == m.shape.bottom);
  CHECK(back.shape.top == m.shape.top);
  CHECK(back.dense == m.dense);
  CHECK(back.table == m.table);
  for (std::size_t f = 0; f < 26; ++f) {
    CHECK(back.fields[f].keys == m.fields[f].keys);
    CHECK(back.fields[f].rows == m.fields[f].rows);
  }
  CHECK_THROWS_WITH_AS(as_mlp(back, "/m/model.capnp"),
                       doctest::Contains("a CTR model (dlrm:3:4:5), not an MLP"), model_file_error);

  auto damaged = [&](auto edit) { return test::edited_model(good, edit); };
  check_refused(damaged([](auto r) { r.setFormatVersion(4); }), "format version 4");
  check_refused(damaged([](auto r) { r.disownCtr(); }), "without its CtrModel");
  check_refused(damaged([](auto r) { r.getCtr().setLayout("tsv"); }), "input layout 'tsv'");
  check_refused(damaged([](auto r) { r.getCtr().setFields(25); }), "26");
  check_refused(damaged([](auto r) { r.getCtr().setDim(4); }), "needs bottom1/kernel [4, 4]");
  check_refused(damaged([](auto r) { r.getTensors()[1].setName("bottom0/b"); }),
                "is 'bottom0/b'");
  check_refused(damaged([](auto r) { r.getSparseTables()[0].initValues(8); }),
                "do not make rows of 3 floats");
  check_refused(damaged([](auto r) {
                  auto keys = r.getSparseTables()[0].getKeys();
                  std::swap_ranges(keys.begin(), keys.begin() + 8, keys.begin() + 8);
                }),
                "not strictly ascending");
  check_refused(damaged([](auto r) {
                  auto keys = r.getSparseTables()[0].getKeys();
                  keys[keys.size() - 1] = 40;  // the last key's top byte: field 40
                }),
                "belongs to no field");
  check_refused(damaged([](auto r) {
                  const float nan = std::numeric_limits<float>::quiet_NaN();
                  std::memcpy(r.getSparseTables()[0].getValues().begin() + 4, &nan, 4);
                }),
                "NaN");
  check_refused(damaged([](auto r) {
                  const float inf = std::numeric_limits<float>::infinity();
                  std::memcpy(r.getTensors()[0].getValues().begin(), &inf, 4);
                }),
                "NaN or infinite");
}

TEST_CASE("wdl model: two tables whose keys differ, served along their union, and round trip") {
  const auto spec = wide_deep_model(parse_wide_deep_shape("3:4", false));  // wdl:3:4
  std::vector<float> dense;
  for (std::size_t i = 0; i < spec.total_floats(); ++i) dense.push_back(0.01f * float(i % 50));
  const uint64_t a = criteo_key(0, "a"), b = criteo_key(0, "b"), c = criteo_key(0, "c");
  const auto x = criteo_key(3, "x");
  gathered_rows embeddings{{a, b, x}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  gathered_rows wide{{b, c, x}, {10, 20, 30}};
  for (auto* t : {&embeddings, &wide}) {  // sorted as a table is, whatever the key hashes
    std::vector<std::size_t> order(t->keys.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](auto i, auto j) { return t->keys[i] < t->keys[j]; });
    const auto w = t->values.size() / t->keys.size();
    gathered_rows sorted;
    for (auto i : order) {
      sorted.keys.push_back(t->keys[i]);
      sorted.values.insert(sorted.values.end(), t->values.begin() + i * w,
                           t->values.begin() + (i + 1) * w);
    }
    *t = sorted;
  }
  CHECK_THROWS_WITH_AS(make_ctr_model(spec, dense, embeddings),
                       doctest::Contains("2 sparse tables, 1 given"), std::invalid_argument);
  const auto m = make_ctr_model(spec, dense, std::vector<gathered_rows>{embeddings, wide});
  CHECK(m.kind == ctr_kind::wdl);
  CHECK(m.hidden == std::vector<int>{4});
  CHECK(m.tensor_slots().front().name == "linear/kernel");
  REQUIRE(m.wide.size() == 26);
  CHECK(m.fields[0].keys.size() == 2);
  CHECK(m.wide[0].keys.size() == 2);
  // C1's served vocabulary: a, b and c; each table's matrix along it reads zeros for the key it
  // lacks (wide has no a, embeddings no c)
  auto keys = std::vector<uint64_t>{a, b, c};
  std::sort(keys.begin(), keys.end());
  CHECK(served_keys(m, 0) == keys);
  CHECK(served_keys(m, 3) == std::vector<uint64_t>{x});
  const auto wide_rows = rows_along(m.wide[0], keys, 1);
  REQUIRE(wide_rows.size() == 4);
  CHECK(wide_rows[0] == 0.0f);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(wide_rows[i + 1] == (keys[i] == a ? 0.0f : keys[i] == b ? 10.0f : 20.0f));
  const auto rows = rows_along(m.fields[0], keys, dim);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(rows[(i + 1) * dim] == (keys[i] == a ? 1.0f : keys[i] == b ? 4.0f : 0.0f));
  CHECK(vocab_file_text(served_keys(m, 0)).find(std::to_string(c)) != std::string::npos);

  // model.capnp: both tables as trained, read back the same, re-encoded byte for byte
  const auto bytes = encode_ctr_model(m);
  const auto back = std::get<ctr_model>(decode_served_model(bytes, "/m/model.capnp"));
  CHECK(back.kind == ctr_kind::wdl);
  CHECK(back.hidden == m.hidden);
  CHECK(joined_rows(back.wide, 1).keys == wide.keys);
  CHECK(joined_rows(back.wide, 1).values == wide.values);
  CHECK(joined_rows(back).keys == embeddings.keys);
  CHECK(encode_ctr_model(back) == bytes);
  auto damaged = [&](auto edit) { return test::edited_model(bytes, edit); };
  check_refused(damaged([](auto r) { r.getSparseTables()[1].setName("deep"); }),
                "the second table is 'deep', expected 'wide'");
  check_refused(damaged([](auto r) { r.getSparseTables()[1].setDim(2); }),
                "do not make rows of 1 floats");
  check_refused(damaged([](auto r) { r.getCtr().initHidden(0); }),
                "the wdl:3:4 model needs 3 tensors, the file has 5");
  check_refused(damaged([](auto r) { r.getCtr().setKind(exported::CtrModel::Kind::DLRM); }),
                "a dlrm model has no deep MLP");

  // model.onnx: each field's two matrices along the union, [3 + 1, dim] and [3 + 1, 1]
  onnx::ModelProto proto;
  REQUIRE(proto.ParseFromString(make_ctr_onnx_model(m, "test")));
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& t : proto.graph().initializer())
    dims[t.name()] = {t.dims().begin(), t.dims().end()};
  CHECK(dims["embeddings/C1"] == std::vector<int64_t>{4, dim});
  CHECK(dims["wide/C1"] == std::vector<int64_t>{4, 1});
  CHECK(dims["wide/C2"] == std::vector<int64_t>{1, 1});
  CHECK(dims.count("fm/fold") == 0);  // no FM term in wdl
}

TEST_CASE("vocabulary files: the field's keys with rows from 1, read back, and malformed ones refused") {
  const ctr_case c;
  const auto m = c.model();
  CHECK(vocab_file_name(0) == "vocab/C1.tsv");
  CHECK(vocab_file_name(25) == "vocab/C26.tsv");
  const auto text = vocab_file_text(m.fields[0].keys);
  CHECK(text == "key\trow\n" + std::to_string(m.fields[0].keys[0]) + "\t1\n"
                  + std::to_string(m.fields[0].keys[1]) + "\t2\n");
  CHECK(parse_vocab_file(text, "C1.tsv") == m.fields[0].keys);
  CHECK(parse_vocab_file(vocab_file_text(m.fields[1].keys), "C2.tsv").empty());
  CHECK_THROWS_WITH_AS(parse_vocab_file("", "v"), doctest::Contains("empty"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_vocab_file("k\tr\n", "v"), doctest::Contains("v:1: expected the header"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_vocab_file("key\trow\n5\t2\n", "v"),
                       doctest::Contains("v:2: row 2, expected 1"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_vocab_file("key\trow\n5\t1\n4\t2\n", "v"),
                       doctest::Contains("v:3: keys not ascending"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_vocab_file("key\trow\n5 1\n", "v"), doctest::Contains("not 'key<TAB>row'"),
                       std::invalid_argument);
}

TEST_CASE("model.onnx of a CTR model: its inputs, output and per-field matrices") {
  const ctr_case c;
  const auto m = c.model();
  onnx::ModelProto proto;
  REQUIRE(proto.ParseFromString(make_ctr_onnx_model(m, "test")));
  CHECK(proto.opset_import(0).version() == 13);
  const auto& g = proto.graph();
  REQUIRE(g.input_size() == 2);
  CHECK(g.input(0).name() == "dense");
  CHECK(g.input(0).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT);
  CHECK(g.input(0).type().tensor_type().shape().dim(1).dim_value() == 13);
  CHECK(g.input(1).name() == "indices");
  CHECK(g.input(1).type().tensor_type().elem_type() == onnx::TensorProto::INT64);
  CHECK(g.input(1).type().tensor_type().shape().dim(1).dim_value() == 26);
  REQUIRE(g.output_size() == 1);
  CHECK(g.output(0).name() == "probability");
  std::map<std::string, const onnx::TensorProto*> init;
  for (const auto& t : g.initializer()) init[t.name()] = &t;
  for (std::size_t f : {0u, 1u, 3u, 25u}) {
    CAPTURE(f);
    const auto* t = init.at("embeddings/C" + std::to_string(f + 1));
    CHECK(t->dims(0) == int64_t(m.fields[f].keys.size()) + 1);
    CHECK(t->dims(1) == dim);
    std::vector<float> values(m.fields[f].rows.size());
    REQUIRE(t->raw_data().size() == values.size() * sizeof(float));
    std::memcpy(values.data(), t->raw_data().data(), t->raw_data().size());
    CHECK(values == m.fields[f].rows);  // row 0 zeros, then the keys' rows in vocabulary order
  }
  std::map<std::string, int> ops;
  for (const auto& n : g.node()) ++ops[n.op_type()];
  CHECK(ops["Gather"] == 2 * 26);  // a field's column of indices, then its matrix's rows
  CHECK(ops["Slice"] == 26);       // one per row of the interaction's lower triangle
  CHECK(ops["Sigmoid"] == 1);
}

} // namespace actorps
