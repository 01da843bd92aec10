// The `actorps` binary as a user meets it: bad flags name themselves, bad data names the file,
// --help documents every flag, and --metrics writes the JSONL contract.
#include "tests/command_runner.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using actorps::test::run_actorps;

std::string temp_dir() {
  char tmpl[] = "/tmp/actorps-cli-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool has_number(const std::string& line, const std::string& key) {
  return std::regex_search(line, std::regex("\"" + key + "\":-?[0-9][0-9.eE+-]*"));
}

double number(const std::string& line, const std::string& key) {
  std::smatch m;
  REQUIRE(std::regex_search(line, m, std::regex("\"" + key + "\":(-?[0-9][0-9.eE+-]*)")));
  return std::stod(m[1]);
}

const char* quick = "simulate --dataset synthetic --model 784-32-10 --steps 40 --eval-every 10 "
                    "--synthetic-rows 2048 --synthetic-test-rows 512 --no-progress";

} // namespace

TEST_CASE("bad flags exit with status 2 and name the flag") {
  struct bad_flag {
    const char* args;
    const char* named;
  };
  for (auto c : {bad_flag{"simulate --bogus 1", "--bogus"},
                 bad_flag{"simulate --workers 0", "--workers"},
                 bad_flag{"simulate --ps 0", "--ps"},
                 bad_flag{"simulate --model 784-x-10", "--model"},
                 bad_flag{"simulate --model 784-10-", "--model"},
                 bad_flag{"simulate --mode bsp", "--mode"},
                 bad_flag{"simulate --optimizer rmsprop", "--optimizer"},
                 bad_flag{"simulate --staleness -1", "--staleness"},
                 bad_flag{"simulate --workers two", "--workers"},
                 bad_flag{"simulate --data-dir /nonexistent/fashion", "--data-dir"},
                 bad_flag{"simulate --dataset imagenet", "--dataset"},
                 bad_flag{"simulate --dataset synthetic --slow worker:5=10", "--slow"},
                 bad_flag{"simulate --dataset synthetic --slow straggler", "--slow"},
                 bad_flag{"simulate --metrics /nonexistent/dir/run.jsonl --dataset synthetic", "--metrics"},
                 bad_flag{"simulate --model 100-10", "--model"},
                 bad_flag{"frobnicate", "frobnicate"}}) {
    CAPTURE(c.args);
    auto r = run_actorps(c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find(c.named) != std::string::npos, r.output);
  }
}

TEST_CASE("an explicit --staleness outside ssp is refused (simulate, chief), the default is not") {
  auto dir = temp_dir();
  auto cluster = dir + "/cluster.json";
  std::ofstream(cluster) << R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"],
                               "worker": ["127.0.0.1:3"]}})";
  struct refused {
    std::string args;
    std::string says;
  };
  for (const auto& c : std::vector<refused>{
         {"simulate --mode sync --staleness 5",
          "--staleness 5 has no effect with --mode sync: the bound only applies to --mode ssp"},
         {"simulate --mode async --staleness 0",
          "--staleness 0 has no effect with --mode async: the bound only applies to --mode ssp"},
         {"chief --insecure --cluster " + cluster + " --task chief:0 --mode sync --staleness 2",
          "--staleness 2 has no effect with --mode sync"},
         {"chief --insecure --cluster " + cluster + " --task chief:0 --mode async --staleness 3",
          "--staleness 3 has no effect with --mode async"}}) {
    CAPTURE(c.args);
    auto r = run_actorps(c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find(c.says) != std::string::npos, r.output);
  }
  // The default bound goes with every mode (async: the --metrics test below), a typed one with ssp.
  auto sync = run_actorps(std::string(quick) + " --mode sync");
  CHECK_MESSAGE(sync.status == 0, sync.output);
  CHECK(sync.output.find("summary: mode sync") != std::string::npos);
  auto ssp = run_actorps(std::string(quick) + " --mode ssp --staleness 5");
  CHECK_MESSAGE(ssp.status == 0, ssp.output);
  CHECK(ssp.output.find("summary: mode ssp (staleness bound 5)") != std::string::npos);
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("a malformed dataset file is named with what is wrong") {
  auto dir = temp_dir();
  {
    std::ofstream images(dir + "/train-images-idx3-ubyte", std::ios::binary);
    const unsigned char header[] = {0, 0, 8, 1, 0, 0, 0, 1, 0, 0, 0, 28, 0, 0, 0, 28};
    images.write(reinterpret_cast<const char*>(header), sizeof header);
  }
  auto r = run_actorps("simulate --data-dir " + dir);
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find(dir + "/train-images-idx3-ubyte") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("magic") != std::string::npos, r.output);
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("--backend cuda without a GPU is refused in one sentence and auto falls back") {
  auto cuda = run_actorps(std::string(quick) + " --backend cuda");
  if (cuda.status == 0) {  // a machine with a usable GPU
    CHECK(cuda.output.find("backend cuda") != std::string::npos);
  } else {
    CHECK(cuda.status == 2);
    CHECK_MESSAGE(cuda.output.find("--backend cuda needs a usable CUDA device") != std::string::npos,
                  cuda.output);
    CHECK(cuda.output.find("Segmentation") == std::string::npos);
    auto fallback = run_actorps(std::string(quick) + " --backend auto");
    CHECK(fallback.status == 0);
    CHECK_MESSAGE(fallback.output.find("backend: auto chose cpu (") != std::string::npos,
                  fallback.output);
    CHECK(fallback.output.find("backend cpu") != std::string::npos);
  }
  auto bad = run_actorps(std::string(quick) + " --gpus 0,x");
  CHECK(bad.status == 2);
  CHECK(bad.output.find("--gpus") != std::string::npos);
}

TEST_CASE("help explains every flag with its default") {
  auto r = run_actorps("simulate --help");
  CHECK(r.status == 0);
  for (const char* flag : {"--ps", "--workers", "--model", "--dataset", "--data-dir", "--epochs",
                           "--steps", "--batch", "--optimizer", "--lr", "--lr-schedule", "--mode",
                           "--staleness", "--eval-every", "--metrics", "--seed", "--threads",
                           "--slow", "--request-timeout", "--backend", "--gpus"}) {
    CAPTURE(flag);
    CHECK(r.output.find(flag) != std::string::npos);
  }
  CHECK(r.output.find("--workers arg (=2)") != std::string::npos);
  CHECK(r.output.find("--mode arg (=ssp)") != std::string::npos);
  auto top = run_actorps("--help");
  CHECK(top.status == 0);
  CHECK(top.output.find("simulate") != std::string::npos);
}

TEST_CASE("--metrics writes train, eval and summary events, and the process exits 0") {
  auto dir = temp_dir();
  auto path = dir + "/run.jsonl";
  auto r = run_actorps(std::string(quick) + " --mode async --workers 2 --ps 2 --metrics " + path);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(r.output.find("summary: mode async") != std::string::npos);
  auto lines = read_lines(path);
  int train = 0, eval = 0, summary = 0;
  for (const auto& line : lines) {
    CAPTURE(line);
    REQUIRE(line.front() == '{');
    REQUIRE(line.back() == '}');
    if (line.find("\"event\":\"train\"") != std::string::npos) {
      ++train;
      CHECK(has_number(line, "worker"));
      CHECK(has_number(line, "clock"));
      CHECK(has_number(line, "loss"));
    } else if (line.find("\"event\":\"eval\"") != std::string::npos) {
      ++eval;
      for (const char* key : {"clock", "test_accuracy", "test_loss", "wall_s"}) CHECK(has_number(line, key));
    } else if (line.find("\"event\":\"summary\"") != std::string::npos) {
      ++summary;
      for (const char* key : {"final_test_accuracy", "samples_per_s", "max_staleness",
                              "staleness_bound", "clocks", "wall_s", "dropped_messages"})
        CHECK(has_number(line, key));
      CHECK(line.find("\"mode\":\"async\"") != std::string::npos);
      CHECK(number(line, "staleness_bound") == -1);
      CHECK(number(line, "clocks") == 40);
      CHECK(number(line, "dropped_messages") == 0);
      CHECK(number(line, "final_test_accuracy") > 0.5);
    }
  }
  CHECK(train == 2 * 40);
  CHECK(eval >= 2);
  CHECK(summary == 1);
  CHECK(lines.back().find("\"event\":\"summary\"") != std::string::npos);
  std::system(("rm -rf " + dir).c_str());
}
