// Real data through the real binary: the README's default run and a 4-worker sync run train
// Fashion-MNIST past the accuracy the product promises. Sync mode is deterministic (the shards
// sum gradients in worker order), so its figure does not vary between runs or machines.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <regex>
#include <string>
#include <sys/wait.h>

namespace {

/// Runs actorps with `args` and returns the summary's final test accuracy (-1 on failure).
double final_accuracy(const std::string& args) {
  auto cmd = std::string("timeout 300 ") + ACTORPS_BINARY + " " + args + " --no-progress 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;) out.append(buf.data(), n);
  int status = pclose(pipe);
  MESSAGE(out);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("final test accuracy ([0-9.]+)")));
  return std::stod(m[1]);
}

} // namespace

TEST_CASE("the default run (2 shards, 2 workers, ssp, 5 epochs) reaches 0.85 on Fashion-MNIST") {
  CHECK(final_accuracy("simulate") >= 0.85);
}

TEST_CASE("sync with 4 workers and 2 shards reaches 0.84 on Fashion-MNIST in 3 epochs") {
  CHECK(final_accuracy("simulate --mode sync --workers 4 --ps 2 --epochs 3") >= 0.84);
}
