// mlp::predict, the inference path of an exported model: the softmax of the MLP's logits,
// against an independent double-precision forward pass.
#include "kernels/mlp.hpp"
#include "kernels/parameter_init.hpp"

#include "tests/backend_test_support.hpp"
#include "tests/mlp_reference.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace actorps {
namespace {

using namespace actorps::test;

struct predict_problem {
  std::vector<int> layers{7, 5, 4, 3};
  std::vector<float> params;
  std::vector<float> x;
  int n = 10;
};

predict_problem make_predict_problem() {
  predict_problem pr;
  std::mt19937 rng(11);
  pr.params = initial_parameters(pr.layers, 11);
  for (float& v : pr.params) {
    if (v == 0.0f) v = std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng);  // the biases
  }
  pr.x = random_floats(rng, static_cast<std::size_t>(pr.n) * pr.layers[0], -2, 2);
  return pr;
}

/// The reference probabilities of every row, flattened (n × classes).
std::vector<double> reference_probabilities(const predict_problem& pr) {
  const std::vector<double> p(pr.params.begin(), pr.params.end());
  std::vector<double> probs;
  for (int r = 0; r < pr.n; ++r) {
    const auto logits = reference_logits(pr.layers, p, pr.x.data() + r * pr.layers[0],
                                         [](double) {});
    const double lse = reference_log_sum_exp(logits);
    for (double z : logits) probs.push_back(std::exp(z - lse));
  }
  return probs;
}

} // namespace

TEST_CASE("mlp predict gives the softmax of a double-precision forward pass, in any chunking") {
  const auto pr = make_predict_problem();
  const auto ref = reference_probabilities(pr);
  auto be = make_cpu_backend();
  for (int max_batch : {10, 3, 1}) {  // 10 rows in one chunk, in 3-3-3-1, one by one
    CAPTURE(max_batch);
    mlp net(*be, pr.layers, max_batch);
    net.set_parameters(pr.params.data());
    std::vector<float> probs(ref.size(), -1.0f);
    net.predict(pr.x.data(), pr.n, probs.data());
    check_close(probs, ref, 1e-6, 1e-5, "probabilities");
    for (int r = 0; r < pr.n; ++r) {
      double sum = 0;
      for (int c = 0; c < 3; ++c) sum += probs[r * 3 + c];
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
    }
  }
}

TEST_CASE("mlp predict's argmax is the class evaluate counts as correct") {
  const auto pr = make_predict_problem();
  auto be = make_cpu_backend();
  mlp net(*be, pr.layers, 4);
  net.set_parameters(pr.params.data());
  std::vector<float> probs(static_cast<std::size_t>(pr.n) * 3);
  net.predict(pr.x.data(), pr.n, probs.data());
  std::vector<int32_t> argmax(pr.n);
  for (int r = 0; r < pr.n; ++r) {
    for (int c = 1; c < 3; ++c)
      if (probs[r * 3 + c] > probs[r * 3 + argmax[r]]) argmax[r] = c;
  }
  CHECK(net.evaluate(pr.x.data(), argmax.data(), pr.n).correct == pr.n);
  std::vector<int32_t> wrong(argmax);
  for (auto& y : wrong) y = (y + 1) % 3;
  CHECK(net.evaluate(pr.x.data(), wrong.data(), pr.n).correct == 0);
}

TEST_CASE("mlp predict on no rows writes nothing and refuses a negative count") {
  const auto pr = make_predict_problem();
  auto be = make_cpu_backend();
  mlp net(*be, pr.layers, 4);
  net.set_parameters(pr.params.data());
  float untouched = 42.0f;
  net.predict(pr.x.data(), 0, &untouched);
  CHECK(untouched == 42.0f);
  CHECK_THROWS_AS(net.predict(pr.x.data(), -1, &untouched), std::invalid_argument);
}

} // namespace actorps
