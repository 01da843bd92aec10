// `actorps gen-data criteo` rows written into a test's directory, and the flags or the
// train() options that read them.
#pragma once

#include "actors/ps.hpp"
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

/// The same rows read by train(): `lr` in batches of 64 on DIR/train.tsv, tested on
/// DIR/test.tsv.
inline train_options lr_on_generated_criteo(const std::string& dir, int rows, int test_rows) {
  generated_criteo(dir, rows, test_rows);
  train_options o;
  o.model = "lr";
  o.source.what = data_source::kind::criteo;
  o.source.train_path = dir + "/train.tsv";
  o.source.test_path = dir + "/test.tsv";
  o.batch = 64;
  return o;
}

} // namespace actorps::test
