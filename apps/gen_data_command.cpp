#include "apps/gen_data_command.hpp"

#include "actors/chief/metrics.hpp"
#include "apps/command_line.hpp"
#include "apps/gen_data/planted_libsvm.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace po = boost::program_options;

namespace actorps {

namespace {

struct gen_data_flags {
  std::string out;
  planted_libsvm_spec spec;
};

po::options_description gen_data_options(gen_data_flags& f) {
  po::options_description desc("actorps gen-data libsvm flags");
  auto& s = f.spec;
  desc.add_options()
    ("help,h", "print this help")
    ("out", po::value(&f.out), "write DIR/train.libsvm and DIR/test.libsvm (required)")
    ("rows", po::value(&s.rows)->default_value(s.rows), "training rows")
    ("test-rows", po::value(&s.test_rows)->default_value(s.test_rows), "test rows")
    ("features", po::value(&s.features)->default_value(s.features),
     "feature indices 1..F, popularity Zipf-like (exponent 1.1)")
    ("nnz", po::value(&s.nnz)->default_value(s.nnz), "distinct active features per row")
    ("seed", po::value(&s.seed)->default_value(s.seed), "same seed and flags, same bytes")
    ("gzip", po::bool_switch(&s.gzip), "write train.libsvm.gz and test.libsvm.gz instead");
  return desc;
}

int write_libsvm(const gen_data_flags& f) {
  const auto t0 = std::chrono::steady_clock::now();
  const planted_libsvm_summary done = write_planted_libsvm(f.spec, f.out);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  std::printf("%s\n", json_object()
                          .add("train", done.train_path)
                          .add("test", done.test_path)
                          .add("rows", f.spec.rows)
                          .add("test_rows", f.spec.test_rows)
                          .add("features", f.spec.features)
                          .add("nnz", f.spec.nnz)
                          .add("seed", f.spec.seed)
                          .add("distinct_train_features", done.distinct_train_features)
                          .add("positive_rate", done.positive_rate)
                          .add("test_positive_rate", done.test_positive_rate)
                          .add("best_test_auc", done.best_test_auc)
                          .add("best_test_logloss", done.best_test_logloss)
                          .add("wall_s", took.count())
                          .str()
                          .c_str());
  return 0;
}

} // namespace

int gen_data_command(const std::vector<std::string>& args) {
  gen_data_flags f;
  const std::string usage =
    "usage: actorps gen-data libsvm --out DIR [--rows N] [--test-rows M] [--features F] "
    "[--nnz K] [--seed S] [--gzip]\n"
    "\nA sparse binary problem with a planted logistic model: rows of K hashed features "
    "(value 1) whose\nlabels are drawn from sigmoid(w·x + b). Writes DIR/train.libsvm and "
    "DIR/test.libsvm and prints one\nJSON line: what was written, the distinct features the "
    "training rows touch, the positive rate, and\nthe planted model's own test AUC and log "
    "loss (the best a model can reach).\n\n";
  if (args.empty() || (args[0] != "libsvm" && args[0] != "--help" && args[0] != "-h")) {
    if (args.empty()) std::fprintf(stderr, "actorps gen-data: which format? (known: libsvm)\n");
    else std::fprintf(stderr, "actorps gen-data: unknown format '%s' (known: libsvm)\n",
                      args[0].c_str());
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  const std::vector<std::string> flags(args.begin() + (args[0] == "libsvm"), args.end());
  return run_command_line("gen-data", flags, gen_data_options(f), usage, [&] {
    if (f.out.empty()) throw std::invalid_argument("--out DIR is required");
    return write_libsvm(f);
  });
}

} // namespace actorps
