// `actorps gen-data criteo` rows written into a test's directory, and the flags that read them.
#pragma once

#include "tests/command_runner.hpp"

#include <doctest/doctest.h>

#include <string>

namespace actorps::test {

/// Writes `rows` training and `test_rows` test lines into `dir` and returns the flags that
/// read them: "--dataset criteo:DIR/train.tsv --test DIR/test.tsv".
inline std::string generated_criteo(const std::string& dir, int rows, int test_rows) {
  const auto gen = run_actorps("gen-data criteo --out " + dir + " --rows "
                               + std::to_string(rows) + " --test-rows "
                               + std::to_string(test_rows));
  REQUIRE_MESSAGE(gen.status == 0, gen.output);
  return "--dataset criteo:" + dir + "/train.tsv --test " + dir + "/test.tsv";
}

} // namespace actorps::test
