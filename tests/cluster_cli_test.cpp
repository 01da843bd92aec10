// The cluster commands refuse bad input with a message naming the problem: malformed cluster
// JSON or TF_CONFIG, unknown task types, indices outside the cluster, duplicate addresses,
// a port already in use, a chief that cannot be reached.
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

struct run_result {
  int status = -1;
  std::string output;
};

run_result run(const std::string& env_and_args) {
  auto cmd = "timeout 60 env " + env_and_args + " 2>&1";
  run_result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;) r.output.append(buf.data(), n);
  int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::string command_line(const std::string& args) { return std::string(ACTORPS_BINARY) + " " + args; }

/// A listening socket on 127.0.0.1 holding a free port for the test's lifetime.
struct held_port {
  int fd = -1;
  int port = 0;
  held_port() {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd, 1) == 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  /// Stops listening: the port stays known but is free again.
  void release() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  ~held_port() { release(); }
};

/// `text` as file `name` in a directory of its own, all of them removed when the tests end.
std::string write_file(const std::string& name, const std::string& text) {
  static actorps::test::scratch_dir files{"actorps-cluster-test"};
  static int written = 0;
  const auto dir = files.path + "/" + std::to_string(written++);
  std::filesystem::create_directory(dir);
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* good = R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"],
                      "worker": ["127.0.0.1:3", "127.0.0.1:4"]}})";

} // namespace

TEST_CASE("bad cluster specs and tasks exit 2 naming the problem") {
  auto spec = write_file("cluster.json", good);
  struct bad {
    std::string args;
    std::string named;
  };
  auto dup = write_file("dup.json", R"({"cluster": {"chief": ["127.0.0.1:5"], "ps": ["127.0.0.1:5"], "worker": ["h:6"]}})");
  auto broken = write_file("broken.json", R"({"cluster": {"chief": ["127.0.0.1:5"], )");
  auto noport = write_file("noport.json", R"({"cluster": {"chief": ["127.0.0.1"], "ps": ["a:1"], "worker": ["b:2"]}})");
  auto nochief = write_file("nochief.json", R"({"cluster": {"ps": ["a:1"], "worker": ["b:2"]}})");
  auto unknown_job = write_file("job.json", R"({"cluster": {"chief": ["a:1"], "ps": ["a:2"], "worker": ["b:2"], "gpu": ["c:3"]}})");
  for (const auto& c : std::vector<bad>{
         {command_line("worker --insecure --cluster " + spec + " --task gpu:0"), "unknown task type 'gpu'"},
         {command_line("worker --insecure --cluster " + spec + " --task worker:2"), "outside the cluster"},
         {command_line("worker --insecure --cluster " + spec + " --task worker"), "--task expects TYPE:INDEX"},
         {command_line("worker --insecure --cluster " + spec + " --task worker:0 --data-link udp"),
          "--data-link udp is none of auto, tcp, socket, shm"},
         {command_line("ps --insecure --cluster " + spec + " --task worker:0"), "the task is worker:0"},
         {command_line("ps --insecure --cluster /nonexistent/cluster.json --task ps:0"), "/nonexistent/cluster.json"},
         {command_line("ps --insecure --cluster " + broken + " --task ps:0"), broken + ": malformed JSON"},
         {command_line("ps --insecure --cluster " + dup + " --task ps:0"), "used by both chief:0 and ps:0"},
         {command_line("ps --insecure --cluster " + noport + " --task ps:0"), "is not host:port"},
         {command_line("ps --insecure --cluster " + nochief + " --task ps:0"), "exactly one chief"},
         {command_line("ps --insecure --cluster " + unknown_job + " --task ps:0"), "unknown job type 'gpu'"},
         {command_line("ps --task ps:0"), "no cluster"},
         {"TF_CONFIG='{\"cluster\": 3}' " + command_line("ps"), "TF_CONFIG: expected an object"},
         {"TF_CONFIG='not json' " + command_line("ps"), "TF_CONFIG: malformed JSON"},
         {command_line("chief --insecure --cluster " + spec + " --task chief:0 --ps 3"), "--ps 3 disagrees with the cluster"},
         {command_line("chief --insecure --cluster " + spec + " --task chief:0 --model 784-x"), "--model"},
         {command_line("ps --insecure --cluster " + spec + " --task ps:0 --epochs 3"), "unrecognised option '--epochs'"},
       }) {
    CAPTURE(c.args);
    auto r = run(c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.output.find(c.named) != std::string::npos, r.output);
  }
}

TEST_CASE("a task whose port is taken exits 2 saying so") {
  held_port taken;
  auto spec = write_file("cluster.json",
                         R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:)"
                           + std::to_string(taken.port) + R"("], "worker": ["127.0.0.1:3"]}})");
  auto r = run(command_line("ps --insecure --cluster " + spec + " --task ps:0 --connect-timeout 1"));
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find("cannot listen on 127.0.0.1:" + std::to_string(taken.port))
                  != std::string::npos,
                r.output);
  // A fatal error is logged as one, not at INFO.
  CHECK_MESSAGE(r.output.find(" ERROR ps:0: cannot listen") != std::string::npos, r.output);
}

TEST_CASE("a task that cannot reach the chief gives up after the connect timeout, naming it, retryable") {
  held_port own, data, chief;  // free ports (the data link's too: own + 1 was never held)...
  chief.release();             // ...and nothing listens on the chief's
  std::string tf = R"({"cluster": {"chief": ["127.0.0.1:)" + std::to_string(chief.port)
                   + R"("], "ps": ["127.0.0.1:)" + std::to_string(own.port)
                   + R"("], "worker": ["127.0.0.1:3"]}, "task": {"type": "ps", "index": 0}})";
  own.release();
  data.release();
  auto r = run("TF_CONFIG='" + tf + "' "
               + command_line("ps --insecure --connect-timeout 0.5 --data-port " + std::to_string(data.port)));
  CHECK(r.status == 138);  // TFJob's ExitCode policy restarts it
  CHECK_MESSAGE(r.output.find("cannot reach 127.0.0.1:" + std::to_string(chief.port))
                  != std::string::npos,
                r.output);
}

TEST_CASE("--cluster FILE takes this replica's task from TF_CONFIG") {
  held_port own, data, chief;  // the data link's port held too: own + 1 was never held
  chief.release();  // nothing listens there: the task runs until its connect timeout
  auto spec = write_file("cluster.json",
                         R"({"cluster": {"chief": ["127.0.0.1:)" + std::to_string(chief.port)
                           + R"("], "ps": ["127.0.0.1:)" + std::to_string(own.port)
                           + R"("], "worker": ["127.0.0.1:3"]}})");
  own.release();
  data.release();
  auto r = run(R"(TF_CONFIG='{"task": {"type": "PS", "index": 0}, "environment": "cloud"}' )"
               + command_line("run --insecure --cluster " + spec + " --connect-timeout 0.5 --data-port "
                         + std::to_string(data.port)));
  CHECK(r.status == 138);
  CHECK_MESSAGE(r.output.find("ps:0: cannot reach 127.0.0.1:" + std::to_string(chief.port))
                  != std::string::npos,
                r.output);
}

TEST_CASE("a task whose own host name does not resolve retries up to --connect-timeout, retryable") {
  auto spec = write_file("cluster.json", R"({"cluster": {"chief": ["127.0.0.1:1"],
                                            "ps": ["no-such-host.invalid:2222"],
                                            "worker": ["127.0.0.1:3"]}})");
  auto r = run(command_line("run --insecure --cluster " + spec + " --task ps:0 --connect-timeout 1"));
  CHECK(r.status == 138);
  CHECK_MESSAGE(r.output.find("ps:0: its host name 'no-such-host.invalid' does not resolve yet")
                  != std::string::npos,
                r.output);
  CHECK_MESSAGE(r.output.find("retrying up to --connect-timeout 1 s") != std::string::npos,
                r.output);
  CHECK_MESSAGE(r.output.find("host name 'no-such-host.invalid' did not resolve") != std::string::npos,
                r.output);
}

TEST_CASE("a ps task whose derived data port is another task's address exits 2 naming --data-port") {
  held_port ps;
  auto next = std::to_string(ps.port + 1);
  auto spec = write_file("cluster.json",
                         R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:)"
                           + std::to_string(ps.port) + R"("], "worker": ["127.0.0.1:)" + next
                           + R"("]}})");
  ps.release();
  auto r = run(command_line("run --insecure --cluster " + spec + " --task ps:0 --connect-timeout 1"));
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find("the data port of ps:0 (its port + 1), " + next
                              + ", is the address of worker:0") != std::string::npos,
                r.output);
  CHECK_MESSAGE(r.output.find("another --data-port") != std::string::npos, r.output);
  r = run(command_line("run --insecure --cluster " + spec + " --task ps:0 --data-port 70000"));
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find("--data-port must be 0") != std::string::npos, r.output);
  r = run(command_line("run --insecure --cluster " + spec + " --task ps:0 --bind []"));
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.output.find("--bind needs an address") != std::string::npos, r.output);
}
