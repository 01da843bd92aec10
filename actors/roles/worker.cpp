#include "actors/roles/worker.hpp"

#include "actors/roles/authorisation.hpp"
#include "actors/roles/batch_tables.hpp"
#include "actors/protocol/buffer_lease.hpp"
#include "actors/protocol/log.hpp"
#include "actors/model/registry.hpp"
#include "kernels/denormals.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <functional>
#include <limits>

namespace actorps {

namespace {

/// The request in flight to one shard, kept until answered: with --replicas 1 it is sent again
/// to the shard's standby once that takes over (reroute).
struct request_in_flight {
  uint64_t id = 0;               // 0: none in flight
  bool push = false;
  std::function<void()> resend;
  std::chrono::steady_clock::time_point sent;  // for the watchdog
};

struct worker_state {
  static inline const char* name = "worker";

  worker_config cfg;
  std::shared_ptr<const block_layout> layout;
  std::unique_ptr<data_shard> data;
  std::unique_ptr<trainer> model;  // the model plug-in's half for this worker
  // Flat, model order. params is shared with the data link proxies that receive replies
  // straight into it (worker_config::destinations).
  std::shared_ptr<std::vector<float>> params;
  float_buffer grads;  // in the link arena: a shared-memory link sends its blocks by reference
  // Held by the pushes built on grads by reference (a data link still sending one, a shard in
  // this process keeping one): the next step then writes another buffer (buffer_lease.hpp),
  // one given back to `spares` when the push holding it let go. In sync mode a shard keeps each
  // worker's last push until the next (shard_pushes.cpp: for a standby's image), so this is
  // every clock there.
  std::shared_ptr<buffer_lease> grads_lease;
  std::shared_ptr<buffer_pool> spares = std::make_shared<buffer_pool>();
  // Sparse tables: `rows` is the clock whose rows the pending replies bring (and the next step
  // reads and fills with gradients); `next` is scratch for the following clock's keys.
  batch_tables rows, next;
  std::vector<std::vector<uint64_t>> keys;  // scratch: the trainer's keys per table
  int64_t clock = 0;            // the clock being computed
  std::size_t awaiting = 0;     // shard replies still missing for this clock
  int64_t staleness = 0;        // of the parameters being received
  int64_t newest_clock = -1;    // the smallest newest_clock of the replies received
  int64_t refused = 0;          // messages refused as not authorised (in its reports)
  step_loss last;
  std::vector<request_in_flight> in_flight;  // per shard
  uint64_t last_request = 0;
  // Train reports not sent yet, and when the last batch went (send_reports).
  std::vector<train_report> reports;
  std::chrono::steady_clock::time_point reports_sent;
  bool chief_elsewhere = false;  // the chief runs in another process

  std::string who() const { return "worker:" + std::to_string(cfg.index); }

  // A push may outlive the worker (queued on a link, kept by a shard): it gets the gradient.
  ~worker_state() { release_for_writing(grads, grads_lease); }
};

using self_ptr = worker_actor::stateful_pointer<worker_state>;

void compute(self_ptr self);

/// The clock the worker is done at: its last clock trains the last minibatch of its data.
int64_t end_clock(const worker_config& cfg) { return cfg.steps + cfg.data_offset; }

/// The minibatch of its data that `clock` trains.
int64_t batch_of(const worker_config& cfg, int64_t clock) { return clock - cfg.data_offset; }

void fail(self_ptr self, const std::string& what, const caf::error& err) {
  log_line(self->state.who(), what + ": " + describe(err));
  self->quit(err);
}

/// Every clock's report goes to the chief. To a chief in this process at once; to one in
/// another process in batches of at least 20 ms, the last when the worker is done: each
/// message across processes costs both sides a serialization, a socket write and the wake-up
/// of CAF's network thread, per clock of every worker, on cores the kernels need. The chief
/// takes every report of a batch in order, up to 20 ms later than one by one.
void send_reports(self_ptr self, bool now) {
  auto& st = self->state;
  constexpr auto batch_interval = std::chrono::milliseconds(20);
  if (st.reports.empty()) return;
  auto t = std::chrono::steady_clock::now();
  if (!now && st.chief_elsewhere && t - st.reports_sent < batch_interval) return;
  self->send(st.cfg.chief, train_atom::value, std::move(st.reports));
  st.reports.clear();
  st.reports_sent = t;
}

/// Takes one shard's parameter reply; starts the next clock once every shard has answered.
void on_parameters(self_ptr self, const wire_buffer& reply) {
  auto& st = self->state;
  auto msg = scatter_shard_parameters(reply, *st.layout, st.params->data());
  if (!msg) return fail(self, "bad parameters from a shard", msg.error());
  if (auto err = st.rows.take_rows(msg->shard, msg->sparse))
    return fail(self, "bad sparse rows from a shard", err);
  st.staleness = std::max(st.staleness, st.clock - msg->min_clock);
  st.newest_clock = std::min(st.newest_clock, msg->newest_clock);
  if (--st.awaiting > 0) return;
  if (st.clock >= end_clock(st.cfg)) {
    send_reports(self, true);  // before done: the chief counts every clock of a finished worker
    self->send(st.cfg.chief, done_atom::value, st.cfg.index);
    self->quit();
    return;
  }
  compute(self);
}

/// Starts waiting for one parameter reply per shard (for st.clock).
void expect_replies(worker_state& st) {
  st.awaiting = st.cfg.shards.size();
  st.staleness = 0;
  st.newest_clock = std::numeric_limits<int64_t>::max();
}

/// Request `id` to shard `s` failed with `err` (the newest to it, else ignored).
void on_request_failed(self_ptr self, std::size_t s, uint64_t id, caf::error err) {
  auto& st = self->state;
  if (st.in_flight[s].id != id) return;
  // (in another process the data link's loss says shard_lost, or, when the link broke in the
  // middle of a reply received in place, remote_link_unreachable)
  if ((err == caf::sec::request_receiver_down || err == errc::shard_lost
       || err == caf::exit_reason::remote_link_unreachable)
      && st.cfg.standbys) {
    log_line(st.who(), "shard " + std::to_string(s) + " is gone; its request waits for the standby");
    return;  // (reroute) sends it again
  }
  // A shard that is gone is the chief's to repair (it restarts every worker from a
  // checkpoint); say so in the exit reason, so this is not counted as a lost worker.
  if (err == caf::sec::request_receiver_down)
    err = make_error(errc::shard_lost, "shard " + std::to_string(s) + ": " + describe(err));
  fail(self, "request to a shard failed", err);
}

/// How often the watchdog looks at the requests in flight: a quarter of the request timeout
/// (a request times out within 1.25 times it), between 10 ms and 10 s.
std::chrono::milliseconds watchdog_period(const worker_config& cfg) {
  return std::clamp(cfg.request_timeout / 4, std::chrono::milliseconds(10),
                    std::chrono::milliseconds(10000));
}

/// Fails the worker on a request in flight for longer than the request timeout, as CAF's
/// timeout would have (request_timeout; also one that waits for a standby that never takes
/// over), else looks again a period later. Requests carry no timeout of CAF's own:
/// CAF registers each one with its clock thread, waking it twice a request (4 a clock with two
/// shards), in a run whose requests come every millisecond or two; this is one wake-up a period.
void watch_requests(self_ptr self) {
  auto& st = self->state;
  auto now = std::chrono::steady_clock::now();
  for (std::size_t s = 0; s < st.in_flight.size(); ++s) {
    const auto& r = st.in_flight[s];
    if (r.id != 0 && now - r.sent >= st.cfg.request_timeout)
      return on_request_failed(self, s, r.id,
                               make_error(caf::sec::request_timeout,
                                          "shard " + std::to_string(s) + " did not answer within "
                                            + std::to_string(st.cfg.request_timeout.count())
                                            + " ms"));  // the worker stops: no more watching
  }
  self->delayed_send(self, watchdog_period(st.cfg), watchdog_atom::value);
}

/// Asks shard `s` (a push when `push`); its reply (parameters for st.clock) goes to
/// on_parameters. Only the reply to the newest request to the shard counts: one sent again to a
/// standby replaces the one the lost primary never answered. Timed out by the watchdog.
template <class... Ts>
void ask(self_ptr self, std::size_t s, bool push, Ts... xs) {
  auto& st = self->state;
  auto id = ++st.last_request;
  st.in_flight[s] = {id, push, [=] { ask(self, s, push, xs...); },
                     std::chrono::steady_clock::now()};
  self->request(st.cfg.shards[s], caf::infinite, xs...)
    .then([=](const wire_buffer& reply) {
            auto& st = self->state;
            if (st.in_flight[s].id != id) return;  // sent again: that one's reply counts
            st.in_flight[s] = {};
            on_parameters(self, reply);
          },
          [=](caf::error& err) { on_request_failed(self, s, id, std::move(err)); });
}

/// Asks the trainer for the keys of `clock`'s minibatch and prepares `into` for them (none
/// after the last clock: the final push pulls no rows).
void prepare_keys(worker_state& st, int64_t clock, batch_tables& into) {
  for (auto& k : st.keys) k.clear();
  if (clock < end_clock(st.cfg)) st.model->keys(batch_of(st.cfg, clock), st.keys);
  into.prepare(st.keys);
}

/// The first pull: every shard's values (and rows of the batch's keys) for the start clock.
void pull_initial(self_ptr self) {
  auto& st = self->state;
  expect_replies(st);
  if (st.rows.empty()) {
    for (std::size_t s = 0; s < st.cfg.shards.size(); ++s)
      ask(self, s, false, pull_atom::value, st.cfg.index, st.clock);
    return;
  }
  prepare_keys(st, st.clock, st.rows);
  for (std::size_t s = 0; s < st.cfg.shards.size(); ++s)
    ask(self, s, false, pull_atom::value,
        encode_pull(st.cfg.index, st.clock, static_cast<int32_t>(s),
                    st.rows.keys_for(static_cast<int>(s))));
}

/// Pushes the gradient of the current clock to every shard, pulling the next clock's values.
void push(self_ptr self) {
  auto& st = self->state;
  st.reports.push_back(train_report{st.cfg.index, st.clock,
                                   st.last.loss_sum / double(st.last.rows), st.last.rows,
                                   st.staleness, st.model->device(), st.newest_clock,
                                   st.refused});
  send_reports(self, false);
  auto clock = st.clock++;
  expect_replies(st);
  if (!st.grads_lease) st.grads_lease = std::make_shared<buffer_lease>(st.spares);
  if (!st.rows.empty()) prepare_keys(st, st.clock, st.next);
  const auto precision = st.cfg.spec.wire;
  for (std::size_t s = 0; s < st.cfg.shards.size(); ++s) {
    auto shard = static_cast<int32_t>(s);
    // No tables: no rows, no keys, a dense push. The blocks point at grads (no copy of ours),
    // which the lease keeps unchanged while any push holds it; bf16 blocks are written into
    // the message as they are narrowed.
    ask(self, s, true, push_pull_atom::value,
        precision == wire_precision::fp32
          ? encode_push_by_reference(st.cfg.index, clock, shard, *st.layout, st.grads.data(),
                                     st.grads_lease, st.cfg.incarnation, st.rows.grads_for(shard),
                                     st.next.keys_for(shard))
          : encode_push(st.cfg.index, clock, shard, *st.layout, st.grads.data(),
                        st.cfg.incarnation, st.rows.grads_for(shard), st.next.keys_for(shard),
                        precision));
  }
  std::swap(st.rows, st.next);  // the replies bring the next clock's rows
}

void compute(self_ptr self) {
  auto& st = self->state;
  // A push still holds the last gradient: another buffer, whatever it holds (step writes every
  // value: trainer::step).
  if (release_for_writing(st.grads, st.grads_lease))
    st.grads = st.spares->take(st.layout->total_floats());
  st.last = st.model->step(batch_of(st.cfg, st.clock), st.params->data(), st.grads.data(),
                           st.rows.rows());
  if (st.cfg.slow_ms > 0)
    self->delayed_send(self, std::chrono::milliseconds(st.cfg.slow_ms), step_atom::value);
  else
    push(self);
}

/// `err` when a message was refused as not authorised: logged, and counted in the reports.
caf::error refusal(self_ptr self, caf::error err) {
  if (err) ++self->state.refused;
  return note_refusal(self->state.who(), std::move(err));
}

worker_actor::behavior_type worker(self_ptr self, worker_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  return {
    [=](start_atom) {
      auto& st = self->state;
      if (refusal(self, authorise_chief(current_role(self), "start"))) return;
      flush_denormals_to_zero();  // this (detached) thread runs the kernels
      st.chief_elsewhere = st.cfg.chief && st.cfg.chief.node() != self->node();
      st.reports_sent = std::chrono::steady_clock::now();
      st.layout = std::make_shared<const block_layout>(st.cfg.spec);
      if (!streamed(st.cfg.source.what))  // else the plug-in streams it
        st.data = std::make_unique<data_shard>(st.cfg.train, st.cfg.index, st.cfg.spec.workers,
                                               st.cfg.batch, st.cfg.spec.seed);
      trainer_context ctx;
      ctx.worker = st.cfg.index;
      ctx.workers = st.cfg.spec.workers;
      ctx.batch = st.cfg.batch;
      ctx.seed = st.cfg.spec.seed;
      ctx.data = st.data.get();
      ctx.backend = st.cfg.backend;
      ctx.device = st.cfg.device;
      ctx.source = st.cfg.source;
      try {
        st.model = make_model(st.cfg.spec.model.name)->make_trainer(ctx);
      } catch (const std::exception& e) {
        return fail(self, "cannot start its trainer", caf::make_error(caf::sec::runtime_error,
                                                                     e.what()));
      }
      st.params = std::make_shared<std::vector<float>>(st.layout->total_floats(), 0.0f);
      // Dense replies over a data link land in params directly (a reply with sparse rows is
      // read into a buffer: the rows go to the batch tables).
      if (st.cfg.spec.model.sparse_tables.empty())
        for (auto& d : st.cfg.destinations)
          if (d) d->set(st.layout, st.params);
      st.grads.assign(st.layout->total_floats(), 0.0f);
      st.rows = batch_tables(st.cfg.spec);
      st.next = batch_tables(st.cfg.spec);
      st.keys.resize(st.cfg.spec.model.sparse_tables.size());
      st.clock = st.cfg.start_clock;
      st.in_flight.assign(st.cfg.shards.size(), {});
      self->delayed_send(self, watchdog_period(st.cfg), watchdog_atom::value);
      pull_initial(self);
    },
    [=](watchdog_atom) {
      if (refusal(self, authorise_local(current_role(self), "watchdog"))) return;
      watch_requests(self);
    },
    [=](step_atom) {
      if (refusal(self, authorise_local(current_role(self), "step"))) return;
      push(self);
    },
    [=](reroute_atom, int32_t s, ps_shard_actor shard) -> caf::result<int32_t> {
      auto& st = self->state;
      if (auto err = refusal(self, authorise_chief(current_role(self), "reroute")))
        return err;
      if (s < 0 || s >= static_cast<int32_t>(st.cfg.shards.size()) || !shard)
        return make_error(errc::wrong_shard, "reroute of shard " + std::to_string(s));
      st.cfg.shards[s] = shard;
      if (static_cast<std::size_t>(s) >= st.in_flight.size() || !st.in_flight[s].resend)
        return 0;  // not started, or nothing in flight to that shard
      auto pushed = st.in_flight[s].push;
      auto resend = st.in_flight[s].resend;
      log_line(st.who(), std::string("sends its ") + (pushed ? "push" : "pull")
                           + " again to the standby of shard " + std::to_string(s));
      resend();
      return pushed ? 1 : 0;
    },
  };
}

} // namespace

worker_actor spawn_worker(caf::actor_system& sys, worker_config cfg) {
  return sys.spawn<caf::detached>(worker, std::move(cfg));
}

} // namespace actorps
