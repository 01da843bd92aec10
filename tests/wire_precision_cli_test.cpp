// --wire-precision as a user meets it: a bad value exits 2 naming the flag (simulate, chief),
// --help documents it with its default, and a bf16 run reaches the workers: its shards count
// about half the pushed bytes of the same fp32 run.
#include "tests/command_runner.hpp"
#include "tests/metrics_events.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using actorps::test::run_actorps;

TEST_CASE("--wire-precision with a bad value exits 2 naming the flag") {
  actorps::test::scratch_dir dir;
  auto cluster = dir.path + "/cluster.json";
  std::ofstream(cluster) << R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"],
                               "worker": ["127.0.0.1:3"]}})";
  for (std::string args : {std::string("simulate --dataset synthetic --wire-precision fp16x"),
                           std::string("simulate --wire-precision BF16"),
                           "chief --insecure --cluster " + cluster + " --task chief:0 --wire-precision fp16x"}) {
    CAPTURE(args);
    auto r = run_actorps(args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find("--wire-precision") != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find("must be fp32 or bf16") != std::string::npos, r.output);
  }
  for (const char* command : {"simulate --help", "chief --help"}) {
    CAPTURE(command);
    auto help = run_actorps(command);
    CHECK(help.status == 0);
    CHECK(help.output.find("--wire-precision arg (=fp32)") != std::string::npos);
  }
}

TEST_CASE("a bf16 run pushes about half the bytes of the same fp32 run and still learns") {
  actorps::test::scratch_dir dir;
  const std::string run = "simulate --dataset synthetic --model 784-32-10 --steps 30 "
                          "--eval-every 0 --synthetic-rows 2048 --synthetic-test-rows 512 "
                          "--no-progress --mode sync";
  auto fp32_file = dir.path + "/fp32.jsonl", bf16_file = dir.path + "/bf16.jsonl";
  auto fp32 = run_actorps(run + " --metrics " + fp32_file);
  auto bf16 = run_actorps(run + " --wire-precision bf16 --metrics " + bf16_file);
  REQUIRE_MESSAGE(fp32.status == 0, fp32.output);
  REQUIRE_MESSAGE(bf16.status == 0, bf16.output);
  auto a = actorps::test::metrics_summary(fp32_file);
  auto b = actorps::test::metrics_summary(bf16_file);
  const double fp32_bytes = a["pushed_bytes"].get<double>();
  const double bf16_bytes = b["pushed_bytes"].get<double>();
  MESSAGE("pushed bytes: fp32 " << fp32_bytes << ", bf16 " << bf16_bytes);
  // 25 450 floats in blocks of 4096 on 2 shards: the values are all but a few hundred bytes
  // of each push
  CHECK(fp32_bytes > 2 * 30 * 25450 * 4.0);
  CHECK(bf16_bytes / fp32_bytes > 0.49);
  CHECK(bf16_bytes / fp32_bytes < 0.51);
  CHECK(a["gradients_refused"] == 0);
  CHECK(b["gradients_refused"] == 0);
  // the same data and seed: the rounding moves the model a little, not the accuracy much
  CHECK(b["final_test_accuracy"].get<double>() > 0.5 * a["final_test_accuracy"].get<double>());
}
