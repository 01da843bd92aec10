// actorps_bench_sparse_link: ps-lite's own benchmark shape between a worker process and a shard
// process on loopback: ONE push of the rows of N distinct uint64 keys, then ONE pull of the same
// keys, over the data link (actors/deploy/remote_shard.hpp), as a worker in a distributed run sends
// them. The shard process (--serve; apps/bench/bench_serve.hpp) holds one shard (1 worker,
// async) with one sparse table of rows of --dim floats, zeros to start, Adagrad with rate 0.1.
//
// A round, after one warm-up round on keys of its own: a push of fresh keys (the shard creates
// every row, then applies Adagrad), a second push of the same keys (it updates the rows), then a
// pull of those keys. Each is timed from the start of encoding to the reply decoded (for the
// pull: with the rows copied into the caller's array, as ps-lite's Pull fills its vals), and
// split into
//   encode    the worker's encode_push / encode_pull;
//   shard     the shard's handling, timed in the shard process by a probe actor in front of the
//             shard (timed_shard below): from the request reaching it to the shard's reply
//             (decode, validate, apply or read, encode the reply);
//   transfer  the rest of the wait: the proxy's send, the kernel, the reading side, two mailbox
//             hops each way;
//   decode    decode_shard_parameters (and, for the pull, the copy into the caller's array).
// The probe also reports the shard process's peak resident set (VmHWM) at the end.
// Every pulled row of the first keys is checked against a local sparse_table that took the
// same two pushes: the link must deliver the rows in the order asked, bit for bit.
//
// --components: then, in this process, the shard's handling of one push and pull without
// actors or sockets, piece by piece (decode, validate and its duplicate check, create, update,
// read into a reply), on the same sizes (its table holds only these keys' rows, the served one
// also every earlier round's). Prints one JSON object; GB = 1e9 bytes.
#include "actors/chief/metrics.hpp"
#include "actors/protocol/address.hpp"
#include "actors/deploy/remote_shard.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/system_config.hpp"
#include "actors/roles/shard_tables.hpp"
#include "kernels/denormals.hpp"
#include "kernels/sparse/sparse_table.hpp"
#include "actors/ps/splitmix64.hpp"

#include "apps/bench/bench_main.hpp"
#include "apps/bench/bench_scratch.hpp"
#include "apps/bench/bench_serve.hpp"

#include <boost/program_options.hpp>
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;
using bench_clock = std::chrono::steady_clock;
using ordered_json = nlohmann::ordered_json;

namespace {

/// Asks the probe in front of a served shard for the last request's handling time and the
/// process's memory, as one JSON text (an atom and a string cross processes unregistered).
using timings_atom = caf::atom_constant<caf::atom("timings")>;

double ms_between(bench_clock::time_point a, bench_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

/// A field of /proc/self/status in bytes ("VmHWM", "VmRSS"); -1 if missing.
double proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) * 1024;
  return -1;
}

// --- the shard process ------------------------------------------------------------------------

struct probe_state {
  static inline const char* name = "timed_shard";
  double last_ms = -1;   ///< the handling time of the last pull or push_pull answered
  uint64_t handled = 0;
};

/// Speaks ps_shard_actor in front of `shard`: times each push_pull and keyed pull from its
/// arrival to the shard's reply, passes everything else on. Linked to the shard: each stops
/// the other.
caf::behavior timed_shard(caf::stateful_actor<probe_state>* self, ps_shard_actor shard) {
  self->link_to(shard);
  auto timed = [=](auto atom, const auto& request) -> caf::result<wire_buffer> {
    auto t0 = bench_clock::now();
    auto promise = self->make_response_promise<wire_buffer>();
    self->request(shard, caf::infinite, atom, request)
      .then(
        [=](wire_buffer& reply) mutable {
          self->state.last_ms = ms_between(t0, bench_clock::now());
          ++self->state.handled;
          promise.deliver(std::move(reply));
        },
        [=](caf::error& err) mutable { promise.deliver(std::move(err)); });
    return promise;
  };
  return {
    // From a data link: timed whole (a reply of sparse rows never goes ahead in parts anyway);
    // a push still arriving is declined (the link asks again once it is whole), and the link's
    // notices of its progress are dropped.
    [=](push_pull_atom a, const push_request& push) -> caf::result<wire_buffer> {
      if (push.notice) return caf::delegated<wire_buffer>{};
      if (push.progress && push.progress->decline()) return wire_buffer{};
      return timed(a, push_request{push.bytes});
    },
    [=](pull_atom a, const wire_buffer& pull) { return timed(a, pull); },
    [=](init_atom a, const wire_buffer& init) { return self->delegate(shard, a, init); },
    // The data link learns the largest request it may take from the shard's stats and dense
    // snapshot (shard_link_server.cpp); without them it keeps the bound of a shard not yet
    // initialised (link_limits::frame_limit_before_init) and refuses every larger push.
    [=](stats_atom a) { return self->delegate(shard, a); },
    [=](snapshot_atom a) { return self->delegate(shard, a); },
    [=](timings_atom) {
      return ordered_json{{"handled_ms", self->state.last_ms},
                          {"handled", self->state.handled},
                          {"vm_hwm_bytes", proc_status_bytes("VmHWM")},
                          {"vm_rss_bytes", proc_status_bytes("VmRSS")}}
        .dump();
    },
  };
}

// --- the worker process -----------------------------------------------------------------------

struct options {
  uint64_t keys = 10000000;
  uint32_t dim = 1;
  int repeats = 3;
  int check_rows = 4096;    ///< rows of each pull checked against a local table
  int timeout_s = 300;
  int threads = 2;
  bool components = false;
  bool serve = false;
  int port = 0;
  bool tcp_only = false;
  std::string connect;
};

train_spec spec_for(const options& o) {
  train_spec spec;
  spec.model.name = "sparse_link";
  tensor_spec bias;  // a model needs one dense tensor
  bias.name = "bias";
  bias.shape = {1};
  spec.model.tensors = {bias};
  sparse_table_spec table;
  table.name = "emb";
  table.config.dim = o.dim;
  table.config.optimizer.kind = row_optimizer_kind::adagrad;
  table.config.optimizer.learning_rate = 0.1f;
  spec.model.sparse_tables.push_back(table);
  spec.block_floats = 1024;
  spec.shards = 1;
  spec.workers = 1;
  spec.mode = consistency::async;
  spec.optimizer.kind = optimizer_kind::sgd;
  spec.optimizer.learning_rate = 0.1f;
  place_buckets(spec);
  return spec;
}

/// Round r's keys: splitmix64 of r·n + i + 1, distinct within and across rounds (a bijection),
/// sorted ascending — as ps-lite requires of its pushes and as an actorps worker sends each
/// shard its keys (key_dedup sorts them).
std::vector<uint64_t> keys_of_round(uint64_t round, uint64_t n) {
  std::vector<uint64_t> keys(n);
  for (uint64_t i = 0; i < n; ++i) keys[i] = splitmix64_mix(round * n + i + 1);
  std::sort(keys.begin(), keys.end());
  return keys;
}

/// One request's figures, ms.
struct timing {
  double encode = 0, shard = 0, transfer = 0, decode = 0, total = 0;
  std::size_t request_bytes = 0, reply_bytes = 0;
};

struct worker {
  const options& o;
  train_spec spec;
  block_layout layout;
  caf::scoped_actor& self;
  ps_shard_actor handle;   // over the data link
  caf::actor probe;        // the shard process's timed_shard, over CAF
  std::chrono::seconds timeout;
  int64_t clock = 0;       // pushes so far: the next push's clock, and the pull's
  std::vector<float> dense_grad{0.0f}, grads, pulled;

  template <class... Ts>
  auto ask(Ts&&... xs) {
    caf::expected<wire_buffer> out{caf::none};
    self->request(handle, timeout, std::forward<Ts>(xs)...)
      .receive([&](wire_buffer& reply) { out = std::move(reply); },
               [&](caf::error& err) { out = std::move(err); });
    if (!out) throw std::runtime_error("request failed: " + describe(out.error()));
    return std::move(*out);
  }

  ordered_json probe_report() {
    std::string text;
    caf::error failed;
    self->request(probe, timeout, timings_atom::value)
      .receive([&](std::string& t) { text = std::move(t); }, [&](caf::error& e) { failed = e; });
    if (failed) throw std::runtime_error("the shard's probe: " + describe(failed));
    return ordered_json::parse(text);
  }

  shard_stats stats() {
    shard_stats out;
    caf::error failed;
    self->request(handle, timeout, stats_atom::value)
      .receive([&](shard_stats& s) { out = std::move(s); }, [&](caf::error& e) { failed = e; });
    if (failed) throw std::runtime_error("shard stats: " + describe(failed));
    return out;
  }

  /// Fills in shard and transfer from the probe, given the wait between send and reply.
  void split(timing& t, double wait_ms) {
    t.shard = probe_report()["handled_ms"].get<double>();
    t.transfer = wait_ms - t.shard;
  }

  timing push(const std::vector<uint64_t>& keys) {
    timing t;
    auto t0 = bench_clock::now();
    std::vector<sparse_rows_ref> rows{{0, o.dim, keys.data(), nullptr, keys.size(), grads.data()}};
    auto msg = encode_push(0, clock, 0, layout, dense_grad.data(), 0, rows);
    auto t1 = bench_clock::now();
    auto reply = ask(push_pull_atom::value, push_request{msg});
    auto t2 = bench_clock::now();
    auto view = decode_shard_parameters(reply);
    auto t3 = bench_clock::now();
    if (!view) throw std::runtime_error("push reply: " + describe(view.error()));
    ++clock;
    t.encode = ms_between(t0, t1);
    t.decode = ms_between(t2, t3);
    t.total = ms_between(t0, t3);
    t.request_bytes = msg.size_bytes();
    t.reply_bytes = reply.size_bytes();
    split(t, ms_between(t1, t2));
    return t;  // msg and reply are freed here, outside the timed span
  }

  timing pull(const std::vector<uint64_t>& keys) {
    timing t;
    auto t0 = bench_clock::now();
    std::vector<sparse_rows_ref> ask_keys{{0, o.dim, keys.data(), nullptr, keys.size(), nullptr}};
    auto msg = encode_pull(0, clock, 0, ask_keys);
    auto t1 = bench_clock::now();
    auto reply = ask(pull_atom::value, msg);
    auto t2 = bench_clock::now();
    auto view = decode_shard_parameters(reply);
    if (!view) throw std::runtime_error("pull reply: " + describe(view.error()));
    if (view->sparse.size() != 1 || view->sparse[0].value_count != pulled.size())
      throw std::runtime_error("the pull's reply does not carry one row per key asked");
    std::memcpy(pulled.data(), view->sparse[0].values, pulled.size() * sizeof(float));
    auto t3 = bench_clock::now();
    t.encode = ms_between(t0, t1);
    t.decode = ms_between(t2, t3);
    t.total = ms_between(t0, t3);
    t.request_bytes = msg.size_bytes();
    t.reply_bytes = reply.size_bytes();
    split(t, ms_between(t1, t2));
    return t;
  }

  /// The pulled rows of the first keys against a local table that took the same two pushes.
  void check_pulled(const std::vector<uint64_t>& keys) {
    auto n = std::min<std::size_t>(keys.size(), static_cast<std::size_t>(o.check_rows));
    sparse_table local(spec.model.sparse_tables[0].config, spec.seed, 0);
    local.apply(keys.data(), n, grads.data(), 1.0f);  // async, 1 live worker: lr_scale 1
    local.apply(keys.data(), n, grads.data(), 1.0f);
    std::vector<float> expected(n * o.dim);
    local.read(keys.data(), n, expected.data());
    if (std::memcmp(expected.data(), pulled.data(), expected.size() * sizeof(float)) != 0)
      throw std::runtime_error("pulled rows differ from a local table given the same pushes");
  }

  void expect_rows(uint64_t rows, const char* after) {
    auto s = stats();
    if (s.table_rows.size() != 1 || s.table_rows[0] != rows)
      throw std::runtime_error(std::string("after ") + after + " the shard holds "
                               + std::to_string(s.table_rows.empty() ? 0 : s.table_rows[0])
                               + " rows, expected " + std::to_string(rows));
  }
};

ordered_json summary(const std::vector<timing>& runs, uint64_t keys, double payload_bytes) {
  auto pick = [&](double timing::*field) {
    std::vector<double> v;
    for (const auto& t : runs) v.push_back(t.*field);
    return v;
  };
  auto total = pick(&timing::total);
  double ms = median(total);
  return {{"ms", ms},
          {"keys_per_s", double(keys) / (ms * 1e-3)},
          {"row_payload_GBps", payload_bytes / (ms * 1e-3) / 1e9},
          {"message_GBps", double(runs.front().request_bytes + runs.front().reply_bytes)
                             / (ms * 1e-3) / 1e9},
          {"all_ms", total},
          {"split_ms",
           {{"encode", median(pick(&timing::encode))},
            {"shard", median(pick(&timing::shard))},
            {"transfer", median(pick(&timing::transfer))},
            {"decode", median(pick(&timing::decode))}}}};
}

/// The shard's handling of a push that creates rows, one that updates them and a pull, in this
/// process without actors or sockets: what the shard (shard_pushes.cpp, shard_pulls.cpp) does with each, piece by
/// piece (ms).
ordered_json time_components(worker& w, const std::vector<uint64_t>& keys) {
  auto time = [](auto&& f) {
    auto t0 = bench_clock::now();
    f();
    return ms_between(t0, bench_clock::now());
  };
  shard_tables tables(w.spec, 0);
  std::vector<sparse_rows_ref> rows{{0, w.o.dim, keys.data(), nullptr, keys.size(), w.grads.data()}};
  auto push = encode_push(0, 0, 0, w.layout, w.dense_grad.data(), 0, rows);
  caf::expected<push_view> view{caf::none};
  caf::error invalid;
  ordered_json out;
  out["decode_push"] = time([&] { view = decode_push(push); });
  if (!view) throw std::runtime_error("decode_push: " + describe(view.error()));
  out["validate_push"] = time([&] { invalid = tables.validate(view->sparse, true); });
  if (invalid) throw std::runtime_error("validate: " + describe(invalid));
  out["of_which_find_duplicate"] = time([&] {
    if (find_duplicate(keys.data(), keys.size())) throw std::runtime_error("duplicate key");
  });
  out["apply_create"] = time([&] { tables.apply(view->sparse, 1.0f, 0); });
  out["apply_update"] = time([&] { tables.apply(view->sparse, 1.0f, 0); });
  std::vector<sparse_rows_ref> ask{{0, w.o.dim, keys.data(), nullptr, keys.size(), nullptr}};
  auto pull = encode_pull(0, 0, 0, ask);
  caf::expected<pull_view> asked{caf::none};
  out["decode_pull"] = time([&] { asked = decode_pull(pull); });
  if (!asked) throw std::runtime_error("decode_pull: " + describe(asked.error()));
  out["validate_pull"] = time([&] { invalid = tables.validate(asked->keys, false); });
  std::vector<float> bias(1, 0.0f);
  wire_buffer reply;
  out["encode_pull_reply_with_read"] = time([&] {
    reply = encode_shard_parameters(0, 0, -1, w.layout, bias.data(), asked->keys, tables.dims(),
                                    [&](uint32_t t, const uint64_t* k, std::size_t n, float* dst) {
                                      tables.read(t, k, n, dst);
                                    });
  });
  return out;
}

int run(const options& o) {
  flush_denormals_to_zero();
  auto load_before = load_average();
  caf::actor_system_config cfg;
  configure_system(cfg, o.threads, network_settings{});
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  const std::chrono::seconds timeout{o.timeout_s};
  auto found = connect_shard(sys, parse_address(o.connect, "--connect"), 0,
                             std::chrono::seconds(20), timeout);
  if (!found) throw std::runtime_error(describe(found.error()));
  auto connection = *found;
  if (!connection.link) throw std::runtime_error("the shard process offers no data link");
  auto spec = spec_for(o);
  worker w{o, spec, block_layout(spec), self, connection.handle,
           caf::actor_cast<caf::actor>(connection.shard), timeout, 0, {0.0f}, {}, {}};
  splitmix64 rng(99);
  w.grads.resize(o.keys * o.dim);
  for (auto& g : w.grads) g = static_cast<float>(0.02 * rng.next_unit() - 0.01);
  w.pulled.assign(o.keys * o.dim, 0.0f);  // the caller's array, touched before any timing

  std::vector<float> bias{0.0f};
  bool ok = false;
  self->request(w.handle, timeout, init_atom::value, encode_shard_init(spec, 0, w.layout, bias.data()))
    .receive([&](caf::ok_atom) { ok = true; }, [&](caf::error&) {});
  if (!ok) throw std::runtime_error("shard init failed");

  std::vector<timing> creates, updates, pulls;
  ordered_json warmup;
  uint64_t rows = 0;
  for (int round = 0; round <= o.repeats; ++round) {  // round 0: the warm-up
    auto keys = keys_of_round(static_cast<uint64_t>(round), o.keys);
    auto create = w.push(keys);
    w.expect_rows(rows += o.keys, "a push of fresh keys");
    auto update = w.push(keys);
    w.expect_rows(rows, "a push of the same keys");
    auto pull = w.pull(keys);
    w.check_pulled(keys);
    auto label = round == 0 ? std::string("warm-up") : "round " + std::to_string(round);
    std::fprintf(stderr, "%s: create %.1f ms, update %.1f ms, pull %.1f ms\n", label.c_str(),
                 create.total, update.total, pull.total);
    if (round == 0) {
      warmup = {{"push_create_ms", create.total}, {"push_update_ms", update.total},
                {"pull_ms", pull.total}};
      continue;
    }
    creates.push_back(create);
    updates.push_back(update);
    pulls.push_back(pull);
  }
  auto final_stats = w.stats();
  auto memory = w.probe_report();
  // Stopping the probe stops the shard (linked), which ends the shard process.
  self->send_exit(connection.shard, caf::exit_reason::user_shutdown);
  connection.close();

  double payload = double(o.keys) * o.dim * sizeof(float);
  auto table_rows = double(final_stats.table_rows.at(0));
  ordered_json result{
    {"bench", "sparse_link"},
    {"placement", "two processes over loopback"},
    {"transport", std::string("data link, ") + connection.transport()},
    {"keys", o.keys},
    {"dim", o.dim},
    {"optimizer", "adagrad"},
    {"learning_rate", 0.1},
    {"row_init", "zeros"},
    {"repeats", o.repeats},
    {"scheduler_threads", o.threads},
    {"row_payload_bytes", payload},
    {"message_bytes",
     {{"push", creates.front().request_bytes},
      {"push_reply", creates.front().reply_bytes},
      {"pull", pulls.front().request_bytes},
      {"pull_reply", pulls.front().reply_bytes}}},
    {"push_create", summary(creates, o.keys, payload)},
    {"push_update", summary(updates, o.keys, payload)},
    {"pull", summary(pulls, o.keys, payload)},
    {"warmup", warmup},
    {"shard",
     {{"table_rows", final_stats.table_rows.at(0)},
      {"table_bytes", final_stats.table_bytes},
      {"bytes_per_row", double(final_stats.table_bytes) / table_rows},
      {"peak_rss_bytes", memory["vm_hwm_bytes"]},
      {"rss_bytes_at_end", memory["vm_rss_bytes"]},
      {"peak_rss_bytes_per_row", memory["vm_hwm_bytes"].get<double>() / table_rows}}},
    {"load_average_before", load_before},
    {"load_average_after", load_average()}};
  if (o.components) result["shard_components_ms"] = time_components(w, keys_of_round(0, o.keys));
  std::printf("%s\n", render_json(result).c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  po::options_description desc("actorps_bench_sparse_link flags");
  desc.add_options()
    ("help,h", "print this help")
    ("keys", po::value(&o.keys)->default_value(o.keys), "distinct keys in each push and pull")
    ("dim", po::value(&o.dim)->default_value(o.dim), "floats per row")
    ("repeats", po::value(&o.repeats)->default_value(o.repeats),
     "timed rounds after the warm-up, each on fresh keys")
    ("check-rows", po::value(&o.check_rows)->default_value(o.check_rows),
     "rows of each pull checked against a local table")
    ("timeout", po::value(&o.timeout_s)->default_value(o.timeout_s), "request timeout, s")
    ("threads", po::value(&o.threads)->default_value(o.threads), "CAF scheduler threads")
    ("components", po::bool_switch(&o.components),
     "also time the shard's pieces of work in this process")
    ("connect", po::value(&o.connect), "drive the shard at HOST:PORT (worker process)")
    ("serve", po::bool_switch(&o.serve), "publish a shard on 127.0.0.1 and wait (shard process)")
    ("port", po::value(&o.port)->default_value(o.port), "--serve: the port (0: any free one)")
    ("tcp-link", po::bool_switch(&o.tcp_only),
     "--serve: offer the data link over loopback TCP only, not over a local socket");
  return run_benchmark("actorps_bench_sparse_link", argc, argv, desc, [&] {
    if (o.keys < 1 || o.dim < 1 || o.repeats < 1 || o.check_rows < 0 || o.timeout_s < 1
        || o.threads < 1)
      throw po::error("--keys, --dim, --repeats, --timeout and --threads must be positive");
    // A push carries the keys and the rows in two Data fields, each at most 2^29 - 1 bytes in
    // Cap'n Proto, and the whole message at most max_wire_bytes on the data link.
    const uint64_t data_limit = (uint64_t(1) << 29) - 1;
    if (o.keys * sizeof(uint64_t) > data_limit || o.keys * o.dim * sizeof(float) > data_limit
        || o.keys * (sizeof(uint64_t) + o.dim * sizeof(float)) + 4096 > max_wire_bytes)
      throw po::error("--keys x --dim too large for one message (a Data field holds at most "
                      "2^29 - 1 bytes)");
    if (o.port < 0 || o.port > 65535) throw po::error("--port wants a port");
    if (o.serve == !o.connect.empty())
      throw po::error("give either --serve (the shard process) or --connect HOST:PORT (the worker)");
  }, [&] {
    if (o.serve) {
      // The pushes are as large as the worker's --keys make them (10 M keys x dim 1: 120 MB),
      // past the 64 MiB a real shard allows a model's sparse part
      // (link_limits::sparse_request_allowance): this shard takes any message the wire can carry.
      link_limits limits;
      limits.sparse_request_allowance = max_wire_bytes;
      serve_bench_shard({static_cast<uint16_t>(o.port), o.threads, true, o.tcp_only, {}, {},
                         limits},
                        [](caf::actor_system& sys, ps_shard_actor shard) {
                          return caf::actor_cast<ps_shard_actor>(sys.spawn(timed_shard, shard));
                        });
    }
    return run(o);
  });
}
