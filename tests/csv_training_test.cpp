// Own data through the command line: a CSV the user wrote trains an MLP of any width, and
// --epochs counts the rows really in the file.
#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <regex>

using actorps::test::run_actorps;

namespace {

/// rows × (label, 20 features): three Gaussian classes around well-separated centres.
void write_three_classes(const std::string& path, int rows, unsigned seed, bool header) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::ofstream out(path);
  if (header) {
    out << "label";
    for (int j = 0; j < 20; ++j) out << ",f" << j;
    out << "\n";
  }
  for (int r = 0; r < rows; ++r) {
    int label = r % 3;
    out << label;
    for (int j = 0; j < 20; ++j) out << "," << (j % 3 == label ? 2.5f : 0.0f) + noise(rng);
    out << "\n";
  }
}

double field(const std::string& text, const std::string& name) {
  std::smatch m;
  std::regex re(name + " ([0-9.]+)");
  return std::regex_search(text, m, re) ? std::stod(m[1]) : -1;
}

} // namespace

TEST_CASE("a 3000-row CSV trains mlp:20-32-3, and --epochs 1 is exactly one pass over its rows") {
  actorps::test::scratch_dir dir("actorps_csv_run");
  auto train = dir.path + "/train.csv", test = dir.path + "/test.csv";
  write_three_classes(train, 3000, 1, true);
  write_three_classes(test, 600, 2, false);
  auto r = run_actorps("simulate --dataset csv:" + train + " --test " + test
                       + " --model mlp:20-32-3 --epochs 1 --workers 2 --ps 2 --batch 50"
                         " --no-progress");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("3000 samples") != std::string::npos);  // 2 workers x 30 clocks x 50
  CHECK(r.output.find(" 30 clocks") != std::string::npos);
  CHECK(field(r.output, "final test accuracy") >= 0.9);
}

TEST_CASE("a CSV that does not fit the model, or lacks --test, is refused naming why") {
  actorps::test::scratch_dir dir("actorps_csv_bad");
  auto train = dir.path + "/train.csv";
  write_three_classes(train, 300, 1, false);
  auto wide = run_actorps("simulate --dataset csv:" + train + " --test " + train
                          + " --model mlp:21-8-3 --no-progress");
  CHECK(wide.status == 2);
  CHECK(wide.output.find("takes 21 inputs but the data has 20 features") != std::string::npos);
  auto no_test = run_actorps("simulate --dataset csv:" + train + " --model mlp:20-8-3");
  CHECK(no_test.status == 2);
  CHECK(no_test.output.find("needs --test") != std::string::npos);
  // The pass that counts rows and classes reads labels: a bad one is refused before the run.
  std::ofstream(dir.path + "/label.csv") << "1,2,3\n0.5,1,1\n";
  auto label = run_actorps("simulate --dataset csv:" + dir.path + "/label.csv --test " + train
                           + " --model mlp:2-4-2 --batch 1 --no-progress");
  CHECK(label.status == 2);
  CHECK(label.output.find("label.csv:2:1: label '0.5' is not a non-negative integer")
        != std::string::npos);
  // A bad feature is found by the worker that streams its line: the run ends there (exit 1).
  std::ofstream(dir.path + "/bad.csv") << "1,2,3\n0,x,1\n";
  auto bad = run_actorps("simulate --dataset csv:" + dir.path + "/bad.csv --test " + train
                         + " --model mlp:2-4-2 --workers 1 --batch 1 --no-progress");
  CHECK(bad.status == 1);
  CHECK(bad.output.find("bad_data: " + dir.path + "/bad.csv:2:3: 'x' is not a number")
        != std::string::npos);
}
