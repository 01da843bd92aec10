#include "actors/roles/worker.hpp"

#include "actors/roles/authorisation.hpp"
#include "actors/roles/batch_tables.hpp"
#include "actors/roles/planned_trainer.hpp"
#include "actors/roles/shard_conversation.hpp"
#include "actors/data/csv_batches.hpp"
#include "actors/protocol/buffer_lease.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"
#include "actors/protocol/placement_change.hpp"
#include "actors/ps/model_registry.hpp"
#include "kernels/denormals.hpp"
#include "actors/ps/lr_schedule.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>

namespace actorps {

namespace {

struct worker_state;
using self_ptr = worker_actor::stateful_pointer<worker_state>;

struct worker_state {
  static inline const char* name = "worker";

  worker_config cfg;
  std::shared_ptr<const block_layout> layout;
  std::unique_ptr<batch_source> data;
  std::unique_ptr<trainer> model;  // the model plug-in's half for this worker
  // Flat, model order: what the next step computes on. Shared with the data link proxies that
  // receive replies straight into it (worker_config::destinations).
  std::shared_ptr<std::vector<float>> params;
  // Where the round in flight lands: params itself, or with overlap (below) another buffer,
  // swapped with params when the round ends, so that no reply is written into the values a
  // step is reading; between rounds it holds the parameters of the clock before params'.
  std::shared_ptr<std::vector<float>> incoming;
  // Overlap (ssp with a bound >= 1, async; dense models, sgd or momentum; a worker alone):
  // while its push of clock c is in flight it computes clock c + 1 on the parameters it holds,
  // those pulled for c, when that stays within the bound (may_compute_ahead), moved on by the
  // step its own push of c is about to take (predict_step, into `ahead`). One round at most is
  // in flight: the reply to push c is applied before clock c + 2 is computed, and the push of c + 1
  // waits for it (push_waits). Sparse models do not overlap: a clock's rows come with its pull.
  bool overlap = false;
  // What a clock computed ahead reads. predict_step writes it over the parameters of the clock
  // before (in incoming, which it reads anyway: one pass fewer over memory than a third buffer
  // written afresh), then trades places with it, so that the round lands in the old `ahead`.
  std::shared_ptr<std::vector<float>> ahead;
  int64_t prev_clock = -1;   // the clock incoming was pulled for, while no round is in flight
  bool in_flight = false;   // a round is open
  bool push_waits = false;  // the gradient of st.clock is computed; its push waits for the round
  bool stepping = false;    // the gradient of st.clock is computed; its push waits for slow_ms
  int64_t held_clock = -1;  // the clock params were pulled for (-1: none yet)
  round_outcome used;       // what the parameters of the computed clock came with
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
  round_outcome received;       // what params came with (staleness against held_clock)
  int64_t refused = 0;          // messages refused as not authorised (in its reports)
  step_loss last;
  std::unique_ptr<shard_conversation<self_ptr>> shards;  // after start
  // Train reports not sent yet, and when the last batch went (send_reports).
  std::vector<train_report> reports;
  std::chrono::steady_clock::time_point reports_sent;
  bool leaving = false;  // its process is about to exit: every report goes at once
  bool chief_elsewhere = false;  // the chief runs in another process
  // Following a stream: what waits for files the chief has not counted yet, if anything (the
  // initial pull, or the computation of st.clock whose parameters have come).
  enum class waiting { nothing, pull, compute } waits = waiting::nothing;
  // A change of shards asked while its round of the clock before the pause was still open:
  // taken once the worker pauses (take_resize).
  struct resize_ask {
    int32_t shards = 0;
    worker_shards actors;
    uint32_t incarnation = 0;
    int64_t pause_at = -1;
    caf::typed_response_promise<int64_t> answer;
  };
  std::unique_ptr<resize_ask> resize_waits;
  bool resumes = false;  // a change of shards taken: (start) pulls again, the trainer kept

  std::string who() const { return "worker:" + std::to_string(cfg.index); }

  // A push may outlive the worker (queued on a link, kept by a shard): it gets the gradient.
  ~worker_state() { release_for_writing(grads, grads_lease); }
};

void compute(self_ptr self);
void push(self_ptr self);
void predict_step(worker_state& st, int64_t c);
caf::expected<int64_t> take_resize(self_ptr self, worker_state::resize_ask& ask);

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
/// takes every report of a batch in order, up to 20 ms later than one by one. Once its process
/// says it leaves ((train)), each at once.
void send_reports(self_ptr self, bool now) {
  auto& st = self->state;
  constexpr auto batch_interval = std::chrono::milliseconds(20);
  if (st.reports.empty()) return;
  auto t = std::chrono::steady_clock::now();
  if (!now && !st.leaving && st.chief_elsewhere && t - st.reports_sent < batch_interval) return;
  self->send(st.cfg.chief, train_atom::value, std::move(st.reports));
  st.reports.clear();
  st.reports_sent = t;
}

/// Following a stream: whether the batch of the clock after st.clock is in the files the chief
/// counted (its keys go with this clock's push), or st.clock is the last.
bool next_batch_there(const worker_state& st) {
  const auto until = st.cfg.follow_until;
  return until < 0 || batch_of(st.cfg, st.clock) + 1 < until || st.clock + 1 >= end_clock(st.cfg);
}

/// The staleness of st.clock computed on the parameters held (pulled for st.held_clock).
int64_t staleness_now(const worker_state& st) {
  return st.received.staleness + (st.clock - st.held_clock);
}

/// With a round in flight, whether st.clock may be computed now on the parameters held: within
/// the bound (none in async), and not past the last clock.
bool may_compute_ahead(const worker_state& st) {
  if (!st.overlap || st.held_clock < 0 || st.clock >= end_clock(st.cfg)) return false;
  const auto bound = st.cfg.spec.staleness_bound();
  return bound < 0 || staleness_now(st) <= bound;
}

/// Parameters for st.clock are there (or those held may compute it ahead): computes it, or says
/// done after the last (following a stream, it waits for the next clock's batch first).
void on_parameters(self_ptr self) {
  auto& st = self->state;
  if (st.in_flight && !may_compute_ahead(st)) return;  // the round's end calls again
  if (st.clock >= end_clock(st.cfg)) {
    send_reports(self, true);  // before done: the chief counts every clock of a finished worker
    self->send(st.cfg.chief, done_atom::value, st.cfg.index);
    self->quit();
    return;
  }
  if (st.cfg.pause_at >= 0 && st.clock >= st.cfg.pause_at) {
    send_reports(self, true);  // the chief stops it there (a resize)
    if (auto ask = std::move(st.resize_waits)) {  // asked while its last round was open
      auto taken = take_resize(self, *ask);
      if (taken)
        ask->answer.deliver(*taken);
      else
        ask->answer.deliver(std::move(taken.error()));
    }
    return;
  }
  if (!next_batch_there(st)) {
    send_reports(self, true);  // the chief's clock decides when it gets more
    st.waits = worker_state::waiting::compute;
    return;
  }
  compute(self);
}

/// The gradient of st.clock is computed: pushed now, or once the round in flight has ended.
void computed(self_ptr self) {
  auto& st = self->state;
  st.stepping = false;
  if (st.in_flight)
    st.push_waits = true;
  else
    push(self);
}

/// Every shard has answered the round for `clock`: its parameters are the ones held now. A push
/// that waited for it goes; else the clock not computed yet is, unless a delayed step's push
/// is still to come.
void on_round(self_ptr self, int64_t clock, const round_outcome& received) {
  auto& st = self->state;
  st.in_flight = false;
  std::swap(st.params, st.incoming);  // (the same buffer without overlap)
  st.prev_clock = st.held_clock;
  st.held_clock = clock;
  st.received = received;
  if (st.push_waits) {
    st.push_waits = false;
    push(self);
  } else if (!st.stepping) {
    on_parameters(self);
  }
}

/// Starts a round for the parameters of st.clock (and the rows st.rows names), into
/// st.incoming.
uint64_t begin_round(self_ptr self) {
  auto& st = self->state;
  st.in_flight = true;
  // A data link's proxy takes the destination as it sends the request, and this is the one
  // round in flight: the next is set after this one ended.
  if (st.overlap)
    for (auto& d : st.cfg.destinations)
      if (d) d->set(st.layout, st.incoming);
  return st.shards->begin({st.clock, st.incoming->data(), st.rows.empty() ? nullptr : &st.rows},
                          [=, clock = st.clock](const round_outcome& r) { on_round(self, clock, r); },
                          [=](const char* what, caf::error err) { fail(self, what, err); });
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
  if (!st.rows.empty()) prepare_keys(st, st.clock, st.rows);
  auto round = begin_round(self);
  for (std::size_t s = 0; s < st.shards->shards(); ++s)
    if (st.rows.empty())
      st.shards->ask(round, s, false, pull_atom::value, st.cfg.index, st.clock);
    else
      st.shards->ask(round, s, false, pull_atom::value,
                     encode_pull(st.cfg.index, st.clock, static_cast<int32_t>(s),
                                 st.rows.keys_for(static_cast<int>(s))));
}

/// Pushes the gradient of the current clock to every shard, pulling the next clock's values;
/// with overlap, computes the next clock meanwhile when the bound allows.
void push(self_ptr self) {
  auto& st = self->state;
  st.reports.push_back(train_report{st.cfg.index, st.clock,
                                   st.last.loss_sum / double(st.last.rows), st.last.rows,
                                   st.used.staleness, st.model->device(),
                                   st.used.newest_clock, st.refused});
  send_reports(self, false);
  auto clock = st.clock++;
  const bool ahead = may_compute_ahead(st);
  if (ahead) predict_step(st, clock);  // before the round, which lands in the new incoming
  if (!st.grads_lease) st.grads_lease = std::make_shared<buffer_lease>(st.spares);
  if (!st.rows.empty()) prepare_keys(st, st.clock, st.next);
  // The replies bring the next clock's rows: into st.rows, which holds its keys once swapped
  // with st.next below.
  auto round = begin_round(self);
  const auto precision = st.cfg.spec.wire;
  for (std::size_t s = 0; s < st.shards->shards(); ++s) {
    auto shard = static_cast<int32_t>(s);
    // No tables: no rows, no keys, a dense push. The blocks point at grads (no copy of ours),
    // which the lease keeps unchanged while any push holds it; bf16 blocks are written into
    // the message as they are narrowed.
    st.shards->ask(
      round, s, true, push_pull_atom::value,
      push_request{
        precision == wire_precision::fp32
          ? encode_push_by_reference(st.cfg.index, clock, shard, *st.layout, st.grads.data(),
                                     st.grads_lease, st.cfg.incarnation, st.rows.grads_for(shard),
                                     st.next.keys_for(shard))
          : encode_push(st.cfg.index, clock, shard, *st.layout, st.grads.data(),
                        st.cfg.incarnation, st.rows.grads_for(shard), st.next.keys_for(shard),
                        precision)});
  }
  std::swap(st.rows, st.next);  // the replies bring the next clock's rows
  if (ahead) on_parameters(self);
}

/// The parameters clock c + 1 computes on ahead of the reply to the push of c: those pulled for
/// c moved on by the step the shards are about to take, as far as this worker knows it: its own
/// gradient of c at its share of the rate, and with momentum the last step again times the
/// momentum (x_c − x_{c−1} is −lr · velocity). Exact for a worker alone (the only one that
/// computes ahead) at a constant rate; with more, the others' next pushes would be foreseen only
/// through the momentum. Without the step the
/// worker would not see its own last push (ssp's read-my-writes), which momentum does not bear.
void predict_step(worker_state& st, int64_t c) {
  const auto& spec = st.cfg.spec;
  auto rate = [&](int64_t clock) {
    return scheduled_learning_rate(spec.schedule, spec.optimizer.learning_rate,
                                   schedule_clock(spec, clock), spec.total_clocks);
  };
  const float lr = rate(c) / rate_divisor(spec, static_cast<std::size_t>(std::max(1, spec.workers)));
  float carry = 0;  // times x_c − x_{c−1}
  const bool last_step_known = st.prev_clock >= 0 && st.prev_clock == c - 1 && rate(c - 1) > 0;
  if (spec.optimizer.kind == optimizer_kind::momentum && last_step_known)
    carry = spec.optimizer.momentum * rate(c) / rate(c - 1);
  // Over x_{c−1} in incoming, in place (three distinct buffers: vectorised).
  const float* __restrict x = st.params->data();
  const float* __restrict g = st.grads.data();
  float* __restrict out = st.incoming->data();
  const std::size_t n = st.params->size();
  if (carry != 0)
    for (std::size_t i = 0; i < n; ++i) out[i] = x[i] + carry * (x[i] - out[i]) - lr * g[i];
  else
    for (std::size_t i = 0; i < n; ++i) out[i] = x[i] - lr * g[i];
  std::swap(st.ahead, st.incoming);  // the round lands in the buffer no step reads
}

void compute(self_ptr self) {
  auto& st = self->state;
  // A push still holds the last gradient: another buffer, whatever it holds (step writes every
  // value: trainer::step).
  if (release_for_writing(st.grads, st.grads_lease))
    st.grads = st.spares->take(st.layout->total_floats());
  st.used = st.received;
  st.used.staleness = staleness_now(st);
  const float* params = st.held_clock < st.clock ? st.ahead->data() : st.params->data();
  st.last = st.model->step(batch_of(st.cfg, st.clock), params, st.grads.data(), st.rows.rows());
  if (st.cfg.slow_ms > 0) {
    st.stepping = true;
    self->delayed_send(self, std::chrono::milliseconds(st.cfg.slow_ms), step_atom::value);
  } else {
    computed(self);
  }
}

/// The trainer worker `part` of `parts` has: its part of the data and the plug-in's half.
/// An error when the plug-in or the data refuse.
caf::error make_trainer(worker_state& st) {
  const auto& cfg = st.cfg;
  auto make_part = [cfg](int32_t part, int32_t parts) {
    part_trainer out;
    if (cfg.source.what == data_source::kind::csv)  // its part of the files, streamed
      out.data = std::make_unique<csv_batches>(cfg.source, part, parts, cfg.batch,
                                               cfg.train->cols, cfg.train->classes);
    else if (!streamed(cfg.source.what))  // else the plug-in streams it
      out.data = std::make_unique<data_shard>(cfg.train, part, parts, cfg.batch, cfg.spec.seed);
    trainer_context ctx;
    ctx.worker = part;
    ctx.workers = parts;
    ctx.batch = cfg.batch;
    ctx.seed = cfg.spec.seed;
    ctx.data = out.data.get();
    ctx.backend = cfg.backend;
    ctx.device = cfg.device;
    ctx.source = cfg.source;
    out.model = make_model(cfg.spec.model.name)->make_trainer(ctx);
    return out;
  };
  try {
    if (st.cfg.plan.empty()) {
      auto own = make_part(st.cfg.index, st.cfg.spec.workers);
      st.data = std::move(own.data);
      st.model = std::move(own.model);
    } else {
      st.model = make_planned_trainer(st.cfg.plan, make_part);
    }
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::runtime_error, e.what());
  }
  return caf::none;
}

/// What the worker's rounds need under st.cfg.spec's placement and st.cfg.shards: the layout,
/// the parameter buffers, the batch tables and the conversation with the shards (a new one
/// after a change of shards: the watchdog already running looks at it).
void talk_to_shards(self_ptr self) {
  auto& st = self->state;
  st.layout = std::make_shared<const block_layout>(st.cfg.spec);
  st.params = std::make_shared<std::vector<float>>(st.layout->total_floats(), 0.0f);
  const auto optimizer = st.cfg.spec.optimizer.kind;
  // Not with standbys: a request sent again to a promoted shard may be answered twice,
  // and the late answer would land in the buffer being computed on. Only alone: its own
  // push is then all there is to foresee, and it trains as the worker that waits; with
  // more, the others' gradients of a clock come one clock later, which cost the default run
  // (2 workers, momentum 0.9) 0.01 of test accuracy, and 6-8 % more CPU per sample bought
  // no speed on a machine with no idle core (scripts/bench/README.md, throughput.sh).
  st.overlap = st.cfg.overlap && st.cfg.spec.staleness_bound() != 0 && !st.cfg.standbys
               && st.cfg.spec.workers == 1
               && st.cfg.spec.model.sparse_tables.empty()
               && (optimizer == optimizer_kind::sgd || optimizer == optimizer_kind::momentum);
  st.ahead = st.overlap ? std::make_shared<std::vector<float>>(st.layout->total_floats(), 0.0f)
                        : nullptr;
  st.incoming = st.overlap
                  ? std::make_shared<std::vector<float>>(st.layout->total_floats(), 0.0f)
                  : st.params;
  // Dense replies over a data link land in params directly (a reply with sparse rows is
  // read into a buffer: the rows go to the batch tables); with overlap, in the buffer of
  // each round (begin_round).
  if (st.cfg.spec.model.sparse_tables.empty() && !st.overlap)
    for (auto& d : st.cfg.destinations)
      if (d) d->set(st.layout, st.params);
  // A push may still hold the last gradient (a shard keeps each worker's last push in sync
  // mode): then compute() takes another buffer before writing.
  if (st.grads.size() != st.layout->total_floats()
      && !release_for_writing(st.grads, st.grads_lease))
    st.grads.assign(st.layout->total_floats(), 0.0f);
  st.rows = batch_tables(st.cfg.spec);
  st.next = batch_tables(st.cfg.spec);
  st.keys.resize(st.cfg.spec.model.sparse_tables.size());
  st.held_clock = -1;
  st.prev_clock = -1;
  st.received = {};
  st.shards = std::make_unique<shard_conversation<self_ptr>>(
    self, st.who(), st.cfg.shards, st.layout, st.cfg.standbys, st.cfg.request_timeout);
}

/// A change of shards at the clock the worker paused at (worker_actor's resize): the new
/// placement and shards from the next round on; the data reader and the trainer stay.
caf::expected<int64_t> take_resize(self_ptr self, worker_state::resize_ask& ask) {
  auto& st = self->state;
  if (st.cfg.pause_at < 0 || st.clock != st.cfg.pause_at)
    return caf::make_error(caf::sec::runtime_error, "a change of shards at clock "
                                                      + std::to_string(st.clock)
                                                      + ", where this worker has not paused");
  const auto given = ask.actors.actors.size();
  if (ask.shards < 1 || given != static_cast<std::size_t>(ask.shards)
      || (!ask.actors.destinations.empty() && ask.actors.destinations.size() != given))
    return make_error(errc::wrong_shard, std::to_string(given) + " shards for "
                                           + std::to_string(ask.shards));
  train_spec after;
  try {
    after = resized_spec(st.cfg.spec, ask.shards);
  } catch (const std::invalid_argument& e) {
    return make_error(errc::wrong_shard, e.what());
  }
  st.cfg.spec = std::move(after);
  st.cfg.shards = std::move(ask.actors.actors);
  st.cfg.destinations = std::move(ask.actors.destinations);
  st.cfg.incarnation = ask.incarnation;
  st.cfg.pause_at = ask.pause_at;
  talk_to_shards(self);
  st.resumes = true;
  return st.clock;
}

/// `err` when a message was refused as not authorised: logged, and counted in the reports.
caf::error refusal(self_ptr self, caf::error err) {
  if (err) ++self->state.refused;
  return note_refusal(self->state.who(), std::move(err));
}

worker_actor::behavior_type worker(self_ptr self, worker_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  // A data line its reader cannot take stops this worker with errc::bad_data naming file and
  // line: a replacement would stop at the same line, so the chief ends the run saying so.
  self->set_exception_handler([](caf::scheduled_actor* actor, std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const dataset_error& bad) {
      return make_error(errc::bad_data, bad.what());
    } catch (...) {
      return caf::scheduled_actor::default_exception_handler(actor, e);
    }
  });
  return {
    [=](train_atom) -> caf::result<caf::ok_atom> {  // (its process's leave notice)
      if (auto err = refusal(self, authorise_local(current_role(self), "train"))) return err;
      self->state.leaving = true;  // a clock it still pushes is reported at once too
      send_reports(self, true);
      return caf::ok_atom::value;
    },
    [=](start_atom) {
      auto& st = self->state;
      if (refusal(self, authorise_chief(current_role(self), "start"))) return;
      if (std::exchange(st.resumes, false)) return pull_initial(self);  // after a change of shards
      flush_denormals_to_zero();  // this (detached) thread runs the kernels
      st.chief_elsewhere = st.cfg.chief && st.cfg.chief.node() != self->node();
      st.reports_sent = std::chrono::steady_clock::now();
      if (auto err = make_trainer(st)) return fail(self, "cannot start its trainer", err);
      talk_to_shards(self);
      st.clock = st.cfg.start_clock;
      st.shards->start_watchdog();
      const auto until = st.cfg.follow_until;
      if (until >= 0 && batch_of(st.cfg, st.clock) >= until && st.clock < end_clock(st.cfg))
        st.waits = worker_state::waiting::pull;  // its first batch is not in the files yet
      else
        pull_initial(self);
    },
    [=](stream_atom, int64_t until, bool end) {
      auto& st = self->state;
      if (refusal(self, authorise_chief(current_role(self), "stream"))) return;
      if (st.cfg.follow_until < 0) return;  // not following
      st.cfg.follow_until = std::max(st.cfg.follow_until, until);
      if (end) st.cfg.steps = until;  // its last batch is until - 1
      const auto was = std::exchange(st.waits, worker_state::waiting::nothing);
      if (was == worker_state::waiting::pull) {
        if (batch_of(st.cfg, st.clock) < st.cfg.follow_until || st.clock >= end_clock(st.cfg))
          pull_initial(self);
        else st.waits = was;
      } else if (was == worker_state::waiting::compute) {
        if (next_batch_there(st) || st.clock >= end_clock(st.cfg))
          on_parameters(self);
        else
          st.waits = was;
      }
    },
    [=](watchdog_atom) {
      if (refusal(self, authorise_local(current_role(self), "watchdog"))) return;
      if (self->state.shards) self->state.shards->watch();
    },
    [=](step_atom) {
      if (refusal(self, authorise_local(current_role(self), "step"))) return;
      computed(self);
    },
    [=](pause_atom, int64_t clock) -> caf::result<int64_t> {
      auto& st = self->state;
      if (auto err = refusal(self, authorise_chief(current_role(self), "pause"))) return err;
      // A gradient computed and waiting to go: its clock is begun.
      const bool begun = st.stepping || st.push_waits;
      const auto first_free = st.shards ? st.clock + (begun ? 1 : 0) : st.cfg.start_clock;
      const bool waited = st.shards && st.cfg.pause_at >= 0 && st.clock >= st.cfg.pause_at
                          && !begun && st.waits == worker_state::waiting::nothing;
      st.cfg.pause_at = clock < 0 ? -1 : std::max(clock, first_free);
      if (waited && (st.cfg.pause_at < 0 || st.clock < st.cfg.pause_at)) on_parameters(self);
      return st.cfg.pause_at;
    },
    [=](resize_atom, int32_t shards, worker_shards& actors, uint32_t incarnation,
        int64_t pause_at) -> caf::result<int64_t> {
      auto& st = self->state;
      if (auto err = refusal(self, authorise_local(current_role(self), "resize"))) return err;
      if (!st.shards || st.resumes || st.resize_waits)
        return caf::make_error(caf::sec::runtime_error,
                               "a change of shards before this worker trained, or a second one "
                               "before it went on");
      worker_state::resize_ask ask{shards, std::move(actors), incarnation, pause_at, {}};
      if (st.in_flight || st.stepping || st.push_waits) {  // taken once it pauses
        ask.answer = self->make_response_promise<int64_t>();
        st.resize_waits = std::make_unique<worker_state::resize_ask>(std::move(ask));
        return st.resize_waits->answer;
      }
      return take_resize(self, ask);
    },
    [=](reroute_atom, int32_t s, ps_shard_actor shard) -> caf::result<int32_t> {
      auto& st = self->state;
      if (auto err = refusal(self, authorise_chief(current_role(self), "reroute")))
        return err;
      if (!st.shards) {  // not started: the shard it will ask
        if (s < 0 || s >= static_cast<int32_t>(st.cfg.shards.size()) || !shard)
          return make_error(errc::wrong_shard, "reroute of shard " + std::to_string(s));
        st.cfg.shards[s] = shard;
        return 0;
      }
      return st.shards->reroute(s, std::move(shard));
    },
  };
}

} // namespace

worker_actor spawn_worker(caf::actor_system& sys, worker_config cfg) {
  return sys.spawn<caf::detached>(worker, std::move(cfg));
}

} // namespace actorps
