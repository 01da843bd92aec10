// A client of a ps task's CAF port that never reads its replies (for scripts/bench/attack_ports.py):
// connects through a stalling relay (no TLS), asks the task for its shard, takes one snapshot,
// then stops reading and sends N more snapshot requests. Prints one JSON object: whether the
// ps cut it off (the connection lost) and after how long.
//
// usage: actorps_bench_caf_unread PORT [REQUESTS=8000] [HOLD_S=30]
#include "actors/protocol/messages.hpp"
#include "actors/protocol/system_config.hpp"
#include "apps/bench/stalling_relay.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace actorps;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT [REQUESTS=8000] [HOLD_S=30]\n", argv[0]);
    return 2;
  }
  auto port = static_cast<uint16_t>(std::atoi(argv[1]));
  int requests = argc > 2 ? std::atoi(argv[2]) : 8000;
  auto hold = std::chrono::seconds(argc > 3 ? std::atoi(argv[3]) : 30);
  stalling_relay relay{port};
  if (relay.port() == 0) return 1;
  caf::actor_system_config cfg;
  configure_system(cfg, 2, network_settings{});
  caf::actor_system sys{cfg};
  auto task = sys.middleman().remote_actor<ps_task_actor>("127.0.0.1", relay.port());
  if (!task) {
    std::printf("{\"error\": \"%s\"}\n", sys.render(task.error()).c_str());
    return 1;
  }
  caf::scoped_actor self{sys};
  ps_shard_actor shard;
  std::size_t snapshot_bytes = 0;
  std::string error;
  auto fail = [&](caf::error& err) { error = sys.render(err); };
  self->request(*task, std::chrono::seconds(10), shard_atom::value)
    .receive([&](ps_shard_actor& s) { shard = s; }, fail);
  if (shard)
    self->request(shard, std::chrono::seconds(10), snapshot_atom::value)
      .receive([&](wire_buffer& snap) { snapshot_bytes = snap.size_bytes(); }, fail);
  if (!shard || snapshot_bytes == 0) {
    std::printf("{\"error\": \"%s\"}\n", error.c_str());
    return 1;
  }
  self->monitor(*task);
  relay.stop_replies();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < requests; ++i) self->send(shard, snapshot_atom::value);
  bool cut_off = false;
  // Replies never arrive; the down message comes when the relay sees the ps close the connection.
  self->receive_while([&] { return !cut_off; })(
    [&](caf::down_msg&) { cut_off = true; }, [](wire_buffer&) {},
    caf::after(hold) >> [&] { requests = -requests; });
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"requests\": %d, \"snapshot_bytes\": %zu, \"cut_off_by_ps\": %s, "
              "\"seconds\": %.2f}\n",
              requests < 0 ? -requests : requests, snapshot_bytes, cut_off ? "true" : "false",
              seconds);
  return 0;
}
