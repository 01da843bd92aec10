// Serving from the front door (actors/ps/serving.hpp): a model trained and exported through
// train(), loaded by export_model, scores on its test split the figures metadata.json records
// and gives class probabilities summing to one per row; a missing export is refused naming it,
// a chain of one full version has nothing to fold.
#include "actors/ps/serving.hpp"

#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <numeric>
#include <stdexcept>

namespace actorps {
namespace {

using json = nlohmann::json;

TEST_CASE("export_model: a model exported by train(), served from the front door") {
  test::scratch_dir dir{"actorps_serving"};
  train_options o;
  o.model = "mlp:784-16-10";
  o.source.what = data_source::kind::synthetic;
  o.source.train_rows = 1024;
  o.source.test_rows = 256;
  o.steps = 10;
  o.threads = 2;
  o.export_dir = dir.path + "/exports";
  auto summary = train(o);
  REQUIRE_MESSAGE(summary, to_string(summary.error()));

  const export_model model(o.export_dir);  // the directory: its newest version, 1
  CHECK_FALSE(model.ctr());
  CHECK(model.name().empty());
  CHECK(model.input_width() == 784);
  CHECK(model.parameters() == std::size_t(784 * 16 + 16 + 16 * 10 + 10));
  std::ifstream in(o.export_dir + "/1/metadata.json");
  const auto meta = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  const auto scores = model.evaluate(o.source);
  CHECK(scores.rows == 256);
  CHECK(scores.classes == 10);
  CHECK(scores.auc == -1);
  CHECK(scores.accuracy == doctest::Approx(meta["test_accuracy"].get<double>()));
  CHECK(scores.loss == doctest::Approx(meta["test_loss"].get<double>()));
  CHECK(std::accumulate(scores.confusion.begin(), scores.confusion.end(), int64_t(0)) == 256);

  const std::vector<float> zero(784 * 3, 0.0f);
  const auto p = model.predict(zero.data(), 3);
  REQUIRE(p.size() == 30);
  for (int r = 0; r < 3; ++r)
    CHECK(std::accumulate(p.begin() + r * 10, p.begin() + r * 10 + 10, 0.0) ==
          doctest::Approx(1.0).epsilon(1e-5));

  const auto missing = dir.path + "/none";
  CHECK_THROWS_WITH_AS(export_model{missing}, doctest::Contains(missing.c_str()),
                       std::runtime_error);
  CHECK_THROWS_AS(consolidate_export(o.export_dir, dir.path + "/folded"), std::invalid_argument);
}

} // namespace
} // namespace actorps
