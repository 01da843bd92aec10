#include "actors/deploy/deployment.hpp"

#include "actors/chief/cluster_view.hpp"

#include "actors/guard/connect.hpp"
#include "actors/guard/guarded_publish.hpp"
#include "actors/guard/tls_config.hpp"
#include "actors/protocol/log.hpp"
#include "actors/roles/ps_shard.hpp"
#include "actors/link/shard_link_server.hpp"
#include "actors/deploy/ps_task.hpp"
#include "actors/deploy/simulation.hpp"
#include "actors/deploy/task_node.hpp"
#include "actors/deploy/data_port.hpp"
#include "actors/deploy/exit_codes.hpp"
#include "actors/deploy/join_chief.hpp"
#include "actors/deploy/leave_notice.hpp"
#include "actors/deploy/metrics_endpoint.hpp"
#include "actors/guard/await_name.hpp"
#include "actors/protocol/errors.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <atomic>
#include <memory>
#include <mutex>

namespace actorps {

namespace {

bool is_orderly(const caf::error& reason) {
  return !reason || reason == caf::exit_reason::normal
         || reason == caf::exit_reason::user_shutdown;
}

/// Whether a request to the chief failed because the chief (or the way to it) was lost, not
/// because the chief answered with an error.
bool is_chief_lost(const caf::error& err) {
  return err == caf::sec::request_receiver_down || err == caf::sec::request_timeout
         || err == caf::exit_reason::remote_link_unreachable;
}

/// The exit status for the reason the chief stopped the task with, or answered its join with
/// (the chief stops the tasks of a run that is over with that run's stop reason, its join
/// handler of phase stopping, so a task restarted just as the run ended exits as the others
/// did): what the chief itself exits with for that end of the run (apps/cluster_commands.cpp).
int stop_status(const caf::error& reason) {
  if (is_orderly(reason)) return exit_code::success;
  if (is_error(reason, errc::cluster_mismatch)) return exit_code::usage;
  if (is_error(reason, errc::run_interrupted) || is_error(reason, errc::peer_unreachable)
      || is_chief_lost(reason))
    return exit_code::retryable;
  return exit_code::failed;
}

/// The host a task listens on: --bind when given, else its host in the spec.
std::string listen_host(const std::string& bind, const host_port& addr) {
  return bind.empty() ? addr.host : bind;
}

/// Publishes `handle` on the task's own address (its port, on --bind's address when given); the
/// error names the address. A connection refused there (a stranger, a failed TLS handshake, a
/// malformed BASP handshake) is logged under the task's name, at most 5 lines per 10 s.
template <class Handle>
caf::expected<uint16_t> publish_on(caf::actor_system& sys, const Handle& handle, const host_port& addr,
                                   const std::string& task, const std::string& bind = {}) {
  // SO_REUSEADDR: a restarted task may bind while the last run's sockets are in TIME_WAIT;
  // a port another process listens on is still refused.
  auto host = listen_host(bind, addr);
  auto port = publish_guarded(sys, handle, host, addr.port,  // rate-limited by publish_guarded
                              [task](const std::string& peer, const std::string& why) {
                                log_line(task, "refused a connection from " + peer + ": " + why);
                              });
  if (!port)
    return caf::make_error(caf::sec::cannot_open_port,
                           "cannot listen on " + host_port{host, addr.port}.text()
                             + " (in use, or not an address of this host): "
                             + describe(port.error()));
  return port;
}

/// Waits (backoff, up to the connect timeout) for the task's own host name to resolve, unless
/// it listens on --bind's address or nowhere; "" once it does, else why not.
std::string await_own_name(const deployment_options& opts) {
  auto own = opts.cluster.own_address(opts.task);
  if (!opts.bind.empty() || !own) return "";
  auto seconds = std::to_string(opts.connect_timeout.count() / 1000.0);
  seconds.erase(seconds.find_last_not_of('0') + 1);
  if (seconds.back() == '.') seconds.pop_back();
  auto why = await_name(own->host, opts.connect_timeout, [&](const std::string& first) {
    log_line(opts.task.text(), "its host name '" + own->host + "' does not resolve yet (" + first
                                 + "); retrying up to --connect-timeout " + seconds + " s");
  });
  return why.empty() ? why : why + " (--connect-timeout " + seconds + " s)";
}

/// Publishes `published` on the task's address (2 if it cannot), joins the chief with `join`
/// (a request to send), then waits until `role` stops or the chief is lost; returns the exit
/// status (exit_codes.hpp): the chief could not be reached or was lost, retryable; else
/// stop_status of the reason the role stopped with or the join was refused with.
template <class Published, class Role, class Join>
int serve(caf::actor_system& sys, const deployment_options& opts, const Published& published,
          const Role& role, Join join) {
  auto name = opts.task.text();
  auto local = caf::actor_cast<caf::actor>(role);
  // A task outside the cluster (TFJob's evaluator) is never dialled: it only dials the chief,
  // whose messages come back on that connection.
  auto own = opts.cluster.own_address(opts.task);
  if (own) {
    if (auto port = publish_on(sys, published, *own, name, opts.bind); !port) {
      log_line(log_level::error, name, describe(port.error()) + "; exiting 2");
      return 2;
    }
  }
  auto chief_addr = opts.cluster.address({"chief", 0});
  auto chief = connect_to<chief_actor>(sys, chief_addr, opts.connect_timeout);
  if (!chief) {
    // Not there yet, or gone: a restart may reach it. Another actor there: it would not.
    if (chief.error() == caf::sec::unexpected_actor_messaging_interface) {
      log_line(log_level::error, name, describe(chief.error()) + "; exiting "
                                         + std::to_string(exit_code::failed));
      return exit_code::failed;
    }
    log_line(log_level::warn, name, describe(chief.error()) + "; exiting " + std::to_string(exit_code::retryable)
                     + " (a restart may reach it)");
    return exit_code::retryable;
  }
  caf::scoped_actor self{sys};
  self->monitor(*chief);
  self->monitor(local);
  auto refused = join_chief(sys, *chief, opts.connect_timeout, join);
  if (refused) {
    auto status = stop_status(refused);
    log_line(status == exit_code::success ? log_level::info
             : status == exit_code::retryable ? log_level::warn
                                              : log_level::error,
             name, (status == exit_code::success ? "the run has ended already; exiting 0"
                    : is_chief_lost(refused)
                      ? "the chief was lost before it answered the join (" + describe(refused)
                          + "); exiting " + std::to_string(status)
                      : "the chief refused the join: " + describe(refused) + "; exiting "
                          + std::to_string(status)));
    return status;
  }
  arm_leave_notice(sys, *chief, opts.task);  // a signal from now on: the chief hears it first
  auto listening = own ? host_port{listen_host(opts.bind, *own), own->port}.text() : "";
  log_line(name, (own ? "serving on " + listening : std::string("outside the cluster"))
                   + ", joined the chief at " + chief_addr.text());
  // The role decides: the task exits by the reason its role stopped with. The chief's stop
  // order and the chief's disconnect travel on one connection, in that order; when the chief
  // is gone, the role is stopped with "chief lost" after whatever came before it, so a task
  // the chief told the run was over exits 0 even when it sees the chief leave first.
  auto chief_lost = make_error(errc::peer_unreachable, "the chief was lost");
  // Whether this process saw the chief go: a flag, not a comparison of reasons (caf::error
  // compares code and category only, so the chief's own stop order of a run failed as
  // peer_unreachable, "ps:1 did not come back", read as a lost chief).
  bool chief_gone = false;
  caf::error stopped_by;
  bool role_down = false;
  self->receive_while([&] { return !role_down; })([&](caf::down_msg& dm) {
    if (dm.source == local.address()) {
      role_down = true;
      stopped_by = dm.reason;
    } else if (is_orderly(dm.reason)) {
      self->send_exit(local, caf::exit_reason::user_shutdown);  // the run has ended
    } else {
      log_line(log_level::warn, name, "the chief at " + chief_addr.text() + " is gone (" + describe(dm.reason)
                       + ")");
      chief_gone = true;
      self->send_exit(local, chief_lost);
    }
  });
  if (is_orderly(stopped_by)) return exit_code::success;
  if (chief_gone && stopped_by == chief_lost) {
    log_line(log_level::warn, name, "stopping, exiting " + std::to_string(exit_code::retryable)
                     + " (a restart joins the chief's next run)");
    return exit_code::retryable;
  }
  int status = stop_status(stopped_by);
  log_line(status == exit_code::retryable ? log_level::warn : log_level::error, name, "stopped: " + describe(stopped_by) + "; exiting " + std::to_string(status));
  return status;
}

/// --prometheus-port: the task's /metrics on its listening address (null when not asked for);
/// the error names the address.
caf::expected<std::unique_ptr<metrics_endpoint>> serve_metrics(caf::actor_system& sys,
                                                               const deployment_options& opts) {
  if (opts.prometheus_port == 0) return std::unique_ptr<metrics_endpoint>{};
  auto own = opts.cluster.own_address(opts.task);
  auto host = own ? listen_host(opts.bind, *own) : opts.bind.empty() ? "127.0.0.1" : opts.bind;
  auto endpoint = metrics_endpoint::open(sys, host, opts.prometheus_port);
  if (endpoint)
    log_line(opts.task.text(), "serving /metrics on " + (*endpoint)->address()
                                 + " (unauthenticated)");
  return endpoint;
}

} // namespace

void configure_task_system(caf::actor_system_config& cfg, const deployment_options& opts) {
  configure_system(cfg, opts.scheduler_threads, opts.network);
  configure_tls(cfg, opts.tls);
}

caf::expected<hosted_shard> host_shard(caf::actor_system& sys, const cluster_spec& cluster,
                                       int32_t index, int32_t finish_after,
                                       int32_t training, const std::string& bind,
                                       uint16_t data_port,
                                       shard_config shard_cfg, const tls_files& tls,
                                       std::chrono::milliseconds connect_timeout) {
  auto name = task_id{"ps", index}.text();
  auto host = listen_host(bind, cluster.address({"ps", index}));
  auto links = shard_link_server::listen(
    host, data_port, [name](const std::string& line) { log_line(name, line); }, {}, tls);
  if (!links) return links.error();
  if (data_port != 0)
    log_line(name, "data link on " + host_port{host, (*links)->port()}.text());
  // The refusals of its data link and of its ps task are the shard's to report.
  auto task_refusals = std::make_shared<std::atomic<uint64_t>>(0);
  auto own_cfg = shard_cfg;
  own_cfg.refusals_elsewhere = [link = (*links)->unauthorised_counter(), task_refusals] {
    return static_cast<uint64_t>(link()) + task_refusals->load();
  };
  auto shard = spawn_ps_shard(sys, index, std::move(own_cfg));
  (*links)->serve(sys, shard, index);
  ps_task_config task_cfg{shard, (*links)->port(), (*links)->local_name(), finish_after,
                          training, index, std::move(shard_cfg)};
  task_cfg.refusals = task_refusals;
  for (int32_t p = 0; p < cluster.count("ps"); ++p)  // a standby spawned here dials its primary
    task_cfg.ps_addresses.push_back(cluster.address({"ps", p}));
  task_cfg.connect_timeout = connect_timeout;
  auto task = spawn_ps_task(sys, std::move(task_cfg));
  return hosted_shard{shard, task, std::move(*links)};
}

int run_task(caf::actor_system& sys, const deployment_options& opts) {
  auto index = static_cast<int32_t>(opts.task.index);
  if (!opts.tls.enabled()) warn_unauthenticated(opts.task.text());
  if (auto why = await_own_name(opts); !why.empty()) {
    log_line(log_level::warn, opts.task.text(),
             why + "; exiting " + std::to_string(exit_code::retryable));
    return exit_code::retryable;
  }
  auto endpoint = serve_metrics(sys, opts);  // destroyed before `sys`, which the caller holds
  if (!endpoint) {
    log_line(log_level::error, opts.task.text(), describe(endpoint.error()) + "; exiting 2");
    return exit_code::usage;
  }
  if (opts.task.type == "ps") {
    uint16_t data_port = 0;
    try {
      data_port = data_port_of(opts.cluster, opts.task, opts.data_port);
    } catch (const cluster_error& e) {
      log_line(log_level::error, opts.task.text(), std::string(e.what()) + "; exiting 2");
      return exit_code::usage;
    }
    auto hosted =
      host_shard(sys, opts.cluster, index, 0, 0, opts.bind, data_port, opts.shard, opts.tls,
                 opts.connect_timeout);
    if (!hosted) {
      log_line(log_level::error, opts.task.text(), describe(hosted.error()) + "; exiting 2");
      return 2;
    }
    auto shard = hosted->shard;
    auto task = hosted->task;
    return serve(sys, opts, task, shard, [&](auto* self, const chief_actor& chief) {
      return self->request(chief, opts.connect_timeout, join_atom::value, index, shard, task,
                           cluster_view_text(opts.cluster.jobs));
    });
  }
  auto node = spawn_task_node(sys, {opts.task.text(), opts.connect_timeout, opts.tls});
  return serve(sys, opts, node, node, [&](auto* self, const chief_actor& chief) {
    return self->request(chief, opts.connect_timeout, join_atom::value, opts.task.type, index, node,
                         cluster_view_text(opts.cluster.jobs));
  });
}

int serve_shard_of_own_loop(caf::actor_system& sys, const cluster_spec& cluster, int32_t index,
                            int32_t training) {
  auto name = task_id{"ps", index}.text();
  auto workers = static_cast<int32_t>(cluster.count("worker"));
  auto hosted = host_shard(sys, cluster, index, workers, training);
  if (!hosted) {
    log_line(log_level::error, name, describe(hosted.error()) + "; exiting 2");
    return 2;
  }
  caf::scoped_actor self{sys};
  self->monitor(hosted->task);
  if (auto port = publish_on(sys, hosted->task, cluster.address({"ps", index}), name); !port) {
    log_line(log_level::error, name, describe(port.error()) + "; exiting 2");
    self->send_exit(hosted->shard, caf::exit_reason::user_shutdown);
    return 2;
  }
  int status = 0;
  self->receive([&](caf::down_msg& dm) {
    status = is_orderly(dm.reason) ? 0 : 1;
    if (status) log_line(log_level::error, name, "stopped: " + describe(dm.reason));
  });
  return status;
}

caf::expected<run_summary> run_chief_task(const deployment_options& opts, chief_config cfg,
                                          const std::function<void(stop_request)>& on_start) {
  if (!opts.tls.enabled()) warn_unauthenticated("chief");
  caf::actor_system_config sys_cfg;
  configure_task_system(sys_cfg, opts);
  caf::actor_system sys{sys_cfg};
  if (auto why = await_own_name(opts); !why.empty())
    return make_error(errc::peer_unreachable, why);
  auto endpoint = serve_metrics(sys, opts);
  if (!endpoint) return endpoint.error();
  if (*endpoint) {
    if (!cfg.metrics) cfg.metrics = std::make_shared<metrics_file>("");
    (*endpoint)->count_events_of(*cfg.metrics);
  }
  auto chief = spawn_chief(sys, std::move(cfg));
  if (auto port = publish_on(sys, chief, opts.cluster.address(opts.task), "chief", opts.bind);
      !port) {
    caf::anon_send_exit(chief, caf::exit_reason::kill);
    return port.error();
  }
  // The stop request may come from another thread at any time: it reaches the chief only while
  // this function runs (the handle is dropped, under the lock, before `sys` ends).
  struct door {
    std::mutex mutex;
    chief_actor chief;
  };
  auto to_chief = std::make_shared<door>();
  to_chief->chief = chief;
  auto result = run_to_end(sys, chief, [&] {  // after (run): a stop request comes second
    if (on_start)
      on_start([to_chief](const std::string& why) {
        std::lock_guard<std::mutex> guard(to_chief->mutex);
        if (to_chief->chief) caf::anon_send(to_chief->chief, interrupt_atom::value, why);
      });
  });
  std::lock_guard<std::mutex> guard(to_chief->mutex);
  to_chief->chief = nullptr;
  return result;
}

} // namespace actorps
