// An insider of tls_cluster_test.sh: a process holding a worker's own certificate that, while
// the cluster trains, connects to a ps task as that worker (CAF and the data link, both TLS),
// pushes 1000.0 everywhere as that worker at the clock the worker is at (learned from the
// shard's future_clock refusal), and once as another worker. It prints each answer and exits
// 0 when its 1000.0 push was refused for its norm and its push as the other worker as not
// authorised, 1 when anything else happened (a push taken), 2 on bad arguments.
//
// usage: actorps_insider_push HOST:PORT CERT KEY CA WORKER OTHER_WORKER MIN_CLOCK
// (MIN_CLOCK: the worker must be at this clock at least, past the shard's warm-up: run it
// once the worker's train event of that clock is out)
#include "actors/deploy/remote_shard.hpp"
#include "actors/guard/tls_config.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/system_config.hpp"
#include "tests/crafted_push.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace actorps;

namespace {

struct insider_config : caf::actor_system_config {
  explicit insider_config(const tls_files& files) {
    configure_system(*this, 2, network_settings{});
    configure_tls(*this, files);
  }
};

constexpr auto request_timeout = std::chrono::seconds(10);

caf::expected<wire_buffer> ask(caf::scoped_actor& self, const ps_shard_actor& to, wire_buffer push) {
  caf::expected<wire_buffer> out{caf::make_error(caf::sec::request_timeout)};
  self->request(to, request_timeout, push_pull_atom::value, push_request{std::move(push)})
    .receive([&](wire_buffer& reply) { out = std::move(reply); },
             [&](caf::error& err) { out = std::move(err); });
  return out;
}

/// Ends the process with `status`: CAF 0.17 may wait forever destroying a system with a remote
/// peer.
int done(int status) {
  std::fflush(stdout);
  std::_Exit(status);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s HOST:PORT CERT KEY CA WORKER OTHER_WORKER MIN_CLOCK\n", argv[0]);
    return 2;
  }
  std::string where = argv[1];
  auto colon = where.rfind(':');
  host_port addr{where.substr(0, colon), static_cast<uint16_t>(std::atoi(where.c_str() + colon + 1))};
  tls_files files{argv[2], argv[3], argv[4]};
  const int32_t worker = std::atoi(argv[5]);
  const int32_t other = std::atoi(argv[6]);
  const int64_t min_clock = std::atoll(argv[7]);
  insider_config cfg{files};
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto remote = connect_shard(sys, addr, 0, std::chrono::seconds(20), request_timeout);
  if (!remote) {
    std::printf("cannot connect: %s\n", describe(remote.error()).c_str());
    return done(1);
  }
  std::printf("connected over %s\n", remote->transport());
  // The shard's blocks, from a snapshot (any worker may take one).
  wire_buffer snap;
  self->request(remote->handle, request_timeout, snapshot_atom::value)
    .receive([&](wire_buffer& b) { snap = b.flat(); },
             [&](caf::error& e) { std::printf("snapshot: %s\n", describe(e).c_str()); });
  auto view = decode_shard_parameters(snap);
  if (!view) return done(1);
  std::vector<std::pair<uint32_t, std::vector<float>>> blocks;
  for (const auto& b : view->blocks) blocks.push_back({b.id, std::vector<float>(b.count, 1000.0f)});
  auto huge = [&](int32_t as, int64_t clock) {
    return test::craft_push(as, clock, view->shard, blocks);
  };
  // The clock the worker is at: a push for a clock far ahead is refused naming it.
  auto clock_of_worker = [&]() -> int64_t {
    auto answer = ask(self, remote->handle, huge(worker, int64_t{1} << 40));
    if (answer) return -1;
    auto text = describe(answer.error());
    auto at = text.find("worker is at ");
    if (at == std::string::npos) return -1;
    return std::atoll(text.c_str() + at + 13);
  };
  bool norm_refused = false;
  for (int attempt = 0; attempt < 2000 && !norm_refused; ++attempt) {
    auto clock = clock_of_worker();
    if (clock < 0) {
      std::printf("cannot tell the worker's clock\n");
      return done(1);
    }
    if (clock < min_clock) {  // the script waits for the worker's train event first
      std::printf("the worker is at clock %lld, before %lld\n", static_cast<long long>(clock),
                  static_cast<long long>(min_clock));
      return done(1);
    }
    auto answer = ask(self, remote->handle, huge(worker, clock));
    if (answer) {
      std::printf("TAKEN: the push of 1000.0 as worker %d for clock %lld\n", worker,
                  static_cast<long long>(clock));
      return done(1);
    }
    if (is_error(answer.error(), errc::stale_clock)) continue;  // the worker pushed first
    std::printf("push as worker %d for clock %lld: %s\n", worker, static_cast<long long>(clock),
                describe(answer.error()).c_str());
    if (!is_error(answer.error(), errc::gradient_norm_beyond)) return done(1);
    norm_refused = true;
  }
  if (!norm_refused) return done(1);
  auto as_other = ask(self, remote->handle, huge(other, 0));
  std::printf("push as worker %d: %s\n", other,
              as_other ? "TAKEN" : describe(as_other.error()).c_str());
  if (as_other || !is_error(as_other.error(), errc::not_authorised)) return done(1);
  remote->close();
  return done(0);
}
