#include "apps/gen_data_command.hpp"

#include "actors/ps/json.hpp"
#include "apps/command_line.hpp"
#include "apps/gen_data/planted_criteo.hpp"
#include "apps/gen_data/planted_ctr_log.hpp"
#include "apps/gen_data/planted_libsvm.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace po = boost::program_options;

namespace actorps {

namespace {

const std::string libsvm_usage =
  "usage: actorps gen-data libsvm --out DIR [--rows N] [--test-rows M] [--features F] "
  "[--nnz K] [--seed S] [--gzip]\n"
  "\nA sparse binary problem with a planted logistic model: rows of K hashed features "
  "(value 1) whose\nlabels are drawn from sigmoid(w·x + b). Writes DIR/train.libsvm and "
  "DIR/test.libsvm and prints one\nJSON line: what was written, the distinct features the "
  "training rows touch, the positive rate, and\nthe planted model's own test AUC and log "
  "loss (the best a model can reach).\n\n";

const std::string criteo_usage =
  "usage: actorps gen-data criteo --out DIR [--rows N] [--test-rows M] [--seed S] [--gzip]\n"
  "                               [--days D --drift F]\n"
  "\nA click-through problem in Criteo's display-ads format (label, I1-I13, C1-C26, TAB "
  "separated):\nZipf-distributed categorical values with per-value effects, 8 pairs of fields "
  "with rank-4\ninteractions, heavy-tailed integers, a 25 % click rate. Writes DIR/train.tsv "
  "and DIR/test.tsv and\nprints one JSON line: what was written, each field's vocabulary and "
  "distinct training values, the\npositive rate, and the planted model's own test AUC and log "
  "loss (the best a model can reach),\nand the AUC of its logit without the interactions "
  "(linear_part_test_auc).\nWith --days D: DIR/train/day-1.tsv .. day-D.tsv of N rows each, a share F of each field's\n"
  "values replaced by new ones from day to day, and the next day as DIR/test.tsv.\n\n";

const std::string ctr_log_usage =
  "usage: actorps gen-data ctr-log --out DIR [--rows N] [--test-rows M] [--seed S]\n"
  "\nA click log of one's own: label, weight, numeric (standardised, log1p, bucketized), "
  "categorical and\nmulti-hot (bags of 0 to 8 values, mean- and sum-pooled) columns, from a "
  "planted model. Writes\nDIR/train.tsv, DIR/test.tsv and DIR/schema.json (train with "
  "--dataset tsv:DIR/train.tsv --test\nDIR/test.tsv --schema DIR/schema.json) and prints one "
  "JSON line: what was written, the positive\nrate, and the planted model's own test AUC, GAUC "
  "per user and log loss (the best a model can reach).\n\n";

po::options_description libsvm_options(std::string& out, planted_libsvm_spec& s) {
  po::options_description desc("actorps gen-data libsvm flags");
  desc.add_options()
    ("help,h", "print this help")
    ("out", po::value(&out), "write DIR/train.libsvm and DIR/test.libsvm (required)")
    ("rows", po::value(&s.rows)->default_value(s.rows), "training rows")
    ("test-rows", po::value(&s.test_rows)->default_value(s.test_rows), "test rows")
    ("features", po::value(&s.features)->default_value(s.features),
     "feature indices 1..F, popularity Zipf-like (exponent 1.1)")
    ("nnz", po::value(&s.nnz)->default_value(s.nnz), "distinct active features per row")
    ("seed", po::value(&s.seed)->default_value(s.seed), "same seed and flags, same bytes")
    ("gzip", po::bool_switch(&s.gzip), "write train.libsvm.gz and test.libsvm.gz instead");
  return desc;
}

po::options_description criteo_options(std::string& out, planted_criteo_spec& s) {
  po::options_description desc("actorps gen-data criteo flags");
  desc.add_options()
    ("help,h", "print this help")
    ("out", po::value(&out), "write DIR/train.tsv and DIR/test.tsv (required)")
    ("rows", po::value(&s.rows)->default_value(s.rows), "training rows")
    ("test-rows", po::value(&s.test_rows)->default_value(s.test_rows), "test rows")
    ("seed", po::value(&s.seed)->default_value(s.seed), "same seed and flags, same bytes")
    ("gzip", po::bool_switch(&s.gzip), "write train.tsv.gz and test.tsv.gz instead")
    ("days", po::value(&s.days)->default_value(s.days),
     "write a stream of D daily files of --rows rows into DIR/train/, the next day as the test "
     "file")
    ("drift", po::value(&s.drift)->default_value(s.drift),
     "with --days: the share of each field's values that retire each day, as many new ones "
     "arriving");
  return desc;
}

po::options_description ctr_log_options(std::string& out, planted_ctr_log_spec& s) {
  po::options_description desc("actorps gen-data ctr-log flags");
  desc.add_options()
    ("help,h", "print this help")
    ("out", po::value(&out), "write DIR/train.tsv, DIR/test.tsv and DIR/schema.json (required)")
    ("rows", po::value(&s.rows)->default_value(s.rows), "training rows")
    ("test-rows", po::value(&s.test_rows)->default_value(s.test_rows), "test rows")
    ("seed", po::value(&s.seed)->default_value(s.seed), "same seed and flags, same bytes");
  return desc;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int write_libsvm(const std::string& out, const planted_libsvm_spec& spec) {
  const auto t0 = std::chrono::steady_clock::now();
  const planted_libsvm_summary done = write_planted_libsvm(spec, out);
  std::printf("%s\n", json_object()
                          .add("train", done.train_path)
                          .add("test", done.test_path)
                          .add("rows", spec.rows)
                          .add("test_rows", spec.test_rows)
                          .add("features", spec.features)
                          .add("nnz", spec.nnz)
                          .add("seed", spec.seed)
                          .add("distinct_train_features", done.distinct_train_features)
                          .add("positive_rate", done.positive_rate)
                          .add("test_positive_rate", done.test_positive_rate)
                          .add("best_test_auc", done.best_test_auc)
                          .add("best_test_logloss", done.best_test_logloss)
                          .add("wall_s", seconds_since(t0))
                          .str()
                          .c_str());
  return 0;
}

int write_criteo(const std::string& out, const planted_criteo_spec& spec) {
  const auto t0 = std::chrono::steady_clock::now();
  const planted_criteo_summary done = write_planted_criteo(spec, out);
  std::vector<std::string> pairs;  // "C3*C17": the fields as the format names them
  for (const auto& [f, g] : done.interaction_pairs)
    pairs.push_back("C" + std::to_string(f + 1) + "*C" + std::to_string(g + 1));
  auto summary = json_object()
                   .add("train", done.train_path)
                   .add("test", done.test_path)
                   .add("rows", spec.rows)
                   .add("test_rows", spec.test_rows)
                   .add("seed", spec.seed);
  if (spec.days > 0)
    summary.add("days", spec.days)
      .add("drift", spec.drift)
      .add("day_files", done.day_paths)
      .add("values_per_day", done.values_per_day)
      .add("values_all_days", done.values_all_days);
  summary.add("vocabulary", done.vocabulary)
    .add("distinct_train_values", done.distinct_train_values)
    .add("interaction_pairs", pairs)
    .add("positive_rate", done.positive_rate)
    .add("test_positive_rate", done.test_positive_rate)
    .add("best_test_auc", done.best_test_auc)
    .add("best_test_logloss", done.best_test_logloss)
    .add("linear_part_test_auc", done.linear_part_test_auc)
    .add("wall_s", seconds_since(t0));
  std::printf("%s\n", summary.str().c_str());
  return 0;
}

int write_ctr_log(const std::string& out, const planted_ctr_log_spec& spec) {
  const auto t0 = std::chrono::steady_clock::now();
  const planted_ctr_log_summary done = write_planted_ctr_log(spec, out);
  std::printf("%s\n", json_object()
                          .add("train", done.train_path)
                          .add("test", done.test_path)
                          .add("schema", done.schema_path)
                          .add("rows", spec.rows)
                          .add("test_rows", spec.test_rows)
                          .add("seed", spec.seed)
                          .add("positive_rate", done.positive_rate)
                          .add("test_positive_rate", done.test_positive_rate)
                          .add("best_test_auc", done.best_test_auc)
                          .add("best_test_gauc", done.best_test_gauc)
                          .add("best_test_logloss", done.best_test_logloss)
                          .add("wall_s", seconds_since(t0))
                          .str()
                          .c_str());
  return 0;
}

} // namespace

int gen_data_command(const std::vector<std::string>& args) {
  const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
  if (args.empty()
      || (args[0] != "libsvm" && args[0] != "criteo" && args[0] != "ctr-log" && !help)) {
    if (args.empty())
      std::fprintf(stderr, "actorps gen-data: which format? (known: libsvm, criteo, ctr-log)\n");
    else
      std::fprintf(stderr,
                   "actorps gen-data: unknown format '%s' (known: libsvm, criteo, ctr-log)\n",
                   args[0].c_str());
    std::fputs((libsvm_usage + criteo_usage + ctr_log_usage).c_str(), stderr);
    return 2;
  }
  const std::vector<std::string> flags(args.begin() + !help, args.end());
  std::string out;
  const auto require_out = [&] {
    if (out.empty()) throw std::invalid_argument("--out DIR is required");
  };
  if (args[0] == "ctr-log") {
    planted_ctr_log_spec spec;
    return run_command_line("gen-data", flags, ctr_log_options(out, spec), ctr_log_usage, [&] {
      require_out();
      return write_ctr_log(out, spec);
    });
  }
  if (args[0] == "criteo") {
    planted_criteo_spec spec;
    return run_command_line("gen-data", flags, criteo_options(out, spec), criteo_usage, [&] {
      require_out();
      return write_criteo(out, spec);
    });
  }
  planted_libsvm_spec spec;  // libsvm, or plain --help: libsvm's flags after both usages
  return run_command_line("gen-data", flags, libsvm_options(out, spec),
                          help ? libsvm_usage + criteo_usage + ctr_log_usage : libsvm_usage,
                          [&] {
    require_out();
    return write_libsvm(out, spec);
  });
}

} // namespace actorps
