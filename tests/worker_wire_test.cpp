// The real worker actor on the wire: its pushes are built by reference on a leased gradient
// buffer (a push kept by a receiver keeps its values while the worker computes on), and over a
// data link its replies are received straight into its parameters, so a whole run copies no
// payload byte of ours.
#include "link_fixture.hpp"

#include "actors/protocol/link_memory.hpp"
#include "actors/ps/dataset.hpp"
#include "actors/roles/worker.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace actorps;
using namespace actorps::test;

namespace {

/// Ten outputs: the synthetic data has ten classes.
train_spec even_spec() { return word_aligned_spec(10); }

/// The same data, a gradient of 61 450 floats: over link_memory_min_bytes, so the worker's
/// gradient buffer lies in its arena once a shared-memory link has made one.
train_spec wide_spec() {
  auto spec = word_aligned_spec(10);
  spec.model = mlp_model({4, 4096, 10});
  spec.block_floats = 4096;
  return spec;
}

/// Stands in for the chief: forwards the worker's done to `to`, ignores its reports.
caf::behavior chief_stand_in(caf::event_based_actor*, caf::actor to) {
  return {
    [](train_atom, const std::vector<train_report>&) {},
    [to](done_atom d, int32_t w) { caf::anon_send(to, d, w); },
  };
}

/// What a receiver that keeps every push saw: the push itself (built by reference, pointing at
/// the worker's gradient) and a flat copy of its bytes taken on arrival.
struct kept_pushes {
  std::vector<wire_buffer> held, on_arrival;
};

/// A shard that answers at once with fixed parameters and keeps every push it gets (as a slow
/// receiver, or a standby, would).
caf::behavior keeping_shard(caf::event_based_actor*, block_layout layout,
                            std::shared_ptr<kept_pushes> kept) {
  auto values = std::make_shared<std::vector<float>>(layout.shard_floats(0));
  for (std::size_t i = 0; i < values->size(); ++i) (*values)[i] = 0.01f * float(i % 17) - 0.05f;
  auto reply = [=](int64_t clock) {
    return encode_shard_parameters(0, clock, clock - 1, layout, values->data());
  };
  return {
    [=](pull_atom, int32_t, int64_t clock) { return reply(clock); },
    [=](push_pull_atom, const push_request& request) {
      const auto& push = request.bytes;
      kept->held.push_back(push);
      kept->on_arrival.push_back(push.flat());
      auto view = decode_push(push);
      return reply(view ? view->clock + 1 : 0);
    },
  };
}

/// Worker 0 of `spec` on 256 synthetic rows, batch 8, asking `shard` (its chief: run_worker's).
worker_config worker_for(const train_spec& spec, ps_shard_actor shard, int64_t steps) {
  worker_config wc;
  wc.index = 0;
  wc.spec = spec;
  wc.batch = 8;
  wc.steps = steps;
  wc.request_timeout = std::chrono::milliseconds(10000);
  wc.train = std::make_shared<dataset>(make_synthetic(256, 4, 11, true));
  wc.shards = {shard};
  return wc;
}

/// Starts `wc`'s worker and waits for its done (false on a timeout or its early exit).
bool run_worker(actor_fixture& f, worker_config wc) {
  auto me = caf::actor_cast<caf::actor>(*f.self);
  wc.chief = caf::actor_cast<chief_actor>(f.sys->spawn(chief_stand_in, me));
  auto worker = spawn_worker(*f.sys, std::move(wc));
  (*f.self)->monitor(worker);
  (*f.self)->send(worker, start_atom::value);
  // The worker stops right after its done, which comes through the stand-in: wait for both.
  bool done = false, stopped = false, timed_out = false;
  while (!(done && stopped) && !timed_out)
    (*f.self)->receive([&](done_atom, int32_t) { done = true; },
                       [&](caf::down_msg& m) {
                         stopped = true;
                         if (m.reason) {
                           MESSAGE("worker failed: " << describe(m.reason));
                           timed_out = true;
                         }
                       },
                       caf::after(timeout) >> [&] { timed_out = true; });
  return done;
}

} // namespace

TEST_CASE("worker: a run over TCP and the local socket copies no payload byte of ours, over shared memory the designed copies, and ends byte-identical to the shard") {
  // The arena first, as in a ps process (its link server makes it before the shard's init): the
  // shard's parameters lie there (and, once a shared-memory link offered it, the worker's gradient).
  REQUIRE(enable_link_memory().empty());
  for (auto path : every_link_path) {
    CAPTURE(transport_of(path));
    link_fixture f(wide_spec());
    auto remote = f.attach_over(path);
    auto wc = worker_for(f.spec, remote.handle, 6);
    wc.destinations = {remote.destination};
    // Over shared memory: of each push and each reply only its structure is copied into a ring
    // (the blocks lie in the worker's and the shard's arenas, named by offset), and each reply
    // is read once from the shard's arena into the parameters (the 7 replies: the first pull
    // and 6 push_pulls).
    auto structure = push_structure_bytes(f.layout);
    auto reply_structure = reply_structure_bytes(f.layout);
    CHECK(structure < 1024);
    auto reply = f.ask(f.shard, pull_atom::value, int32_t{0}, int64_t{0});
    REQUIRE(reply);
    auto shm_copies =
      path == link_path::shm ? 6 * structure + 7 * (reply_structure + reply->size_bytes()) : 0;
    auto before = copied_payload_bytes.load();
    REQUIRE(run_worker(f, std::move(wc)));
    // Otherwise pushes left from the gradient, replies landed in the parameters, the shard
    // applied each push from its receive buffer and replied by reference: no copy of ours.
    CHECK(copied_payload_bytes.load() - before == shm_copies);

    // The worker's parameters after its last reply (received in place) against an independent
    // snapshot of the shard, asked over CAF.
    auto target = remote.destination->get();
    REQUIRE(target);
    auto snapshot = f.snapshot();
    REQUIRE(snapshot.size() == target.params->size());
    CHECK(std::memcmp(snapshot.data(), target.params->data(), snapshot.size() * 4) == 0);
    CHECK(snapshot != f.initial);  // six updates were applied
    CHECK(f.stats().updates == 6);
    remote.close();
  }
}

TEST_CASE("worker: without a destination a reply over the data link is scattered, one copy counted") {
  link_fixture f(even_spec());
  auto remote = f.attach(false);
  auto before = copied_payload_bytes.load();
  REQUIRE(run_worker(f, worker_for(f.spec, remote.handle, 3)));
  // The initial pull and three push_pulls, each reply copied once into the parameters.
  CHECK(copied_payload_bytes.load() - before == 4 * f.layout.total_floats() * 4);
  remote.close();
}

TEST_CASE("worker: a push kept by a slow receiver keeps its values while the worker computes the next steps") {
  actor_fixture f;
  auto spec = even_spec();
  block_layout layout{spec};
  auto kept = std::make_shared<kept_pushes>();
  auto shard = caf::actor_cast<ps_shard_actor>(f.sys->spawn(keeping_shard, layout, kept));
  REQUIRE(run_worker(f, worker_for(spec, shard, 5)));
  REQUIRE(kept->held.size() == 5);
  // Each kept push, the last one included (it outlives the worker), against its bytes on arrival.
  for (std::size_t i = 0; i < kept->held.size(); ++i) {
    CAPTURE(i);
    CHECK(kept->held[i].is_gathered());
    CHECK(same_bytes(kept->held[i], kept->on_arrival[i]));
  }
  // The gradients differ from step to step, so a push overwritten by a later step would show.
  CHECK_FALSE(same_bytes(kept->on_arrival[0], kept->on_arrival[1]));
  caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
}

namespace {

/// A shard that answers the first pull and then holds every push_pull, never answering (a hung
/// shard process, a lost reply).
caf::behavior silent_after_first_pull(caf::event_based_actor* self, block_layout layout) {
  auto values = std::make_shared<std::vector<float>>(layout.shard_floats(0), 0.0f);
  auto held = std::make_shared<std::vector<caf::response_promise>>();
  return {
    [=](pull_atom, int32_t, int64_t clock) {
      return encode_shard_parameters(0, clock, clock - 1, layout, values->data());
    },
    [=](push_pull_atom, const push_request&) {
      held->push_back(self->make_response_promise());  // kept, never delivered
    },
  };
}

} // namespace

TEST_CASE("worker: a request its shard never answers fails with request_timeout within 1.25 request timeouts (the worker's watchdog, not CAF's clock)") {
  actor_fixture f;
  auto spec = even_spec();
  block_layout layout(spec);
  auto shard = caf::actor_cast<ps_shard_actor>(f.sys->spawn(silent_after_first_pull, layout));
  auto wc = worker_for(spec, shard, 6);
  wc.request_timeout = std::chrono::milliseconds(400);
  auto me = caf::actor_cast<caf::actor>(*f.self);
  wc.chief = caf::actor_cast<chief_actor>(f.sys->spawn(chief_stand_in, me));
  auto worker = spawn_worker(*f.sys, std::move(wc));
  (*f.self)->monitor(worker);
  auto started = std::chrono::steady_clock::now();
  (*f.self)->send(worker, start_atom::value);
  caf::error reason;
  bool stopped = false;
  (*f.self)->receive([&](caf::down_msg& m) { stopped = true; reason = m.reason; },
                     caf::after(timeout) >> [] {});
  auto took = std::chrono::steady_clock::now() - started;
  REQUIRE(stopped);
  CHECK(reason == caf::sec::request_timeout);
  CHECK(took >= std::chrono::milliseconds(400));
  CHECK(took < std::chrono::milliseconds(400 * 5 / 4 + 300));  // a period late at most, + slack
  caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
}

namespace {

/// What a recording shard was asked: the clocks pulled, and each push's clock and incarnation.
struct seen_requests {
  std::vector<int64_t> pulls;
  std::vector<std::pair<int64_t, uint32_t>> pushes;
};

/// A shard that answers at once and records what it is asked; with `hold_at` >= 0 it holds its
/// answer to the push of that clock until told (ok).
caf::behavior recording_shard(caf::event_based_actor* self, block_layout layout,
                              std::shared_ptr<seen_requests> seen, int64_t hold_at) {
  auto values = std::make_shared<std::vector<float>>(layout.shard_floats(0), 0.0f);
  auto held = std::make_shared<caf::response_promise>();
  auto reply = [=](int64_t clock) {
    return encode_shard_parameters(0, clock, clock - 1, layout, values->data());
  };
  return {
    [=](pull_atom, int32_t, int64_t clock) {
      seen->pulls.push_back(clock);
      return reply(clock);
    },
    [=](push_pull_atom, const push_request& request) {
      auto promise = self->make_response_promise();
      auto push = decode_push(request.bytes);
      if (!push) return promise.deliver(push.error());
      seen->pushes.emplace_back(push->clock, push->incarnation);
      if (push->clock == hold_at) *held = promise;
      else promise.deliver(reply(push->clock + 1));
    },
    [=](caf::ok_atom) { held->deliver(reply(hold_at + 1)); },
  };
}

} // namespace

TEST_CASE("worker: a change of shards asked while its last round is open is taken once it pauses, its data kept") {
  actor_fixture f;
  auto spec = even_spec();
  block_layout layout{spec};
  auto before = std::make_shared<seen_requests>(), after = std::make_shared<seen_requests>();
  auto old_shard = f.sys->spawn(recording_shard, layout, before, int64_t{1});
  auto new_shard = f.sys->spawn(recording_shard, layout, after, int64_t{-1});
  auto wc = worker_for(spec, caf::actor_cast<ps_shard_actor>(old_shard), 4);
  wc.overlap = false;
  wc.pause_at = 2;  // computes clocks 0 and 1, then waits there
  auto me = caf::actor_cast<caf::actor>(*f.self);
  wc.chief = caf::actor_cast<chief_actor>(f.sys->spawn(chief_stand_in, me));
  auto worker = spawn_worker(*f.sys, std::move(wc));
  (*f.self)->send(worker, start_atom::value);
  // Asked right after its start, a round open (the first pull, or a push: that of clock 1 is
  // held): the answer waits until it pauses at 2, which it reaches only once the old shard lets
  // the push of 1 go (taken at once, a round's reply would land in the conversation it
  // replaced; taken anywhere but at its pause, it is refused).
  const worker_shards shards{{caf::actor_cast<ps_shard_actor>(new_shard)}, {}};
  auto asked = (*f.self)->request(worker, timeout, resize_atom::value, int32_t{1}, shards,
                                  uint32_t{5}, int64_t{-1});
  bool early = false;
  (*f.self)->receive([&](int64_t) { early = true; }, [&](caf::error&) { early = true; },
                     caf::after(std::chrono::milliseconds(200)) >> [] {});
  CHECK_FALSE(early);
  (*f.self)->send(old_shard, caf::ok_atom::value);
  int64_t goes_on_at = -1;
  std::move(asked).receive([&](int64_t clock) { goes_on_at = clock; },
                           [&](caf::error& e) { FAIL(describe(e)); });
  CHECK(goes_on_at == 2);
  (*f.self)->send(worker, start_atom::value);
  bool done = false;
  (*f.self)->receive([&](done_atom, int32_t) { done = true; }, caf::after(timeout) >> [] {});
  REQUIRE(done);
  // The old shard saw clocks 0 and 1 under the first incarnation; the new one the pull of
  // clock 2 and the pushes of 2 and 3 under the new incarnation: the worker went on at its
  // clock with its data where it was, nothing pushed twice.
  CHECK(before->pulls == std::vector<int64_t>{0});
  CHECK(before->pushes == std::vector<std::pair<int64_t, uint32_t>>{{0, 0}, {1, 0}});
  CHECK(after->pulls == std::vector<int64_t>{2});
  CHECK(after->pushes == std::vector<std::pair<int64_t, uint32_t>>{{2, 5}, {3, 5}});
  caf::anon_send_exit(old_shard, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(new_shard, caf::exit_reason::user_shutdown);
}
