// The feature schema and its reader: every column type decoded exactly, the Criteo layout as one
// schema among others (the same keys and values as criteo_reader), and bad schemas and data
// lines named by file, line and column.
#include "actors/data/criteo_reader.hpp"
#include "actors/data/ctr_batches.hpp"
#include "actors/data/load_split.hpp"
#include "actors/data/schema_reader.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/ps/feature_schema.hpp"
#include "actors/ps/model_registry.hpp"
#include "apps/gen_data/planted_criteo.hpp"
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/text_file_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

using namespace actorps;

namespace {

const std::string criteo_schema_file =
  std::string(ACTORPS_SOURCE_DIR) + "/apps/examples/criteo_schema.json";

struct schema_dir : test::text_file_dir {
  schema_dir() : text_file_dir("actorps_schema") {}
};

std::shared_ptr<const feature_schema> schema_of(const std::string& file) {
  return std::make_shared<const feature_schema>(load_feature_schema(file));
}

/// Every row of the part, as one batch.
criteo_batch read_whole(schema_reader& reader, size_t batch = 7) {
  criteo_batch all, b;
  while (reader.next_batch(batch, b) > 0) all.append(b);
  return all;
}

criteo_batch read_whole(criteo_reader& reader) {
  criteo_batch all, b;
  while (reader.next_batch(7, b) > 0) all.append(b);
  return all;
}

/// What load_feature_schema throws for the schema `text`; fails the test when nothing.
std::string schema_error_of(const schema_dir& dir, const std::string& text) {
  const auto file = dir.plain("bad.json", text);
  try {
    load_feature_schema(file);
  } catch (const schema_error& e) {
    return e.what();
  }
  FAIL("schema " << text << " threw no schema_error");
  return {};
}

/// What reading all of `file` by `schema` throws; fails the test when nothing.
std::string data_error_of(const std::string& file, std::shared_ptr<const feature_schema> schema,
                          char delimiter = '\t') {
  try {
    schema_reader reader(file, 0, 1, std::move(schema), {delimiter});
    read_whole(reader);
  } catch (const dataset_error& e) {
    return e.what();
  }
  FAIL("reading " << file << " threw no dataset_error");
  return {};
}

/// A schema with every kind of column (and a cross), for the decoding and error tests.
const char* every_kind = R"({
  "columns": [
    {"name": "click", "type": "label"},
    {"name": "w", "type": "weight"},
    {"name": "price", "type": "numeric", "transform": "standardise", "mean": 10, "std": 4},
    {"name": "count", "type": "numeric", "transform": "log1p"},
    {"name": "raw", "type": "numeric"},
    {"name": "age", "type": "numeric", "transform": "bucketize", "boundaries": [18, 30, 60]},
    {"name": "note", "type": "ignore"},
    {"name": "user", "type": "categorical"},
    {"name": "country", "type": "categorical", "vocabulary": "countries.txt"},
    {"name": "clicked", "type": "multi_hot", "separator": "|", "max_length": 3,
     "pooling": "mean", "table": "items"},
    {"name": "item", "type": "categorical", "table": "items"}
  ],
  "crosses": [{"name": "user_x_item", "columns": ["user", "item"]}]
})";

} // namespace

TEST_CASE("schema_reader decodes every column type exactly") {
  schema_dir dir;
  dir.plain("countries.txt", "DE\nFR\n\nUS\n");
  const auto s = schema_of(dir.plain("s.json", every_kind));
  CHECK(s->label == 0);
  CHECK(s->weight == 1);
  CHECK(s->dense_width == 3);
  REQUIRE(s->fields == 6);  // age, user, country, clicked, item, user_x_item
  CHECK(s->field_names == std::vector<std::string>{"age", "user", "country", "clicked", "item",
                                                   "user_x_item"});
  // Tables in order of appearance; "items" shared by clicked and item.
  CHECK(s->field_tables == std::vector<int>{0, 1, 2, 3, 3, 4});
  CHECK(s->field_pooling[3] == pooling::mean);
  CHECK(s->multi_hot);
  CHECK(s->field("user_x_item") == 5);
  CHECK(s->field("price") == -1);

  const std::string text =
    "1\t2.5\t14\t9\t-1.5\t30\tanything\tu7\tFR\ta|b||c|d\tb\n"
    "0\t0\t\t\t\t\t\t\tXX\t\t\r\n"
    "\n"
    "1\t1\t+6\t-4\t1e3\t17.9\t\tu7\tUS\tz\tz\n";
  const auto key = [](int table, const std::string& v) { return criteo_key(table, v); };
  const std::vector<float> labels = {1, 0, 1}, weights = {2.5f, 0, 1};
  const std::vector<float> dense = {1.0f, static_cast<float>(std::log1p(9.0)), -1.5f,
                                    0, 0, 0,  // missing: 0 whatever the transform
                                    -1.0f, 0, 1000.0f};
  const std::vector<uint64_t> keys = {
    // row 0: age 30 is in bucket 2 (boundaries ≤ 30: 18, 30), clicked keeps 3 of a|b|c|d
    key(0, "2"), key(1, "u7"), key(2, "FR"), key(3, "a"), key(3, "b"), key(3, "c"), key(3, "b"),
    key(4, std::string("u7") + '\x1f' + "b"),
    // row 1: every value missing, XX out of the vocabulary, an empty bag
    key(0, ""), key(1, ""), out_of_vocabulary_key(2), key(3, ""), key(4, ""),
    // row 2
    key(0, "0"), key(1, "u7"), key(2, "US"), key(3, "z"), key(3, "z"),
    key(4, std::string("u7") + '\x1f' + "z")};
  const std::vector<uint32_t> offsets = {0, 1, 2, 3, 6, 7, 8,  9, 10, 11, 11, 12, 13,
                                         14, 15, 16, 17, 18, 19};
  CHECK(out_of_vocabulary_key(2) == ((uint64_t{2} << 56) | ((uint64_t{1} << 56) - 1)));

  for (const std::string& file : {dir.plain("log.tsv", text), dir.gzip("log.tsv.gz", text)}) {
    CAPTURE(file);
    for (size_t batch : {1, 2, 5}) {
      schema_reader reader(file, 0, 1, s);
      const auto b = read_whole(reader, batch);
      CHECK(b.dense_width == 3);
      CHECK(b.fields == 6);
      CHECK(b.labels == labels);
      CHECK(b.weights == weights);
      CHECK(b.dense == dense);
      CHECK(b.keys == keys);
      CHECK(b.offsets == offsets);
      CHECK(reader.rows_read() == 3);
    }
  }
  // The same schema in YAML reads the same rows.
  const auto yaml = schema_of(dir.plain("s.yaml", R"(columns:
  - {name: click, type: label}
  - {name: w, type: weight}
  - {name: price, type: numeric, transform: standardise, mean: 10, std: 4}
  - {name: count, type: numeric, transform: log1p}
  - {name: raw, type: numeric}
  - {name: age, type: numeric, transform: bucketize, boundaries: [18, 30, 60]}
  - {name: note, type: ignore}
  - {name: user, type: categorical}
  - {name: country, type: categorical, vocabulary: countries.txt}
  - name: clicked
    type: multi_hot
    separator: "|"
    max_length: 3
    pooling: mean
    table: items
  - {name: item, type: categorical, table: items}
crosses:
  - {name: user_x_item, columns: [user, item]}
)"));
  CHECK(yaml->field_names == s->field_names);
  CHECK(yaml->field_tables == s->field_tables);
  {
    schema_reader reader(dir.plain("log2.tsv", text), 0, 1, yaml);
    const auto b = read_whole(reader);
    CHECK(b.keys == keys);
    CHECK(b.dense == dense);
    CHECK(b.offsets == offsets);
  }
  // A directory is one stream: its files in name order.
  const auto cut = text.find("\n") + 1;
  std::filesystem::create_directory(dir.path + "/days");
  dir.plain("days/1.tsv", text.substr(0, cut));
  dir.gzip("days/2.tsv.gz", text.substr(cut));
  {
    schema_reader reader(dir.path + "/days", 0, 1, s);
    const auto b = read_whole(reader);
    CHECK(b.keys == keys);
    CHECK(b.labels == labels);
  }
  // The same lines comma-separated (csv:PATH): the same rows.
  std::string csv = text;
  for (auto& c : csv)
    if (c == '\t') c = ',';
  schema_reader reader(dir.plain("log.csv", csv), 0, 1, s, {','});
  const auto b = read_whole(reader);
  CHECK(b.keys == keys);
  CHECK(b.dense == dense);
}

TEST_CASE("self_contained_schema inlines the vocabulary files: the same schema from its text") {
  schema_dir dir;
  dir.plain("countries.txt", "DE\nFR\n\nUS\n");
  const auto file = dir.plain("s.json", every_kind);
  const auto from_file = load_feature_schema(file);
  const auto text = self_contained_schema(file);
  CHECK(text.find("countries.txt") == std::string::npos);
  CHECK(text.find(R"("vocabulary":["DE","FR","US"])") != std::string::npos);
  std::filesystem::remove(dir.path + "/countries.txt");  // the text needs no file now
  const auto from_text = parse_feature_schema(text, "recorded");
  CHECK(from_text.field_names == from_file.field_names);
  CHECK(from_text.field_tables == from_file.field_tables);
  CHECK(from_text.dense_width == from_file.dense_width);
  CHECK(from_text.field_pooling == from_file.field_pooling);
  REQUIRE(from_text.columns.size() == from_file.columns.size());
  CHECK(from_text.columns[8].vocabulary == from_file.columns[8].vocabulary);
  CHECK(from_text.columns[8].vocabulary.size() == 3);
  CHECK_THROWS_WITH_AS(parse_feature_schema(R"({"columns": [{"name": "c", "type": "label"},
    {"name": "x", "type": "categorical", "vocabulary": [1]}]})", "recorded"),
    "recorded: column 2 (x): 'vocabulary' must be a file name or a list of strings",
    schema_error);
}

TEST_CASE("schema_reader decodes the Criteo example schema into exactly criteo_reader's rows") {
  schema_dir dir;
  planted_criteo_spec spec;
  spec.rows = 3000;
  spec.test_rows = 500;
  spec.seed = 7;
  const auto data = write_planted_criteo(spec, dir.path);
  const auto s = schema_of(criteo_schema_file);
  CHECK(s->dense_width == criteo_dense_fields);
  CHECK(s->fields == criteo_categorical_fields);
  CHECK(!s->multi_hot);
  for (int f = 0; f < criteo_categorical_fields; ++f) CHECK(s->field_tables[f] == f);

  for (int parts : {1, 3}) {
    for (int p = 0; p < parts; ++p) {
      CAPTURE(parts);
      CAPTURE(p);
      criteo_reader criteo(data.train_path, p, parts);
      schema_reader logs(data.train_path, p, parts, s);
      const auto want = read_whole(criteo);
      const auto got = read_whole(logs);
      REQUIRE(got.rows() == want.rows());
      CHECK(got.rows() > 900);
      CHECK(got.labels == want.labels);
      CHECK(got.dense == want.dense);  // bit for bit: log1p of the same double
      CHECK(got.keys == want.keys);
      CHECK(got.offsets.empty());
      CHECK(got.weights.empty());
    }
  }
  // The test split as the evaluator loads it, and a worker's batches by clock.
  data_source criteo_src, logs_src;
  criteo_src.what = data_source::kind::criteo;
  logs_src.what = data_source::kind::logs;
  criteo_src.train_path = logs_src.train_path = data.train_path;
  criteo_src.test_path = logs_src.test_path = data.test_path;
  logs_src.schema_path = criteo_schema_file;
  criteo_src.group_field = logs_src.group_field = 4;
  criteo_src.slice_field = logs_src.slice_field = 7;
  const auto want = load_split(criteo_src, false), got = load_split(logs_src, false);
  CHECK(got->rows == want->rows);
  CHECK(got->criteo.keys == want->criteo.keys);
  CHECK(got->criteo.dense == want->criteo.dense);
  CHECK(got->groups.gauc == want->groups.gauc);
  CHECK(got->groups.slices == want->groups.slices);
  CHECK(got->groups.slices.size() == want->criteo.rows());
  CHECK(training_rows(logs_src) == training_rows(criteo_src));
  ctr_batches a(criteo_src, 1, 2, 64), b(logs_src, 1, 2, 64);
  CHECK(b.schema() != nullptr);
  for (int64_t clock : {3, 0, 4}) CHECK(a.at(clock).keys == b.at(clock).keys);
}

TEST_CASE("schema_reader names file, line and column of a bad data line") {
  schema_dir dir;
  dir.plain("countries.txt", "DE\n");
  const auto s = schema_of(dir.plain("s.json", every_kind));
  const std::string good = "1\t1\t1\t1\t1\t1\t\tu\tDE\ta\tb";
  auto with = [&](int column, const std::string& value) {  // `good` with one column replaced
    std::vector<std::string> cells = {"1", "1", "1", "1", "1", "1", "", "u", "DE", "a", "b"};
    cells[static_cast<size_t>(column - 1)] = value;
    std::string out;
    for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "\t" : "") + cells[i];
    return out;
  };
  struct bad_case {
    std::string line;
    std::string message;
  };
  for (const auto& c : {
         bad_case{"1\t1\t1", ":3: 3 columns, expected 11 (as " + s->path + " names them)"},
         bad_case{good + "\textra", ":3: 12 columns, expected 11"},
         bad_case{with(1, "2"), ":3: column 1 (click) '2' is not 0 or 1"},
         bad_case{with(1, ""), ":3: column 1 (click) '' is not 0 or 1"},
         bad_case{with(2, "-1"), ":3: column 2 (w) '-1' is not a weight (a number >= 0)"},
         bad_case{with(3, "x1"), ":3: column 3 (price) 'x1' is not a number"},
         bad_case{with(5, "nan"), ":3: column 5 (raw) 'nan' is not a number"},
         bad_case{with(5, "1e300"), ":3: column 5 (raw) '1e300' is out of float range"},
         bad_case{with(6, "old"), ":3: column 6 (age) 'old' is not a number"},
       }) {
    CAPTURE(c.line);
    const auto file = dir.plain("bad.tsv", good + "\n" + good + "\n" + c.line + "\n" + good + "\n");
    const auto message = data_error_of(file, s);
    CHECK_MESSAGE(message.find(file + c.message) == 0, message);
    // Skipped and counted instead, the good lines read.
    schema_reader skipping(file, 0, 1, s, {'\t', true});
    CHECK(read_whole(skipping).rows() == 3);
    CHECK(skipping.lines_skipped() == 1);
    CHECK(skipping.first_skip_reason() == message);
  }
  // The wrong delimiter reads as one column.
  const auto tsv = dir.plain("good.tsv", good + "\n");
  CHECK(data_error_of(tsv, s, ',').find(tsv + ":1: 1 column, expected 11") == 0);
  CHECK_THROWS_WITH_AS(schema_reader(dir.plain("empty.tsv", "\n\n"), 0, 1, s),
                       doctest::Contains("no data rows"), dataset_error);
}

TEST_CASE("load_feature_schema names file, line and column of a bad schema") {
  schema_dir dir;
  const auto file = dir.path + "/bad.json";
  struct bad_case {
    std::string text;
    std::string message;
  };
  const std::string label = R"({"name": "y", "type": "label"})";
  auto cols = [&](const std::string& more) { return R"({"columns": [)" + label + ", " + more + "]}"; };
  for (const auto& c : {
         bad_case{"{\"columns\": [\n  {\"name\": \"y\",, }\n]}", file + ":2:16: syntax error"},
         bad_case{"[]", file + ": the schema: it must be a JSON object"},
         bad_case{R"({"columns": []})", file + ": the schema: \"columns\" must be a non-empty"},
         bad_case{R"({"columns": [{"name": "a", "type": "categorical"}]})",
                  file + ": the schema: no column has type label"},
         bad_case{R"({"colums": []})", file + ": the schema: unknown key 'colums'"},
         bad_case{cols(R"({"name": "a", "type": "text"})"),
                  file + ": column 2 (a): type 'text' is not one of label, weight, numeric"},
         bad_case{cols(R"({"type": "numeric"})"), file + ": column 2: 'name' is missing"},
         bad_case{cols(R"({"name": "y", "type": "numeric"})"),
                  file + ": column 2 (y): a second column named 'y'"},
         bad_case{cols(R"({"name": "a", "type": "numeric", "transform": "log2"})"),
                  file + ": column 2 (a): transform 'log2' is not one of none, log1p, "
                         "standardise, bucketize"},
         bad_case{cols(R"({"name": "a", "type": "numeric", "tranform": "log1p"})"),
                  file + ": column 2 (a): unknown key 'tranform'"},
         bad_case{cols(R"({"name": "a", "type": "numeric", "transform": "standardise",
                           "mean": 1, "std": 0})"),
                  file + ": column 2 (a): 'std' must be above 0"},
         bad_case{cols(R"({"name": "a", "type": "numeric", "transform": "standardise",
                           "std": 1})"),
                  file + ": column 2 (a): 'mean' is missing"},
         bad_case{cols(R"({"name": "a", "type": "numeric", "transform": "bucketize",
                           "boundaries": [1, 1]})"),
                  file + ": column 2 (a): 'boundaries' must be strictly ascending"},
         bad_case{cols(R"({"name": "a", "type": "multi_hot"})"),
                  file + ": column 2 (a): 'max_length' must be an integer"},
         bad_case{cols(R"({"name": "a", "type": "multi_hot", "max_length": 5, "pooling": "max"})"),
                  file + ": column 2 (a): pooling 'max' is not sum or mean"},
         bad_case{cols(R"({"name": "a", "type": "multi_hot", "max_length": 5, "separator": "||"})"),
                  file + ": column 2 (a): 'separator' must be one character"},
         bad_case{cols(R"({"name": "a", "type": "categorical", "vocabulary": "none.txt"})"),
                  file + ": column 2 (a): vocabulary: "},
         bad_case{cols(R"({"name": "w", "type": "weight"}, {"name": "v", "type": "weight"})"),
                  file + ": column 3 (v): a second weight (the first is column 2)"},
         bad_case{cols(R"({"name": "a", "type": "categorical"}, {"name": "n", "type": "numeric"}],
                  "crosses": [{"name": "x", "columns": ["a", "n"]})"),
                  file + ": cross 1 (x): column 'n' is not categorical"},
         bad_case{cols(R"({"name": "a", "type": "categorical"}],
                  "crosses": [{"name": "x", "columns": ["a", "b"]})"),
                  file + ": cross 1 (x): no column is named 'b'"},
       }) {
    CAPTURE(c.text);
    const auto message = schema_error_of(dir, c.text);
    CHECK_MESSAGE(message.find(c.message) == 0, message);
  }
  // YAML: the syntax error's line and column too.
  const auto yaml = dir.plain("bad.yaml", "columns:\n  - {name: y, type: label\n  - x: [\n");
  CHECK_THROWS_WITH_AS(load_feature_schema(yaml), doctest::Contains((yaml + ":3:").c_str()), schema_error);
  CHECK_THROWS_WITH_AS(load_feature_schema(dir.plain("t.yml", "columns:\n  - {name: y, type: label}\n"
                                                              "  - {name: a, type: txt}\n")),
                       doctest::Contains("t.yml: column 2 (a): type 'txt' is not one of"),
                       schema_error);
  CHECK_THROWS_WITH_AS(load_feature_schema(dir.path + "/none.json"),
                       doctest::Contains("none.json: cannot open the schema file"), schema_error);
}

TEST_CASE("--schema: a bad schema or flag is refused with exit 2, naming it") {
  schema_dir dir;
  const auto data = dir.plain("log.tsv", "1\t3\n0\t4\n");
  const auto bad = dir.plain("bad.json", R"({"columns": [{"name": "y", "type": "lable"}]})");
  const auto lr_only = dir.plain("small.json", R"({"columns": [{"name": "y", "type": "label"},
    {"name": "c", "type": "categorical"}]})");
  const auto one_each = dir.plain("one_each.json", R"({"columns": [{"name": "y", "type": "label"},
    {"name": "n", "type": "numeric"}, {"name": "c", "type": "categorical"}]})");
  const std::string run = "simulate --model dlrm --steps 1 --no-progress --dataset tsv:" + data
                          + " --test " + data;
  struct refused {
    std::string args, named;
  };
  for (const auto& c : {
         refused{run + " --schema " + bad, bad + ": column 1 (y): type 'lable' is not one of"},
         refused{run, "--dataset tsv:" + data + " needs --schema FILE"},
         refused{run + " --schema " + lr_only, "--model dlrm does not fit --schema " + lr_only
                                                 + ": " + lr_only + " gives 0 dense values and 1 "
                                                 "key fields a row"},
         // a shape written with the model is the user's: refused when the log has another
         refused{"simulate --model dlrm:4x2 --steps 1 --no-progress --dataset tsv:" + data
                   + " --test " + data + " --schema " + one_each,
                 "--model dlrm:4x2 does not fit --schema " + one_each + ": " + one_each
                   + " gives 1 dense values and 1 key fields a row; the model reads 4 and 2"},
         refused{run + " --schema " + criteo_schema_file + " --gauc-group C99",
                 "--gauc-group C99 is no key field of"},
         refused{"simulate --model dlrm --dataset criteo:" + data + " --test " + data
                   + " --schema " + lr_only,
                 "--schema " + lr_only + " needs --dataset tsv:PATH or csv:PATH"},
       }) {
    CAPTURE(c.args);
    const auto r = test::run_actorps(c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find(c.named) != std::string::npos, r.output);
  }
}

TEST_CASE("--schema of the Criteo layout trains lr and dlrm to criteo:'s AUC to the last bit") {
  schema_dir dir;
  planted_criteo_spec spec;
  spec.rows = 20000;
  spec.test_rows = 4000;
  spec.seed = 3;
  const auto data = write_planted_criteo(spec, dir.path);
  // sync: the same batches give the same model bit for bit; --gauc-group through the field's
  // name on the schema side.
  for (const std::string model : {"lr", "dlrm:8:16:16 --admit-after 2"}) {
    CAPTURE(model);
    nlohmann::json summary[2];
    for (int via_schema = 0; via_schema < 2; ++via_schema) {
      const auto metrics = dir.path + "/run-" + std::to_string(via_schema) + ".jsonl";
      const std::string dataset =
        via_schema ? "--dataset tsv:" + data.train_path + " --schema " + criteo_schema_file
                   : "--dataset criteo:" + data.train_path;
      const auto r = test::run_actorps("simulate --no-progress --mode sync --model " + model + " "
                                       + dataset + " --test " + data.test_path
                                       + " --gauc-group C3 --metrics " + metrics);
      REQUIRE_MESSAGE(r.status == 0, r.output);
      summary[via_schema] = test::metrics_summary(metrics);
      REQUIRE(summary[via_schema].contains("final_test_auc"));
    }
    CAPTURE(summary[0].dump());
    CHECK(summary[0]["final_test_auc"].get<double>() > 0.6);
    for (const char* figure : {"final_test_auc", "final_test_logloss", "final_test_gauc",
                               "final_test_calibration", "sparse_rows", "samples"})
      CHECK_MESSAGE(summary[1][figure] == summary[0][figure], figure);
  }
}
