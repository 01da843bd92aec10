// A task started with another cluster spec than the chief's is refused at its join, naming the
// first difference, and exits 2 (usage: a restart with the same spec would be refused again);
// the chief says so at ERROR and keeps waiting for a task with the right spec.
#include "tests/command_runner.hpp"

#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <netinet/in.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace {

/// A port that was free a moment ago (bound, read, released).
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string address(int port) { return "\"127.0.0.1:" + std::to_string(port) + "\""; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("a task whose cluster spec differs from the chief's is refused at join, naming it") {
  actorps::test::scratch_dir scratch{"actorps-cluster-mismatch"};
  const std::string dir = scratch.path;
  const int chief = free_port(), ps0 = free_port(), ps1 = free_port(), worker = free_port();
  const std::string chiefs = R"({"cluster": {"chief": [)" + address(chief) + R"(], "ps": [)"
                             + address(ps0) + R"(], "worker": [)" + address(worker) + "]}}";
  const std::string workers = R"({"cluster": {"chief": [)" + address(chief) + R"(], "ps": [)"
                              + address(ps0) + "," + address(ps1) + R"(], "worker": [)"
                              + address(worker) + "]}}";
  std::ofstream(dir + "/chief.json") << chiefs;
  std::ofstream(dir + "/worker.json") << workers;
  // The chief in the background, its pid written first; it waits up to 60 s for its tasks.
  const std::string chief_cmd =
    "sh -c 'echo $$ > " + dir + "/chief.pid; exec timeout 90 " + ACTORPS_BINARY + " chief --insecure --cluster "
    + dir + "/chief.json --task chief:0 --connect-timeout 60 --dataset synthetic --steps 2 "
    + "--no-progress' > " + dir + "/chief.log 2>&1 &";
  REQUIRE(std::system(chief_cmd.c_str()) == 0);
  auto r = actorps::test::run_command(std::string(ACTORPS_BINARY) + " worker --insecure --cluster " + dir
                                        + "/worker.json --task worker:0 --connect-timeout 30",
                                      60);
  const int chief_pid = std::atoi(slurp(dir + "/chief.pid").c_str());
  if (chief_pid > 0) ::kill(chief_pid, SIGKILL);
  CHECK(r.status == 2);
  const std::string difference = "ps: this task's cluster lists 2 (127.0.0.1:" + std::to_string(ps0)
                                 + ", 127.0.0.1:" + std::to_string(ps1)
                                 + "), the chief's 1 (127.0.0.1:" + std::to_string(ps0) + ")";
  CHECK_MESSAGE(r.output.find(difference) != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find(" ERROR worker:0: the chief refused the join") != std::string::npos,
                r.output);
  auto chief_log = slurp(dir + "/chief.log");
  CHECK_MESSAGE(chief_log.find(" ERROR chief: refused worker:0's join") != std::string::npos,
                chief_log);
}
