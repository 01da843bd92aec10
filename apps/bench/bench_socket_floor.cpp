// actorps_bench_socket_floor: the floor under a push+pull between two processes — the data
// link's sockets, tuned as the data link tunes them, carrying frames of N bytes each way and
// nothing else (no encoding, no shard, no actors): a child process echoes every frame it has
// received in full. What the data link's round trip costs above this is actorps' own; the CPU
// both processes spend per round trip is reported too, to set the data link's against.
#include "actors/link/link_socket.hpp"
#include "actors/chief/metrics.hpp"
#include "kernels/blas_threads.hpp"

#include "apps/bench/bench_main.hpp"
#include "apps/bench/process_usage.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace po = boost::program_options;
using namespace actorps;

namespace {

struct options {
  std::size_t bytes = 4 << 20;
  int iterations = 200, warmup = 10;
  std::string family = "tcp";  ///< tcp (127.0.0.1) or unix (an abstract local socket)
};

/// A listening socket of the family, and what a client connects to (a port or a name).
int listen_on(const std::string& family, uint16_t& port, std::string& name) {
  int fd = -1;
  if (family == "tcp") {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) throw std::runtime_error("bind");
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  } else {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    name = "actorps-floor-" + std::to_string(std::random_device{}());
    socklen_t len = 0;
    auto addr = local_address(name, len);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) throw std::runtime_error("bind");
  }
  if (::listen(fd, 1) != 0) throw std::runtime_error("listen");
  return fd;
}

/// The child: echoes each frame once it has all of it, until the parent closes.
[[noreturn]] void echo(int listener) {
  int fd = ::accept(listener, nullptr, nullptr);
  tune_link_socket(fd);
  link_socket link{fd};
  frame_header h;
  while (!link.receive_header(h)) {
    auto payload = link.receive_buffer(h);
    if (!payload || link.send(frame_kind::reply, h.id, *payload)) break;
  }
  std::_Exit(0);
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * double(v.size() - 1) + 0.5)];
}

int run(const options& o) {
  uint16_t port = 0;
  std::string name;
  int listener = listen_on(o.family, port, name);
  pid_t child = ::fork();
  if (child == 0) echo(listener);
  ::close(listener);
  auto link = o.family == "tcp"
                ? connect_link("127.0.0.1", port, std::chrono::seconds(5))
                : connect_local_link(name);
  if (!link) throw std::runtime_error(describe(link.error()));
  std::vector<char> bytes(o.bytes / sizeof(capnp::word) * sizeof(capnp::word), 1);
  auto push = wire_buffer::from_bytes(bytes.data(), bytes.size());
  std::vector<double> times;
  process_usage client_before, echo_before;
  for (int i = 0; i < o.warmup + o.iterations; ++i) {
    if (i == o.warmup) {
      client_before = own_usage();
      echo_before = usage_of(child);
    }
    auto t0 = std::chrono::steady_clock::now();
    frame_header h;
    if ((*link)->send(frame_kind::push_pull, static_cast<uint64_t>(i), push)
        || (*link)->receive_header(h) || !(*link)->receive_buffer(h))
      throw std::runtime_error("the echo process went away");
    if (i >= o.warmup)
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  // Both processes' CPU over the timed round trips: what the floor itself needs of the cores,
  // against which a round trip's own CPU says how far the cores alone let it come.
  const auto client_cpu = (own_usage().cpu_ms - client_before.cpu_ms) / o.iterations;
  const auto echo_cpu = (usage_of(child).cpu_ms - echo_before.cpu_ms) / o.iterations;
  (*link)->shutdown();
  ::waitpid(child, nullptr, 0);
  auto median = percentile(times, 0.5);
  nlohmann::ordered_json result{
    {"bench", "socket_floor"},
    {"family", o.family},
    {"payload_bytes", static_cast<int64_t>(push.size_bytes())},
    {"iterations", o.iterations},
    {"round_trip_ms",
     {{"median", median}, {"p10", percentile(times, 0.1)}, {"p90", percentile(times, 0.9)}}},
    {"push_pull_GBps", double(push.size_bytes()) / (median * 1e-3) / 1e9},
    {"cpu_ms_per_round_trip", {{"client", client_cpu}, {"echo", echo_cpu}}}};
  std::printf("%s\n", render_json(result).c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Its CPU per round trip must not count OpenBLAS's first spin (blas_threads.hpp).
  stop_blas_thread_pool();
  options o;
  po::options_description desc("actorps_bench_socket_floor flags");
  desc.add_options()
    ("help,h", "print this help")
    ("bytes", po::value(&o.bytes)->default_value(o.bytes), "payload bytes each way (rounded down to 8)")
    ("family", po::value(&o.family)->default_value(o.family), "tcp (127.0.0.1) or unix (local socket)")
    ("iterations", po::value(&o.iterations)->default_value(o.iterations), "timed round trips")
    ("warmup", po::value(&o.warmup)->default_value(o.warmup), "untimed round trips first");
  return run_benchmark("actorps_bench_socket_floor", argc, argv, desc, [&] {
    if (o.family != "tcp" && o.family != "unix") throw po::error("--family must be tcp or unix");
    if (o.bytes < 8 || o.iterations < 1 || o.warmup < 0)
      throw po::error("--bytes must be at least 8, --iterations positive");
  }, [&] { return run(o); });
}
