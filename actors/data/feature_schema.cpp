#include "actors/ps/feature_schema.hpp"

#include "actors/ps/criteo_keys.hpp"
#include "actors/data/line_reader.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

namespace actorps {

namespace {

using json = nlohmann::json;

/// Tables are the keys' top byte.
constexpr int max_tables = 256;

/// "L:C" (line, column) of byte offset `byte` (1-based, as nlohmann counts it: the byte after
/// the last one read) in `text`.
std::string position(const std::string& text, std::size_t byte) {
  const std::size_t end = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

/// The words after nlohmann's "[json.exception...] parse error at ...: ".
std::string parse_reason(const std::string& what) {
  const auto colon = what.find(": ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

/// A YAML node as the JSON it would be: a plain (unquoted) scalar that reads as a number or
/// true/false is one, every other scalar a string.
json from_yaml(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(from_yaml(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& item : node) out[item.first.Scalar()] = from_yaml(item.second);
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() != "?") return text;  // quoted
      if (text == "true" || text == "false") return text == "true";
      const char* end = text.data() + text.size();
      int64_t whole = 0;
      if (auto r = std::from_chars(text.data(), end, whole); r.ec == std::errc() && r.ptr == end)
        return whole;
      double x = 0;
      if (auto r = std::from_chars(text.data(), end, x); r.ec == std::errc() && r.ptr == end)
        return x;
      return text;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: break;
  }
  return nullptr;
}

bool is_yaml(const std::string& path) {
  auto ends = [&](const std::string& suffix) {
    return path.size() >= suffix.size()
           && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

/// A schema's JSON (or YAML, when `yaml`) from its text; `path` names it in errors.
json parse_json(const std::string& path, const std::string& text, bool yaml) {
  if (yaml) {
    try {
      return from_yaml(YAML::Load(text));
    } catch (const YAML::Exception& e) {
      throw schema_error(path + ":" + std::to_string(e.mark.line + 1) + ":"
                         + std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw schema_error(path + ":" + position(text, e.byte) + ": " + parse_reason(e.what()));
  }
}

/// Reads a schema's JSON (or YAML: a file named *.yaml or *.yml), or says where it is not.
json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw schema_error(path + ": cannot open the schema file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json(path, buffer.str(), is_yaml(path));
}

/// The vocabulary file a column names, relative to the schema's directory unless absolute.
std::string vocabulary_file(const std::string& schema_dir, const std::string& name) {
  std::filesystem::path file(name);
  if (file.is_relative()) file = std::filesystem::path(schema_dir) / file;
  return file.string();
}

/// Errors about one column (or cross) of a schema: "FILE: column N (NAME): what".
struct blame {
  const std::string& path;
  std::string where;

  [[noreturn]] void fail(const std::string& what) const {
    throw schema_error(path + ": " + where + ": " + what);
  }
  /// Every key of `o` is one of `known`.
  void only(const json& o, std::initializer_list<const char*> known) const {
    for (const auto& item : o.items()) {
      const std::string& key = item.key();  // (a structured binding: clang's lambdas refuse it)
      if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
        std::string list;
        for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
        fail("unknown key '" + key + "' (known here: " + list + ")");
      }
    }
  }
  std::string text(const json& o, const char* key, const std::string& fallback) const {
    if (!o.contains(key)) return fallback;
    if (!o[key].is_string()) fail(std::string("'") + key + "' must be a string");
    return o[key].get<std::string>();
  }
  double number(const json& o, const char* key) const {
    if (!o.contains(key)) fail(std::string("'") + key + "' is missing");
    if (!o[key].is_number()) fail(std::string("'") + key + "' must be a number");
    const double x = o[key].get<double>();
    if (!std::isfinite(x)) fail(std::string("'") + key + "' must be finite");
    return x;
  }
};

/// The table a key field hashes into: `table_name`'s number, numbered in order of appearance.
int table_of(const blame& b, const std::string& table_name, std::map<std::string, int>& tables) {
  auto [it, fresh] = tables.emplace(table_name, static_cast<int>(tables.size()));
  if (fresh && it->second >= max_tables)
    b.fail("table '" + table_name + "' is the 257th: the keys' top byte holds 256 tables");
  return it->second;
}

/// The keys of a vocabulary file's values (one a line; blank lines skipped).
std::unordered_set<uint64_t> read_vocabulary(const blame& b, const std::string& file, int table) {
  std::unordered_set<uint64_t> keys;
  try {
    line_reader lines(file);
    std::string_view line;
    while (lines.next(line))
      if (!line.empty()) keys.insert(criteo_key(table, line));
  } catch (const std::exception& e) {
    b.fail(std::string("vocabulary: ") + e.what());
  }
  if (keys.empty()) b.fail("vocabulary " + file + " holds no values");
  return keys;
}

void parse_column(const json& o, const blame& b, const std::string& schema_dir,
                  feature_column& c, std::map<std::string, int>& tables) {
  const std::string type = b.text(o, "type", "");
  if (type.empty()) b.fail("'type' is missing (label, weight, numeric, categorical, multi_hot, "
                           "ignore)");
  using kind = feature_column::kind;
  using transform = feature_column::transform;
  auto key_field = [&] {
    c.table_name = b.text(o, "table", c.name);
    if (c.table_name.empty()) b.fail("'table' is empty");
    c.table = table_of(b, c.table_name, tables);
    if (o.contains("vocabulary") && o["vocabulary"].is_array()) {  // the values themselves
      for (const auto& v : o["vocabulary"]) {
        if (!v.is_string()) b.fail("'vocabulary' must be a file name or a list of strings");
        if (!v.get<std::string>().empty())
          c.vocabulary.insert(criteo_key(c.table, v.get<std::string>()));
      }
      if (c.vocabulary.empty()) b.fail("the 'vocabulary' list holds no values");
      return;
    }
    c.vocabulary_path = b.text(o, "vocabulary", "");
    if (!c.vocabulary_path.empty())
      c.vocabulary = read_vocabulary(b, vocabulary_file(schema_dir, c.vocabulary_path), c.table);
  };
  if (type == "label" || type == "weight" || type == "ignore") {
    b.only(o, {"name", "type"});
    c.what = type == "label" ? kind::label : type == "weight" ? kind::weight : kind::ignore;
  } else if (type == "numeric") {
    c.what = kind::numeric;
    const std::string how = b.text(o, "transform", "none");
    if (how == "none" || how == "log1p") {
      b.only(o, {"name", "type", "transform"});
      c.how = how == "none" ? transform::none : transform::log1p;
    } else if (how == "standardise" || how == "standardize") {
      b.only(o, {"name", "type", "transform", "mean", "std"});
      c.how = transform::standardise;
      c.mean = b.number(o, "mean");
      c.std = b.number(o, "std");
      if (!(c.std > 0)) b.fail("'std' must be above 0");
    } else if (how == "bucketize") {
      b.only(o, {"name", "type", "transform", "boundaries", "table"});
      c.how = transform::bucketize;
      if (!o.contains("boundaries") || !o["boundaries"].is_array() || o["boundaries"].empty())
        b.fail("bucketize needs 'boundaries', a non-empty list of ascending numbers");
      for (const auto& x : o["boundaries"]) {
        if (!x.is_number() || !std::isfinite(x.get<double>()))
          b.fail("'boundaries' must hold finite numbers");
        if (!c.boundaries.empty() && !(x.get<double>() > c.boundaries.back()))
          b.fail("'boundaries' must be strictly ascending");
        c.boundaries.push_back(x.get<double>());
      }
      key_field();
    } else {
      b.fail("transform '" + how + "' is not one of none, log1p, standardise, bucketize");
    }
  } else if (type == "categorical") {
    b.only(o, {"name", "type", "table", "vocabulary"});
    c.what = kind::categorical;
    key_field();
  } else if (type == "multi_hot") {
    b.only(o, {"name", "type", "table", "vocabulary", "separator", "max_length", "pooling"});
    c.what = kind::multi_hot;
    const std::string sep = b.text(o, "separator", "|");
    if (sep.size() != 1) b.fail("'separator' must be one character");
    c.separator = sep[0];
    if (!o.contains("max_length") || !o["max_length"].is_number_integer()
        || o["max_length"].get<int64_t>() < 1 || o["max_length"].get<int64_t>() > 1000000)
      b.fail("'max_length' must be an integer from 1 to 1000000");
    c.max_length = o["max_length"].get<int>();
    const std::string pool = b.text(o, "pooling", "sum");
    if (pool != "sum" && pool != "mean") b.fail("pooling '" + pool + "' is not sum or mean");
    c.pool = pool == "sum" ? pooling::sum : pooling::mean;
    key_field();
  } else {
    b.fail("type '" + type + "' is not one of label, weight, numeric, categorical, multi_hot, "
           "ignore");
  }
}

} // namespace

int feature_schema::field(const std::string& name) const {
  for (std::size_t f = 0; f < field_names.size(); ++f)
    if (field_names[f] == name) return static_cast<int>(f);
  return -1;
}

uint64_t out_of_vocabulary_key(int table) {
  return (static_cast<uint64_t>(table) << 56) | criteo_value_mask;
}

namespace {

/// The schema `doc` (read from `path`, whose directory holds its vocabulary files), checked.
feature_schema parse_schema(const json& doc, const std::string& path) {
  blame top{path, "the schema"};
  if (!doc.is_object()) top.fail("it must be a JSON object with \"columns\"");
  top.only(doc, {"columns", "crosses"});
  if (!doc.contains("columns") || !doc["columns"].is_array() || doc["columns"].empty())
    top.fail("\"columns\" must be a non-empty list, one entry per column of the file");
  const std::string dir = std::filesystem::path(path).parent_path().string();

  feature_schema s;
  s.path = path;
  std::map<std::string, int> tables;
  std::set<std::string> names;
  const auto& columns = doc["columns"];
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const auto& o = columns[i];
    blame b{path, "column " + std::to_string(i + 1)};
    if (!o.is_object()) b.fail("must be an object with \"name\" and \"type\"");
    feature_column c;
    c.name = b.text(o, "name", "");
    if (c.name.empty()) b.fail("'name' is missing or empty");
    b.where += " (" + c.name + ")";
    if (!names.insert(c.name).second) b.fail("a second column named '" + c.name + "'");
    parse_column(o, b, dir, c, tables);
    using kind = feature_column::kind;
    if (c.what == kind::label) {
      if (s.label >= 0) b.fail("a second label (the first is column " +
                               std::to_string(s.label + 1) + ")");
      s.label = static_cast<int>(i);
    } else if (c.what == kind::weight) {
      if (s.weight >= 0) b.fail("a second weight (the first is column " +
                                std::to_string(s.weight + 1) + ")");
      s.weight = static_cast<int>(i);
    } else if (c.table >= 0) {
      c.slot = s.fields++;
      s.field_names.push_back(c.name);
      s.field_tables.push_back(c.table);
      s.field_pooling.push_back(c.pool);
      s.multi_hot = s.multi_hot || c.what == kind::multi_hot;
    } else if (c.what == kind::numeric) {
      c.dense = s.dense_width++;
    }
    s.columns.push_back(std::move(c));
  }
  if (s.label < 0) top.fail("no column has type label");

  if (doc.contains("crosses")) {
    const auto& crosses = doc["crosses"];
    if (!crosses.is_array()) top.fail("\"crosses\" must be a list");
    for (std::size_t i = 0; i < crosses.size(); ++i) {
      const auto& o = crosses[i];
      blame b{path, "cross " + std::to_string(i + 1)};
      if (!o.is_object()) b.fail("must be an object with \"name\" and \"columns\"");
      b.only(o, {"name", "columns", "table"});
      feature_cross x;
      x.name = b.text(o, "name", "");
      if (x.name.empty()) b.fail("'name' is missing or empty");
      b.where += " (" + x.name + ")";
      if (!names.insert(x.name).second) b.fail("the name '" + x.name + "' is taken");
      if (!o.contains("columns") || !o["columns"].is_array() || o["columns"].size() != 2)
        b.fail("'columns' must name two categorical columns");
      int picked[2] = {-1, -1};
      for (int k = 0; k < 2; ++k) {
        const auto& name = o["columns"][static_cast<std::size_t>(k)];
        if (!name.is_string()) b.fail("'columns' must name two categorical columns");
        for (std::size_t c = 0; c < s.columns.size(); ++c)
          if (s.columns[c].name == name.get<std::string>()) picked[k] = static_cast<int>(c);
        if (picked[k] < 0) b.fail("no column is named '" + name.get<std::string>() + "'");
        if (s.columns[static_cast<std::size_t>(picked[k])].what
            != feature_column::kind::categorical)
          b.fail("column '" + name.get<std::string>() + "' is not categorical (a cross takes "
                 "single-valued categorical columns)");
      }
      if (picked[0] == picked[1]) b.fail("a cross of a column with itself");
      x.first = picked[0];
      x.second = picked[1];
      x.table_name = b.text(o, "table", x.name);
      x.table = table_of(b, x.table_name, tables);
      x.slot = s.fields++;
      s.field_names.push_back(x.name);
      s.field_tables.push_back(x.table);
      s.field_pooling.push_back(pooling::sum);
      s.crosses.push_back(std::move(x));
    }
  }
  if (s.dense_width == 0 && s.fields == 0)
    top.fail("no feature: no column is numeric, categorical or multi_hot");
  return s;
}

} // namespace

feature_schema load_feature_schema(const std::string& path) {
  return parse_schema(read_json(path), path);
}

feature_schema parse_feature_schema(const std::string& json_text, const std::string& origin) {
  return parse_schema(parse_json(origin, json_text, false), origin);
}

std::string self_contained_schema(const std::string& path) {
  json doc = read_json(path);
  load_feature_schema(path);  // checked as training read it, vocabulary files included
  const std::string dir = std::filesystem::path(path).parent_path().string();
  for (auto& column : doc["columns"]) {
    if (!column.contains("vocabulary") || !column["vocabulary"].is_string()) continue;
    json values = json::array();
    line_reader lines(vocabulary_file(dir, column["vocabulary"].get<std::string>()));
    std::string_view line;
    while (lines.next(line))
      if (!line.empty()) values.push_back(std::string(line));
    column["vocabulary"] = std::move(values);
  }
  return doc.dump();
}

} // namespace actorps
