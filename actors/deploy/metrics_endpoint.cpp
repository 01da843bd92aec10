#include "actors/deploy/metrics_endpoint.hpp"

#include "actors/protocol/messages.hpp"
#include "actors/roles/shard_census.hpp"

#include <CivetServer.h>
#include <caf/all.hpp>
#include <civetweb.h>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <vector>

namespace actorps {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

/// How long a scrape waits for one shard's stats (a shard busy with a long update answers late;
/// Prometheus's own scrape timeout is 10 s by default).
constexpr auto stats_timeout = std::chrono::seconds(2);

/// The run as the chief's metrics events tell it: an observer of its metrics file, holding the
/// registry it counts in (an event after the endpoint is gone changes nothing anyone reads).
struct chief_counts : metrics_observer {
  explicit chief_counts(std::shared_ptr<prometheus::Registry> registry)
    : chief_counts(*registry) {
    owner = std::move(registry);
  }
  explicit chief_counts(prometheus::Registry& r)
    : samples(prometheus::BuildCounter()
                .Name("actorps_samples_total")
                .Help("Rows trained, as the workers' train reports (train events) count them")
                .Register(r)
                .Add({})),
      samples_per_s(prometheus::BuildGauge()
                      .Name("actorps_samples_per_second")
                      .Help("Rows trained per second of training so far (the progress line's)")
                      .Register(r)
                      .Add({})),
      reports(prometheus::BuildCounter()
                .Name("actorps_clocks_total")
                .Help("Clocks the workers finished and reported, every worker's")
                .Register(r)
                .Add({})),
      worker_clock(prometheus::BuildGauge()
                     .Name("actorps_worker_clock")
                     .Help("Clocks each worker has finished (the global clock is their min)")
                     .Register(r)),
      loss(prometheus::BuildGauge()
             .Name("actorps_train_loss")
             .Help("Each worker's last training loss")
             .Register(r)),
      staleness(prometheus::BuildHistogram()
                  .Name("actorps_staleness")
                  .Help("Clocks between a worker's clock and the oldest its parameters waited "
                        "for, per train report")
                  .Register(r)
                  .Add({}, prometheus::Histogram::BucketBoundaries{0, 1, 2, 3, 4, 6, 8, 16, 32})),
      evaluations(prometheus::BuildCounter()
                    .Name("actorps_evaluations_total")
                    .Help("Evaluations on the test set")
                    .Register(r)
                    .Add({})),
      test(prometheus::BuildGauge()
             .Name("actorps_test")
             .Help("The last evaluation's figures (metric: accuracy, loss, auc, logloss)")
             .Register(r)),
      events(prometheus::BuildCounter()
               .Name("actorps_events_total")
               .Help("The run's events by kind (event: checkpoint, checkpoint_failed, "
                     "checkpoint_skipped, failure, recovery, failover, rereplicated, "
                     "standby_lost, resize, skipped, kill, workers_lost)")
               .Register(r)),
      checkpoints(prometheus::BuildCounter()
                    .Name("actorps_checkpoints_total")
                    .Help("Checkpoints written (result: written) and failed (result: failed)")
                    .Register(r)),
      failovers(prometheus::BuildCounter()
                  .Name("actorps_failovers_total")
                  .Help("Lost primary shards whose standby took over")
                  .Register(r)
                  .Add({})),
      recoveries(prometheus::BuildCounter()
                   .Name("actorps_recoveries_total")
                   .Help("Lost roles recovered (a replacement, or a rollback), by role")
                   .Register(r)),
      resizes(prometheus::BuildCounter()
                .Name("actorps_resizes_total")
                .Help("Changes of the cluster's size while it trains")
                .Register(r)
                .Add({})) {
    checkpoints.Add({{"result", "written"}});
    checkpoints.Add({{"result", "failed"}});
  }

  void on_event(const nlohmann::ordered_json& e) override {
    try {
      count(e);
    } catch (const nlohmann::json::exception&) {
      // a field of another type than counted here (value() throws): this event goes uncounted,
      // the chief, on whose thread this runs, goes on
    }
  }
  void flush() override {}  // counters hold nothing back

  void count(const nlohmann::ordered_json& e) {
    auto kind = e.value("event", std::string());
    if (kind == "train") {
      auto rows = e.value("samples", int64_t{0});
      if (rows > 0) samples.Increment(static_cast<double>(rows));
      reports.Increment();
      auto& [clock, last_loss] = of_worker(e.value("worker", -1));
      clock->Set(static_cast<double>(e.value("clock", int64_t{0}) + 1));
      last_loss->Set(e.value("loss", 0.0));
      staleness.Observe(static_cast<double>(e.value("staleness", int64_t{0})));
      auto wall = e.value("wall_s", 0.0);
      if (wall > 0) samples_per_s.Set(samples.Value() / wall);
      return;
    }
    if (kind == "eval") {
      evaluations.Increment();
      for (const char* figure : {"accuracy", "loss", "auc", "logloss"}) {
        auto v = e.find(std::string("test_") + figure);
        if (v != e.end() && v->is_number()) test.Add({{"metric", figure}}).Set(v->get<double>());
      }
      return;
    }
    if (kind.empty() || kind == "start" || kind == "summary" || kind == "kill_not_fired") return;
    events.Add({{"event", kind}}).Increment();
    if (kind == "checkpoint") checkpoints.Add({{"result", "written"}}).Increment();
    if (kind == "checkpoint_failed") checkpoints.Add({{"result", "failed"}}).Increment();
    if (kind == "failover") failovers.Increment();
    if (kind == "recovery")
      recoveries.Add({{"role", e.value("role", std::string("?"))}}).Increment();
    if (kind == "resize") resizes.Increment();
  }

  /// Worker w's clock and loss gauges (looked up once: Family::Add takes a lock).
  std::pair<prometheus::Gauge*, prometheus::Gauge*>& of_worker(int32_t w) {
    auto& gauges = workers[w];
    if (!gauges.first) {
      gauges.first = &worker_clock.Add({{"worker", std::to_string(w)}});
      gauges.second = &loss.Add({{"worker", std::to_string(w)}});
    }
    return gauges;
  }

  prometheus::Counter& samples;
  prometheus::Gauge& samples_per_s;
  prometheus::Counter& reports;
  prometheus::Family<prometheus::Gauge>& worker_clock;
  prometheus::Family<prometheus::Gauge>& loss;
  prometheus::Histogram& staleness;
  prometheus::Counter& evaluations;
  prometheus::Family<prometheus::Gauge>& test;
  prometheus::Family<prometheus::Counter>& events;
  prometheus::Family<prometheus::Counter>& checkpoints;
  prometheus::Counter& failovers;
  prometheus::Family<prometheus::Counter>& recoveries;
  prometheus::Counter& resizes;
  std::map<int32_t, std::pair<prometheus::Gauge*, prometheus::Gauge*>> workers;
  std::shared_ptr<prometheus::Registry> owner;
};

MetricFamily family(const char* name, const char* help, MetricType type) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

void add_value(MetricFamily& f, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f.type == MetricType::Counter) m.counter.value = value;
  else m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

/// The process's CPU seconds (user + system) and resident and virtual memory, from /proc/self;
/// -1 where it cannot be read.
struct process_figures {
  double cpu_s = -1, resident_bytes = -1, virtual_bytes = -1;
};

process_figures read_process() {
  process_figures out;
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // after the command's name in parentheses (which may hold spaces): state is field 3, utime
  // and stime fields 14 and 15
  if (auto close = text.rfind(')'); close != std::string::npos) {
    std::istringstream fields(text.substr(close + 1));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    if (fields) out.cpu_s = double(utime + stime) / double(::sysconf(_SC_CLK_TCK));
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    auto kib = [&](const char* key, double& into) {
      if (line.rfind(key, 0) == 0) into = std::stod(line.substr(std::string(key).size())) * 1024;
    };
    kib("VmRSS:", out.resident_bytes);
    kib("VmSize:", out.virtual_bytes);
  }
  return out;
}

/// What the process holds, read when scraped: its CPU and memory, and every shard's stats.
class process_collectable : public prometheus::Collectable {
public:
  explicit process_collectable(caf::actor_system& sys) : sys_(sys) {}

  std::vector<MetricFamily> Collect() const override {
    // on a thread with a whole stack (see answer_elsewhere); scrapes are seconds apart
    return std::async(std::launch::async, [this] { return collect(); }).get();
  }

private:
  std::vector<MetricFamily> collect() const {
    std::vector<MetricFamily> out;
    auto proc = read_process();
    auto cpu = family("process_cpu_seconds_total", "User and system CPU time of this process",
                      MetricType::Counter);
    if (proc.cpu_s >= 0) add_value(cpu, {}, proc.cpu_s);
    auto rss = family("process_resident_memory_bytes", "Resident memory of this process",
                      MetricType::Gauge);
    if (proc.resident_bytes >= 0) add_value(rss, {}, proc.resident_bytes);
    auto vsz = family("process_virtual_memory_bytes", "Virtual memory of this process",
                      MetricType::Gauge);
    if (proc.virtual_bytes >= 0) add_value(vsz, {}, proc.virtual_bytes);
    out.push_back(std::move(cpu));
    out.push_back(std::move(rss));
    out.push_back(std::move(vsz));
    collect_shards(out);
    return out;
  }

  void collect_shards(std::vector<MetricFamily>& out) const {
    auto members = shard_census::process().alive(sys_);
    if (members.empty()) return;
    using T = MetricType;
    auto pushes = family("actorps_shard_pushes_total", "Valid pushes the shard accepted",
                         T::Counter);
    auto pulls = family("actorps_shard_pulls_total", "Pulls the shard answered", T::Counter);
    auto held = family("actorps_shard_pulls_held_total",
                       "Pulls that waited for the consistency rule", T::Counter);
    auto updates = family("actorps_shard_updates_total", "Optimizer updates applied", T::Counter);
    auto refusals = family("actorps_shard_refusals_total",
                           "Messages refused, by reason: malformed (dropped as invalid), "
                           "unauthorised, gradient_value, gradient_norm, checkpoint_path, "
                           "update_bound (updates and rows refused, the state unchanged)",
                           T::Counter);
    auto rows = family("actorps_shard_rows", "Rows of each sparse table on the shard", T::Gauge);
    auto table_bytes = family("actorps_shard_table_bytes", "Memory the sparse tables hold",
                              T::Gauge);
    auto rows_peak = family("actorps_shard_rows_peak",
                            "The most rows each sparse table on the shard has held", T::Gauge);
    auto evicted = family("actorps_shard_rows_evicted_total",
                          "Sparse rows evicted (--evict-after, --max-rows-per-shard)", T::Counter);
    auto pending = family("actorps_shard_pending_keys",
                          "Keys counted for admission, without a row yet", T::Gauge);
    auto admission_bytes = family("actorps_shard_admission_bytes",
                                  "Memory the counts of keys pending admission hold "
                                  "(--admission-memory bounds it)", T::Gauge);
    auto link_bytes = family("actorps_shard_link_bytes_total",
                             "Bytes on the shard's links: pushes received (direction: in, wire "
                             "bytes), state and pushes sent to its standby (direction: standby)",
                             T::Counter);
    auto min_clock = family("actorps_shard_min_clock", "The smallest clock of a live worker",
                            T::Gauge);
    auto max_staleness = family("actorps_shard_max_staleness",
                                "The largest staleness of a pull the shard answered", T::Gauge);
    caf::scoped_actor self{sys_};
    for (const auto& m : members) {
      std::vector<ClientMetric::Label> who{{"shard", std::to_string(m.shard)},
                                           {"replica", m.standby ? "standby" : "primary"}};
      auto with = [&](const char* name, const std::string& value) {
        auto labels = who;
        labels.push_back({name, value});
        return labels;
      };
      self->request(m.actor, stats_timeout, stats_atom::value)
        .receive(
          [&](const shard_stats& s) {
            add_value(pushes, who, double(s.pushes));
            add_value(pulls, who, double(s.pulls_served));
            add_value(held, who, double(s.pulls_held));
            add_value(updates, who, double(s.updates));
            // dropped counts every refused message; these reasons are among them
            uint64_t named = s.refused_unauthorised + s.gradients_refused + s.norms_refused
                             + s.checkpoints_refused;
            add_value(refusals, with("reason", "malformed"),
                      double(s.dropped > named ? s.dropped - named : 0));
            add_value(refusals, with("reason", "unauthorised"), double(s.refused_unauthorised));
            add_value(refusals, with("reason", "gradient_value"), double(s.gradients_refused));
            add_value(refusals, with("reason", "gradient_norm"), double(s.norms_refused));
            add_value(refusals, with("reason", "checkpoint_path"), double(s.checkpoints_refused));
            add_value(refusals, with("reason", "update_bound"), double(s.updates_refused));
            for (std::size_t t = 0; t < s.table_rows.size(); ++t)
              add_value(rows, with("table", std::to_string(t)), double(s.table_rows[t]));
            for (std::size_t t = 0; t < s.table_rows_peak.size(); ++t)
              add_value(rows_peak, with("table", std::to_string(t)), double(s.table_rows_peak[t]));
            if (!s.table_rows.empty()) {
              add_value(table_bytes, who, double(s.table_bytes));
              add_value(evicted, who, double(s.rows_evicted));
              add_value(pending, who, double(s.pending_keys));
              add_value(admission_bytes, who, double(s.admission_bytes));
            }
            add_value(link_bytes, with("direction", "in"), double(s.pushed_bytes));
            add_value(link_bytes, with("direction", "standby"), double(s.replicated_bytes));
            add_value(min_clock, who, double(s.min_clock));
            add_value(max_staleness, who, double(s.max_staleness));
          },
          [&](const caf::error&) {});  // stopped meanwhile, or too busy: not in this scrape
    }
    for (auto* f : {&pushes, &pulls, &held, &updates, &refusals, &rows, &rows_peak, &table_bytes,
                    &evicted, &pending, &admission_bytes, &link_bytes, &min_clock, &max_staleness})
      if (!f->metric.empty()) out.push_back(std::move(*f));
  }

  caf::actor_system& sys_;
};

// civetweb's worker threads have 100 KiB of stack (Debian builds it with USE_STACK_SIZE), and
// this process's static thread-local storage (OpenBLAS's alone is 60 KiB) takes most of it:
// civetweb's own answer to a path it has no handler for overflows what is left, and a GET of
// /elsewhere would crash the run. So every request but a GET or HEAD of /metrics, and every
// error civetweb would send, is answered here in a few bytes of stack; and a scrape's work
// (asking the shards) runs on a thread of its own (process_collectable::Collect).

/// A bodyless answer with `status`; the connection closes after it.
void send_status(mg_connection* conn, int status) {
  char head[160];
  int n = std::snprintf(head, sizeof head,
                        "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        status, mg_get_response_code_text(conn, status));
  if (n > 0) mg_write(conn, head, static_cast<std::size_t>(n));
}

/// civetweb's begin_request: 0 lets the exposer serve a GET or HEAD of /metrics; anything else
/// is answered here (404, 405), its status returned.
int answer_elsewhere(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (!info || !info->local_uri || std::strcmp(info->local_uri, "/metrics") != 0) {
    send_status(conn, 404);
    return 404;
  }
  if (!info->request_method || (std::strcmp(info->request_method, "GET") != 0
                                && std::strcmp(info->request_method, "HEAD") != 0)) {
    send_status(conn, 405);
    return 405;
  }
  return 0;
}

/// civetweb's http_error: a malformed or oversized request and the like (0: answered).
int answer_error(mg_connection* conn, int status, const char*) {
  send_status(conn, status);
  return 0;
}

/// `host` as an address civetweb listens on ("127.0.0.1", "[::1]"): a name is resolved here;
/// "" and `why` when it cannot be.
std::string listen_address(const std::string& host, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0 || !found) {
    why = std::string("cannot resolve ") + host + ": " + ::gai_strerror(rc);
    return "";
  }
  char text[INET6_ADDRSTRLEN] = {};
  std::string out;
  if (found->ai_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr, text,
                sizeof text);
    out = std::string("[") + text + "]";
  } else {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
                sizeof text);
    out = text;
  }
  ::freeaddrinfo(found);
  return out;
}

} // namespace

struct metrics_endpoint::impl {
  std::string address;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::shared_ptr<process_collectable> process;
  std::shared_ptr<prometheus::Registry> chief_registry;
};

metrics_endpoint::metrics_endpoint(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

metrics_endpoint::~metrics_endpoint() {
  impl_->exposer.reset();  // its threads end before what they read goes
}

caf::expected<std::unique_ptr<metrics_endpoint>>
metrics_endpoint::open(caf::actor_system& sys, const std::string& host, uint16_t port,
                       metrics_endpoint_limits limits) {
  auto where = host + ":" + std::to_string(port);
  std::string why;
  auto address = listen_address(host, why);
  if (address.empty())
    return caf::make_error(caf::sec::cannot_open_port,
                           "cannot serve /metrics on " + where + ": " + why);
  auto state = std::make_unique<impl>();
  static const CivetCallbacks callbacks = [] {
    CivetCallbacks c;
    c.begin_request = answer_elsewhere;
    c.http_error = answer_error;
    return c;
  }();
  try {
    state->exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
      "listening_ports", address + ":" + std::to_string(port),
      "num_threads", std::to_string(limits.threads),
      "connection_queue", std::to_string(limits.queued),
      "max_request_size", std::to_string(limits.max_request_bytes),
      "request_timeout_ms", std::to_string(limits.idle_ms),
      "enable_keep_alive", "no",
    }, &callbacks);
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::cannot_open_port,
                           "cannot serve /metrics on " + where
                             + " (in use, or not an address of this host): " + e.what());
  }
  auto ports = state->exposer->GetListeningPorts();
  state->address = address + ":" + std::to_string(ports.empty() ? port : ports.front());
  state->process = std::make_shared<process_collectable>(sys);
  state->exposer->RegisterCollectable(state->process);
  return std::unique_ptr<metrics_endpoint>(new metrics_endpoint(std::move(state)));
}

void metrics_endpoint::count_events_of(metrics_file& file) {
  if (!impl_->chief_registry) {
    impl_->chief_registry = std::make_shared<prometheus::Registry>();
    impl_->exposer->RegisterCollectable(impl_->chief_registry);
  }
  file.add_observer(std::make_shared<chief_counts>(impl_->chief_registry));
}

const std::string& metrics_endpoint::address() const { return impl_->address; }

} // namespace actorps
