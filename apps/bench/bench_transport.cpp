// actorps_bench_transport: what one push_pull round trip between a worker and a shard costs
// inside one process, and where that time goes.
//
// A real ps_shard (async, SGD, constant rate, 1 worker, 1 shard) holds layers {1024, k}, i.e.
// 1025·k floats in blocks of --block-floats. A round trip is what a worker does per clock and
// shard: encode_push from the flat gradient → request(push_pull) → the shard decodes, validates,
// applies and encodes its reply → scatter_shard_parameters into the flat parameters.
// It is driven twice: by a detached event-based actor chaining request(...).then (how workers
// run), and by a scoped_actor doing request(...).receive (a blocking thread). The same pieces
// are then timed standalone, without actors, on the same payload, each on one thread with warm
// caches; the gap between their sum and the round trip is the messaging plus the payload
// changing cores.
// Payload passes per round trip: the push and the reply are built by reference (no copy), the
// shard reads the gradient once (its bound checked inside the update, apply_pushed_update) and
// writes the update into its spare buffer, and the worker's scatter copies the reply into its
// parameters; CAF itself copies nothing in-process (wire_buffer is shared). The standalone
// components are the copying encoders, the shard's update and the scatter. All figures are
// medians; GB = 1e9 bytes.
#include "actors/model/mlp_plugin.hpp"
#include "actors/guard/connect.hpp"
#include "actors/link/data_link_path.hpp"
#include "actors/protocol/link_memory.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/chief/metrics.hpp"
#include "actors/roles/ps_shard.hpp"
#include "actors/link/receive_in_place.hpp"
#include "actors/link/reply_part.hpp"
#include "actors/deploy/remote_shard.hpp"
#include "actors/protocol/system_config.hpp"
#include "kernels/blas_threads.hpp"
#include "kernels/denormals.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/value_bounds.hpp"

#include "apps/bench/bench_main.hpp"
#include "apps/bench/bench_serve.hpp"
#include "apps/bench/process_usage.hpp"

#include <boost/program_options.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;
using bench_clock = std::chrono::steady_clock;

namespace {

constexpr auto timeout = std::chrono::seconds(60);

double ms_since(bench_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(bench_clock::now() - t0).count();
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(std::lround(q * double(v.size() - 1)));
  return v[i];
}

/// Per round trip: CPU ms, minor faults and (when known) payload bytes copied by our code.
nlohmann::ordered_json per_round_trip(const process_usage& before, const process_usage& after,
                                      int64_t rounds, std::optional<uint64_t> copied) {
  nlohmann::ordered_json j{
    {"cpu_ms", (after.cpu_ms - before.cpu_ms) / double(rounds)},
    {"minor_faults", double(after.minor_faults - before.minor_faults) / double(rounds)}};
  if (copied) j["copied_bytes"] = double(*copied) / double(rounds);
  return j;
}

nlohmann::ordered_json summary_json(const std::vector<double>& v) {
  return {{"median", percentile(v, 0.5)}, {"p10", percentile(v, 0.1)}, {"p90", percentile(v, 0.9)}};
}

/// The worker side's buffers, shared by both drivers (one runs at a time).
struct worker_side {
  block_layout layout;
  float_buffer grad;  // in the arena, as a worker's: shared memory sends its blocks by reference
  std::vector<float> params;
  int64_t clock = 0;          // the next clock to push; the shard accepts them in order
  std::vector<double> times;  // the event driver's last run, read once it has answered
};

// --- event-based driver: each reply starts the next round, as a worker does ----------------

struct driver_state {
  static inline const char* name = "bench_driver";
  ps_shard_actor shard;
  worker_side* side = nullptr;
  std::size_t issued = 0, done = 0;
  bench_clock::time_point started;
  caf::typed_response_promise<double> promise;  ///< the wall time of the whole run, ms
};

using driver_ptr = caf::stateful_actor<driver_state>*;

/// Sends the next push_pull (the push for the next clock, as a worker does); its reply sends
/// the one after, so as many are in flight as were started. The shard serves one worker's
/// pushes in order, so pipelined pushes are valid in async mode.
void next_round(driver_ptr self) {
  auto& st = self->state;
  if (st.issued == st.side->times.size()) return;
  auto slot = st.issued++;
  auto t0 = bench_clock::now();
  // By reference, as a worker's push to a remote shard: grad does not change during the run.
  auto push = encode_push_by_reference(0, st.side->clock++, 0, st.side->layout, st.side->grad.data());
  // As a worker asks (worker.cpp): no CAF timeout per request, which would cost a register and
  // a cancel on CAF's clock thread each; the run as a whole is timed out by its asker.
  self->request(st.shard, caf::infinite, push_pull_atom::value, push_request{std::move(push)})
    .then(
      [=](const wire_buffer& reply) {
        auto& st = self->state;
        auto msg = scatter_shard_parameters(reply, st.side->layout, st.side->params.data());
        if (!msg) {
          st.promise.deliver(msg.error());
          return;
        }
        st.side->times[slot] = ms_since(t0);
        if (++st.done == st.side->times.size())
          st.promise.deliver(ms_since(st.started));
        else
          next_round(self);
      },
      [=](caf::error& err) { self->state.promise.deliver(err); });
}

caf::behavior driver(driver_ptr self, ps_shard_actor shard, worker_side* side) {
  self->state.shard = shard;
  self->state.side = side;
  return {
    [=](run_atom, int64_t rounds, int32_t in_flight) -> caf::result<double> {
      auto& st = self->state;
      st.side->times.assign(static_cast<std::size_t>(rounds), 0.0);
      st.issued = st.done = 0;
      st.started = bench_clock::now();
      st.promise = self->make_response_promise<double>();
      for (int32_t i = 0; i < in_flight; ++i) next_round(self);
      return st.promise;
    },
  };
}

// --- the components, standalone --------------------------------------------------------------

template <class F>
double median_ms(int iterations, F&& f) {
  std::vector<double> t(iterations);
  for (auto& v : t) {
    auto t0 = bench_clock::now();
    f();
    v = ms_since(t0);
  }
  return percentile(t, 0.5);
}

nlohmann::ordered_json time_components(const train_spec& spec, worker_side& side,
                                       int iterations) {
  const auto& layout = side.layout;
  std::vector<float> shard_params(layout.shard_floats(0));
  layout.gather(0, side.params.data(), shard_params.data());
  auto push = encode_push(0, 0, 0, layout, side.grad.data());
  auto reply = encode_shard_parameters(0, 0, 0, layout, shard_params.data());
  auto bytes = shard_params.size() * sizeof(float);
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  bool ok = true;

  auto encode_push_ms = median_ms(iterations, [&] {
    push = encode_push(0, 0, 0, layout, side.grad.data());
  });
  // What the shard does with a push: decode, then one pass per block that checks the gradient
  // as it applies it, into the spare buffer (swapped in once every block passed).
  std::vector<float> shard_next(shard_params.size());
  auto apply_ms = median_ms(iterations, [&] {
    auto view = decode_push(push);
    if (!view) throw std::runtime_error("decode_push failed");
    for (const auto& b : view->blocks) {
      auto at = layout.blocks()[b.id].shard_offset;
      ok &= apply_pushed_update(spec.optimizer, spec.optimizer.learning_rate, 1,
                                shard_params.data() + at, nullptr, b.values,
                                shard_next.data() + at, nullptr, b.count, default_max_parameter,
                                default_max_gradient)
            == update_check::applied;
    }
    std::swap(shard_params, shard_next);
  });
  auto encode_reply_ms = median_ms(iterations, [&] {
    reply = encode_shard_parameters(0, 0, 0, layout, shard_params.data());
  });
  auto scatter_ms = median_ms(iterations, [&] {
    ok &= bool(scatter_shard_parameters(reply, layout, side.params.data()));
  });
  auto memcpy_ms = median_ms(iterations, [&] {
    std::memcpy(dst.data(), src.data(), bytes);
    ++src[dst[bytes / 2] & 1];  // keeps the copy observable
  });
  // The same copy from and to memory that is not in cache: the hot copy above reuses one pair
  // of buffers that fits the L3 (32 MiB here), which no payload of a real round trip does. The
  // pairs rotated through total at least 96 MiB, so each is evicted before its turn comes back.
  const std::size_t cold_pairs = std::max<std::size_t>(2, ((std::size_t(48) << 20) + bytes - 1) / bytes);
  std::vector<std::vector<char>> cold_src(cold_pairs, std::vector<char>(bytes, 1));
  std::vector<std::vector<char>> cold_dst(cold_pairs, std::vector<char>(bytes, 0));
  std::size_t cold_next = 0;
  auto memcpy_cold_ms = median_ms(iterations, [&] {
    auto& from = cold_src[cold_next];
    auto& to = cold_dst[cold_next];
    cold_next = (cold_next + 1) % cold_pairs;
    std::memcpy(to.data(), from.data(), bytes);
    ++from[to[bytes / 2] & 1];
  });
  // The zero-filled std::vector<capnp::word> every encoder starts from, and the same bytes
  // zeroed by memset: capnp::word is a class, so the vector fills it one word at a time.
  auto alloc_words_ms = median_ms(iterations, [&] {
    std::vector<capnp::word> words(bytes / 8 + 1);
    ok &= reinterpret_cast<const char*>(words.data())[bytes / 2] == 0;
  });
  auto alloc_memset_ms = median_ms(iterations, [&] {
    std::vector<uint64_t> words(bytes / 8 + 1);
    ok &= words[bytes / 16] == 0;
  });
  if (!ok) throw std::runtime_error("a standalone component failed");
  return {{"encode_push", encode_push_ms},
          {"decode_validate_apply", apply_ms},
          {"encode_reply", encode_reply_ms},
          {"scatter_reply", scatter_ms},
          {"memcpy", memcpy_ms},
          {"memcpy_cold", memcpy_cold_ms},
          {"alloc_words", alloc_words_ms},
          {"alloc_memset", alloc_memset_ms},
          {"sum_of_round_trip_parts", encode_push_ms + apply_ms + encode_reply_ms + scatter_ms}};
}

// --- the raw data link: no actors on the worker's side ----------------------------------------

/// What the raw run measured: its round trips and each side's usage over them.
struct raw_run {
  std::vector<double> times;
  process_usage worker_before, worker_after, shard_before, shard_after;
  uint64_t copied = 0;
};

/// Push+pulls on a connection of its own to the shard process's data link, without the proxy
/// or any actor on this side: each push leaves by reference from the gradient, each reply is
/// received straight into the parameters (receive_in_place.hpp). What the worker's data path
/// costs with zero copies of ours on both sides, next to the same sockets' floor.
raw_run drive_raw(caf::scoped_actor& self, const remote_shard& connection, const std::string& host,
                  worker_side& side, int warmup, int iterations, int shard_pid,
                  const tls_files& tls) {
  uint16_t port = 0;
  std::string name;
  self->request(connection.task, timeout, link_atom::value)
    .receive([&](uint16_t p, std::string& n) { port = p; name = std::move(n); },
             [&](caf::error& err) { throw std::runtime_error("link address: " + describe(err)); });
  auto link = connection.link->is_local() ? connect_local_link(name)
                                          : connect_link(host, port, std::chrono::seconds(5));
  if (!link) throw std::runtime_error(describe(link.error()));
  auto& raw = **link;
  if (tls.enabled())  // as the worker's proxy does (remote_shard.cpp)
    if (auto err = raw.start_tls(tls, "ps:0", std::chrono::seconds(5)))
      throw std::runtime_error("raw link: " + describe(err));
  frame_header h;
  if (raw.send(make_header(frame_kind::hello, 0, 0, 60000)) || raw.receive_header(h))
    throw std::runtime_error("raw link: no hello reply");
  raw_run out;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) {
      out.shard_before = shard_pid > 0 ? usage_of(shard_pid) : process_usage{};
      out.copied = copied_payload_bytes.load();
      out.worker_before = own_usage();
    }
    auto t0 = bench_clock::now();
    auto push = encode_push_by_reference(0, side.clock++, 0, side.layout, side.grad.data());
    wire_buffer structure;
    if (raw.send(frame_kind::push_pull, uint64_t(i + 1), push) || raw.receive_header(h)
        || !receive_reply_into(raw, h, side.layout, side.params.data(), structure))
      throw std::runtime_error("raw link: push_pull " + std::to_string(i) + " failed");
    if (i >= warmup) out.times.push_back(ms_since(t0));
  }
  out.worker_after = own_usage();
  out.copied = copied_payload_bytes.load() - out.copied;
  out.shard_after = shard_pid > 0 ? usage_of(shard_pid) : process_usage{};
  raw.shutdown();
  return out;
}

// --- the run ---------------------------------------------------------------------------------

struct options {
  int64_t floats = 1048575;
  uint32_t block_floats = 65536;
  int iterations = 200, warmup = 10, threads = 2;
  int in_flight = 4;     ///< push_pulls in flight in the pipelined run
  int serve = 0;         ///< > 0: publish a shard on 127.0.0.1:serve and wait (the shard process)
  std::string connect;   ///< host:port: drive the shard published there (the worker process)
  bool no_data_link = false;  ///< serve: offer no data link; everything over CAF's middleman
  bool tcp_only = false;      ///< serve: offer the data link over TCP only (no local socket)
  std::string tls_dir;        ///< scripts/make_certs.sh's DIR: CAF's connection over mutual TLS
  int shard_pid = 0;          ///< connect: the shard process, whose CPU and faults are read
  std::string data_link = "auto";  ///< connect: --data-link (actors/link/data_link_path.hpp)
  /// serve: link_limits::request_part_bytes (0: every push read whole before the shard sees it)
  std::size_t request_part_bytes = link_limits{}.request_part_bytes;
  /// serve: link_limits::reply_part_bytes (0: replies whole)
  std::size_t reply_part_bytes = link_limits{}.reply_part_bytes;
};

/// The files of `task` ("ps-0") in make_certs.sh's DIR; none when `dir` is empty.
tls_files tls_of(const std::string& dir, const std::string& task) {
  if (dir.empty()) return {};
  return {dir + "/" + task + ".pem", dir + "/" + task + ".key", dir + "/ca.pem"};
}

train_spec spec_for(const options& o) {
  train_spec spec;
  int k = std::max(1, static_cast<int>(std::lround(double(o.floats) / 1025.0)));
  spec.model = mlp_model({1024, k});  // 1024·k kernel + k bias = 1025·k floats
  spec.block_floats = o.block_floats;
  spec.shards = 1;
  spec.workers = 1;
  spec.mode = consistency::async;
  spec.optimizer.kind = optimizer_kind::sgd;
  spec.optimizer.learning_rate = 1e-6f;  // parameters stay near their start: no denormals
  spec.schedule = lr_schedule::constant;
  return spec;
}

/// The parameters the shard starts from (both processes compute the same ones).
std::vector<float> start_parameters(const block_layout& layout) {
  std::vector<float> params(layout.total_floats());
  for (std::size_t i = 0; i < params.size(); ++i) params[i] = 0.01f * float(i % 97);
  return params;
}

wire_buffer shard_init_for(const options& o) {
  auto spec = spec_for(o);
  block_layout layout(spec);
  auto params = start_parameters(layout);
  std::vector<float> part(layout.shard_floats(0));
  layout.gather(0, params.data(), part.data());
  return encode_shard_init(spec, 0, layout, part.data());
}

int run(const options& o) {
  flush_denormals_to_zero();
  auto spec = spec_for(o);
  // A worker connects before it makes its gradient buffer, so over shared memory that buffer
  // lies in the arena the link's offer made; here the buffer comes first: the arena before it.
  if (configured_data_link_path() == data_link_path::shm) enable_link_memory();
  worker_side side{block_layout(spec), {}, {}, 0, {}};
  auto floats = side.layout.total_floats();
  side.grad.assign(floats, 1e-3f);
  side.params = start_parameters(side.layout);

  caf::actor_system_config cfg;
  bool remote = !o.connect.empty();
  configure_system(cfg, o.threads,
                   remote ? std::optional<network_settings>{network_settings{}} : std::nullopt);
  if (remote) configure_tls(cfg, tls_of(o.tls_dir, "worker-0"));
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  ps_shard_actor shard;
  remote_shard connection;
  if (remote) {
    auto found = connect_shard(sys, parse_address(o.connect, "--connect"), 0,
                               std::chrono::seconds(20), timeout);
    if (!found) throw std::runtime_error(describe(found.error()));
    connection = *found;
    shard = connection.handle;
    // As a worker does (worker.cpp): replies over the data link land in side.params, in place.
    // side outlives the connection, so the pointers own nothing.
    std::shared_ptr<void> unowned;
    if (connection.destination)
      connection.destination->set(std::shared_ptr<const block_layout>(unowned, &side.layout),
                                  std::shared_ptr<std::vector<float>>(unowned, &side.params));
  } else {
    shard = spawn_ps_shard(sys, 0);
  }
  // Over TLS the shard process initialised its shard itself: a worker's certificate may not.
  if (!remote || o.tls_dir.empty()) {
    bool ok = false;
    self->request(shard, timeout, init_atom::value, shard_init_for(o))
      .receive([&](caf::ok_atom) { ok = true; }, [&](caf::error&) {});
    if (!ok) throw std::runtime_error("shard init failed");
  }

  // Event-based driver: warm-up rounds, then the timed ones, one in flight (a worker's round
  // trip); then the same with --in-flight pipelined (the throughput of the connection).
  auto drv = sys.spawn<caf::detached>(driver, shard, &side);  // detached, as a worker is
  auto drive = [&](int64_t rounds, int32_t in_flight) {
    double wall_ms = 0;
    caf::error failure;
    self->request(drv, timeout, run_atom::value, rounds, in_flight)
      .receive([&](double ms) { wall_ms = ms; }, [&](caf::error& err) { failure = std::move(err); });
    if (failure) throw std::runtime_error("event driver: " + describe(failure));
    return wall_ms;
  };
  drive(o.warmup, 1);
  auto shard_before = o.shard_pid > 0 ? usage_of(o.shard_pid) : process_usage{};
  auto copied_before = copied_payload_bytes.load();
  auto worker_before = own_usage();
  drive(o.iterations, 1);
  auto worker_after = own_usage();
  auto worker_copied = copied_payload_bytes.load() - copied_before;
  auto shard_after = o.shard_pid > 0 ? usage_of(o.shard_pid) : process_usage{};
  auto event_times = side.times;
  auto event_faults = worker_after.minor_faults - worker_before.minor_faults;
  drive(o.warmup, o.in_flight);
  auto pipelined_ms = drive(o.iterations, o.in_flight) / o.iterations;
  auto pipelined_latency = side.times;
  self->send_exit(drv, caf::exit_reason::user_shutdown);

  // Scoped driver: the same round trip from a blocking thread.
  std::vector<double> scoped_times;
  for (int i = 0; i < o.warmup + o.iterations; ++i) {
    auto t0 = bench_clock::now();
    caf::error failure;
    self->request(shard, timeout, push_pull_atom::value,
                  push_request{encode_push_by_reference(0, side.clock++, 0, side.layout,
                                                        side.grad.data())})
      .receive(
        [&](const wire_buffer& reply) {
          if (auto msg = scatter_shard_parameters(reply, side.layout, side.params.data()); !msg)
            failure = msg.error();
        },
        [&](caf::error& err) { failure = std::move(err); });
    if (failure) throw std::runtime_error("scoped driver: " + describe(failure));
    if (i >= o.warmup) scoped_times.push_back(ms_since(t0));
  }
  std::optional<raw_run> raw;
  if (remote && connection.link && !connection.shared_memory)  // the raw run speaks sockets only
    raw = drive_raw(self, connection, parse_address(o.connect, "--connect").host, side, o.warmup,
                    o.iterations, o.shard_pid,
                    o.tls_dir.empty() ? tls_files{} : tls_of(o.tls_dir, "worker-0"));
  // How the shard took the pushes: applied as they arrived, replies sent ahead in parts.
  shard_stats stats;
  self->request(shard, timeout, stats_atom::value)
    .receive([&](shard_stats& s) { stats = s; }, [](caf::error&) {});
  // Stopping the shard (over CAF) ends the shard process; then the data link, if any.
  self->send_exit(remote ? connection.shard : shard, caf::exit_reason::user_shutdown);
  connection.close();

  auto components = time_components(spec, side, o.iterations);
  std::string transport = !remote            ? "in-process"
                          : !connection.link ? "caf"
                                             : std::string("data link, ") + connection.transport();
  auto payload = double(floats * sizeof(float));
  auto wire_bytes = encode_push(0, 0, 0, side.layout, side.grad.data()).size_bytes();
  auto gbps = [&](const std::vector<double>& t, double bytes) {
    return bytes / (percentile(t, 0.5) * 1e-3) / 1e9;
  };
  nlohmann::ordered_json result{
    {"bench", "transport"},
    {"placement", remote ? "two processes over loopback" : "one process"},
    {"transport", transport},
    {"floats", static_cast<int64_t>(floats)},
    {"blocks", static_cast<int64_t>(side.layout.blocks().size())},
    {"payload_bytes", static_cast<int64_t>(payload)},
    {"push_wire_bytes", static_cast<int64_t>(wire_bytes)},
    {"iterations", o.iterations},
    {"scheduler_threads", o.threads},
    {"round_trip_ms", summary_json(event_times)},
    {"push_pull_GBps", gbps(event_times, payload)},
    {"bytes_moved_GBps", gbps(event_times, 2 * payload)},
    {"in_flight", o.in_flight},
    {"pipelined_ms_per_push_pull", pipelined_ms},
    {"pipelined_push_pull_GBps", payload / (pipelined_ms * 1e-3) / 1e9},
    {"pipelined_round_trip_ms", summary_json(pipelined_latency)},
    {"minor_faults_per_round_trip", double(event_faults) / o.iterations},
    {"scoped_round_trip_ms", summary_json(scoped_times)},
    // The timed event-driven round trips: this process (in one process: worker and shard
    // together) and, given --shard-pid, the shard process (its copies: see bench_serve.hpp).
    {"worker_per_round_trip", per_round_trip(worker_before, worker_after, o.iterations, worker_copied)},
    {"shard_per_round_trip", o.shard_pid > 0 ? per_round_trip(shard_before, shard_after, o.iterations,
                                                              std::nullopt)
                                             : nlohmann::ordered_json()},
    {"push_pulls_sent", static_cast<int64_t>((raw ? 4 : 3) * (o.warmup + o.iterations))},
    {"shard_pushes", stats.pushes},
    {"shard_pushes_streamed", stats.pushes_streamed},
    {"shard_replies_streamed", stats.replies_streamed},
    {"scoped_push_pull_GBps", gbps(scoped_times, payload)},
    {"components_ms", components}};
  if (raw)
    result["raw_link"] = {
      {"round_trip_ms", summary_json(raw->times)},
      {"worker_per_round_trip",
       per_round_trip(raw->worker_before, raw->worker_after, o.iterations, raw->copied)},
      {"shard_per_round_trip", o.shard_pid > 0 ? per_round_trip(raw->shard_before, raw->shard_after,
                                                                o.iterations, std::nullopt)
                                               : nlohmann::ordered_json()}};
  std::printf("%s\n", render_json(result).c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Its CPU per round trip must not count OpenBLAS's first spin (blas_threads.hpp).
  stop_blas_thread_pool();
  options o;
  po::options_description desc("actorps_bench_transport flags");
  desc.add_options()
    ("help,h", "print this help")
    ("floats", po::value(&o.floats)->default_value(o.floats),
     "shard size in floats (rounded to a multiple of 1025: layers {1024, k})")
    ("block-floats", po::value(&o.block_floats)->default_value(o.block_floats), "floats per block")
    ("iterations", po::value(&o.iterations)->default_value(o.iterations), "timed round trips")
    ("warmup", po::value(&o.warmup)->default_value(o.warmup), "untimed round trips first")
    ("in-flight", po::value(&o.in_flight)->default_value(o.in_flight),
     "push_pulls kept in flight in the pipelined run")
    ("threads", po::value(&o.threads)->default_value(o.threads), "CAF scheduler threads")
    ("serve", po::value(&o.serve), "publish a shard on 127.0.0.1:PORT and wait (shard process)")
    ("connect", po::value(&o.connect), "drive the shard at HOST:PORT (worker process)")
    ("tcp-link", po::bool_switch(&o.tcp_only),
     "serve: offer the data link over loopback TCP only, not over a local socket")
    ("no-data-link", po::bool_switch(&o.no_data_link),
     "serve: offer no data link, so pulls and pushes travel through CAF's middleman")
    ("data-link", po::value(&o.data_link)->default_value(o.data_link),
     "connect: the data link's path, auto, tcp, socket or shm (as actorps's --data-link)")
    ("shard-pid", po::value(&o.shard_pid),
     "connect: the shard process's pid, whose CPU time and page faults are read from /proc")
    ("request-part-bytes", po::value(&o.request_part_bytes)->default_value(o.request_part_bytes),
     "serve: a push of two of these or more is applied as it arrives, in runs of this many "
     "bytes; 0: read whole first (link_limits::request_part_bytes)")
    ("reply-part-bytes", po::value(&o.reply_part_bytes)->default_value(o.reply_part_bytes),
     "serve: a reply of two of these or more goes ahead in parts of this many bytes; 0: whole "
     "(link_limits::reply_part_bytes)")
    ("tls-dir", po::value(&o.tls_dir),
     "CAF's connection over mutual TLS with scripts/make_certs.sh's DIR (ps:0 and worker:0); "
     "the serving side then initialises its shard from its own --floats and --block-floats, "
     "which must be the driver's");
  return run_benchmark("actorps_bench_transport", argc, argv, desc, [&] {
    if (o.floats < 1 || o.block_floats < 1 || o.iterations < 1 || o.warmup < 0 || o.threads < 1
        || o.in_flight < 1)
      throw po::error("--floats, --block-floats, --iterations, --threads, --in-flight must be positive");
    if (o.serve < 0 || o.serve > 65535) throw po::error("--serve wants a port");
    auto path = parse_data_link_path(o.data_link);
    if (!path) throw po::error("--data-link " + o.data_link + " is none of auto, tcp, socket, shm");
    set_data_link_path(*path);
  }, [&] {
    if (o.serve > 0)
      serve_bench_shard({static_cast<uint16_t>(o.serve), o.threads, !o.no_data_link, o.tcp_only,
                         tls_of(o.tls_dir, "ps-0"),
                         o.tls_dir.empty() ? std::nullopt : std::optional(shard_init_for(o)),
                         [&] {
                           link_limits limits;
                           limits.request_part_bytes = o.request_part_bytes;
                           limits.reply_part_bytes = o.reply_part_bytes;
                           return limits;
                         }()});
    return run(o);
  });
}
