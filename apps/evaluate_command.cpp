#include "apps/evaluate_command.hpp"

#include "actors/ps/json.hpp"
#include "actors/ps/serving.hpp"
#include "apps/command_line.hpp"
#include "apps/test_split_flags.hpp"
#include "apps/value_bound_flags.hpp"

#include <cstdio>
#include <stdexcept>

namespace po = boost::program_options;

namespace actorps {

namespace {

struct evaluate_flags {
  std::string model;
  test_split_flags data;
  bool json = false;
  float max_parameter = default_max_parameter;
};

po::options_description evaluate_options(evaluate_flags& f) {
  po::options_description desc("actorps evaluate flags");
  desc.add_options()
    ("help,h", "print this help")
    ("model", po::value(&f.model), "the export version directory, DIR/<version>");
  add_test_split_options(desc, f.data);
  desc.add_options()
    ("json", po::bool_switch(&f.json), "print one JSON object instead of the table")
    ("max-parameter", po::value(&f.max_parameter)->default_value(f.max_parameter),
     max_parameter_help);
  return desc;
}

/// Rows of the true classes, columns of the predicted ones.
int64_t confusion_at(const export_scores& m, int truth, int predicted) {
  return m.confusion[static_cast<std::size_t>(truth) * m.classes + predicted];
}

std::string metrics_json(const evaluate_flags& f, const export_scores& m) {
  auto rows = nlohmann::ordered_json::array();
  for (int t = 0; t < m.classes; ++t) {
    auto& row = rows.emplace_back(nlohmann::ordered_json::array());
    for (int p = 0; p < m.classes; ++p) row.push_back(confusion_at(m, t, p));
  }
  return render_json({{"model", f.model},
                      {"dataset", f.data.dataset},
                      {"split", "test"},
                      {"rows", m.rows},
                      {"correct", m.correct},
                      {"accuracy", m.accuracy},
                      {"loss", m.loss},
                      {"confusion", std::move(rows)}});
}

void print_table(const evaluate_flags& f, const export_model& model, const export_scores& m) {
  std::printf("model %s (%zu parameters), %s test split: %lld rows\n", f.model.c_str(),
              model.parameters(), f.data.dataset.c_str(), static_cast<long long>(m.rows));
  std::printf("accuracy %.6f (%lld correct), loss %.6f\n", m.accuracy,
              static_cast<long long>(m.correct), m.loss);
  std::printf("confusion matrix (rows: true class, columns: predicted class)\n      ");
  for (int p = 0; p < m.classes; ++p) std::printf(" %6d", p);
  std::printf("\n");
  for (int t = 0; t < m.classes; ++t) {
    std::printf("  %3d ", t);
    for (int p = 0; p < m.classes; ++p)
      std::printf(" %6lld", static_cast<long long>(confusion_at(m, t, p)));
    std::printf("\n");
  }
}

std::string ctr_metrics_json(const evaluate_flags& f, const export_scores& m) {
  return render_json({{"model", f.model},
                      {"test", f.data.test_path},
                      {"rows", m.rows},
                      {"auc", m.auc},
                      {"logloss", m.loss},
                      {"accuracy", m.accuracy}});
}

/// A CTR model on its Criteo test file: AUC, logloss and accuracy at p ≥ 0.5.
int evaluate_ctr(const evaluate_flags& f, const export_model& model) {
  const auto m = model.evaluate(criteo_test_source(f.data));
  if (f.json) {
    std::printf("%s\n", ctr_metrics_json(f, m).c_str());
    return 0;
  }
  std::printf("model %s (%s), test %s: %lld rows\n", f.model.c_str(), model.name().c_str(),
              f.data.test_path.c_str(), static_cast<long long>(m.rows));
  std::printf("auc %.6f, logloss %.6f, accuracy %.6f (p >= 0.5)\n", m.auc, m.loss, m.accuracy);
  return 0;
}

} // namespace

int evaluate_command(const std::vector<std::string>& args) {
  evaluate_flags f;
  const std::string usage =
    "usage: actorps evaluate --model DIR/<version> [--dataset fashion-mnist|synthetic] [--json]\n"
    "       actorps evaluate --model DIR/<version> --test FILE [--json]   (a CTR model)\n"
    "\nThe exported model on the test split: accuracy, loss (mean -ln p(label)) and the "
    "confusion matrix,\ncomputed as the export computed metadata.json's test_accuracy and "
    "test_loss. A CTR model (lr, dlrm, wdl,\ndeepfm) on the Criteo file --test: AUC and logloss, "
    "as metadata.json's test_auc and test_logloss.\n\n";
  return run_command_line("evaluate", args, evaluate_options(f), usage, [&] {
    if (f.model.empty()) throw std::invalid_argument("--model DIR/<version> is required");
    if (auto why = invalid_bound(f.max_parameter); !why.empty())
      throw std::invalid_argument("--max-parameter " + why);
    const export_model model(f.model, f.max_parameter);
    if (model.ctr()) return evaluate_ctr(f, model);
    const auto m = model.evaluate(test_split_source(f.data, model.input_width()));
    if (f.json)
      std::printf("%s\n", metrics_json(f, m).c_str());
    else
      print_table(f, model, m);
    return 0;
  });
}

} // namespace actorps
