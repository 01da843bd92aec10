// `actorps simulate --model lr` on a generated Criteo-format set (20 000 training lines, 3 000
// test lines, seed 5), evaluated every 40 clocks, with its metrics file and export directory:
// the run the CTR metrics tests read their figures from, given their own metric flags.
#pragma once

#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <string>

namespace actorps::test {

struct generated_ctr_run {
  std::string train, test, metrics, exports;
  std::string output;  ///< what the run printed
};

inline generated_ctr_run run_lr_on_generated_criteo(const scratch_dir& dir,
                                                    const std::string& flags) {
  const auto gen = run_actorps("gen-data criteo --out " + dir.path
                               + " --rows 20000 --test-rows 3000 --seed 5");
  REQUIRE_MESSAGE(gen.status == 0, gen.output);
  generated_ctr_run run{dir.path + "/train.tsv", dir.path + "/test.tsv", dir.path + "/m.jsonl",
                        dir.path + "/export", ""};
  const auto r = run_actorps("simulate --model lr --dataset criteo:" + run.train
                             + " --test " + run.test + " --batch 128 --eval-every 40 " + flags
                             + " --metrics " + run.metrics + " --export-dir " + run.exports);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  run.output = r.output;
  return run;
}

} // namespace actorps::test
