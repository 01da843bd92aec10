// The parameter shard: updates, the consistency rule enforced in its mailbox, and bad input.
#include "tests/crafted_push.hpp"
#include "tests/dropped_pushes.hpp"
#include "tests/shard_fixture.hpp"

#include "schema/actorps.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace actorps;
using namespace actorps::test;

namespace {

/// Every block of the tiny layout filled with `value`, optionally with one block changed.
std::vector<std::pair<uint32_t, std::vector<float>>> all_blocks(const block_layout& layout,
                                                                float value) {
  std::vector<std::pair<uint32_t, std::vector<float>>> out;
  for (auto id : layout.shard_blocks(0))
    out.push_back({id, std::vector<float>(layout.blocks()[id].size, value)});
  return out;
}

/// (rejoin, w): where a replacement for w is live, and how many clocks of w's the shard holds.
rejoin_point ask_rejoin(shard_fixture& f, int32_t w) {
  rejoin_point point{-1, -1};
  (*f.self)->request(f.shard, timeout, rejoin_atom::value, w)
    .receive([&](rejoin_point& p) { point = p; }, [&](caf::error&) {});
  return point;
}

caf::error admit_worker(shard_fixture& f, int32_t w, int64_t clock, uint32_t incarnation) {
  caf::error err;
  (*f.self)->request(f.shard, timeout, admit_atom::value, w, clock, incarnation)
    .receive([](caf::ok_atom) {}, [&](caf::error& e) { err = e; });
  return err;
}

} // namespace

TEST_CASE("async shard applies each push at once with lr / workers and answers immediately") {
  shard_fixture f(tiny_spec(consistency::async, 2));
  auto params = f.push_pull(f.push_of(0, 0, 2.0f));
  REQUIRE(params);
  for (std::size_t i = 0; i < params->size(); ++i)
    CHECK((*params)[i] == doctest::Approx(f.initial[i] - 0.5f * 2.0f));  // lr 1 / 2 workers
  auto stats = f.stats();
  CHECK(stats.updates == 1);
  CHECK(stats.pushes == 1);
  CHECK(stats.pulls_held == 0);
  CHECK(stats.max_staleness == 1);  // worker 0 asks for clock 1 while worker 1 is at 0
}

TEST_CASE("ssp with staleness 0 holds a pull until the slow worker's push arrives") {
  shard_fixture f(tiny_spec(consistency::ssp, 2, 0));
  auto& self = *f.self;
  // Worker 0 finishes clock 0 and asks for clock 1; worker 1 is still at clock 0.
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 0, 1.0f)});
  auto stats = f.stats();  // handled after the push: the mailbox order is the proof
  CHECK(stats.pulls_held == 1);
  CHECK(stats.pulls_served == 0);
  CHECK(self->mailbox().empty());  // no reply to worker 0 yet
  // Worker 1's push raises min to 1: both pulls for clock 1 are now allowed.
  auto w1 = f.push_pull(f.push_of(1, 0, 3.0f));
  REQUIRE(w1);
  bool released = false;
  self->receive(
    [&](const wire_buffer& reply) {
      released = true;
      auto msg = decode_shard_parameters(reply);
      REQUIRE(msg);
      CHECK(msg->min_clock == 1);
      CHECK(msg->newest_clock == 0);
      auto params = f.parameters_of(reply);
      for (std::size_t i = 0; i < params.size(); ++i)
        CHECK(params[i] == doctest::Approx(f.initial[i] - 0.5f * 1.0f - 0.5f * 3.0f));
    },
    caf::after(timeout) >> [] {});
  CHECK(released);
  stats = f.stats();
  CHECK(stats.updates == 2);  // the released reply came after both (params checked above)
  CHECK(stats.pulls_served == 2);
  CHECK(stats.max_staleness == 0);
}

TEST_CASE("ssp with staleness 2 lets a worker run two clocks ahead, not three") {
  shard_fixture f(tiny_spec(consistency::ssp, 2, 2));
  auto& self = *f.self;
  for (int64_t c = 0; c < 2; ++c) REQUIRE(f.push_pull(f.push_of(0, c, 0.0f)));  // clocks 1, 2
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 2, 0.0f)});  // asks for clock 3
  CHECK(f.stats().pulls_held == 1);
  CHECK(self->mailbox().empty());
  REQUIRE(f.push_pull(f.push_of(1, 0, 0.0f)));  // min 1: clock 3 is within 2
  bool released = false;
  self->receive([&](const wire_buffer&) { released = true; }, caf::after(timeout) >> [] {});
  CHECK(released);
  CHECK(f.stats().max_staleness == 2);
}

TEST_CASE("sync shard averages the workers' gradients and applies once per clock") {
  shard_fixture f(tiny_spec(consistency::sync, 2));
  auto& self = *f.self;
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 0, 1.0f)});
  CHECK(f.stats().updates == 0);  // waits for worker 1
  CHECK(self->mailbox().empty());
  auto params = f.push_pull(f.push_of(1, 0, 3.0f));
  REQUIRE(params);
  for (std::size_t i = 0; i < params->size(); ++i)
    CHECK((*params)[i] == doctest::Approx(f.initial[i] - 2.0f));  // lr 1 × mean(1, 3)
  bool released = false;
  self->receive([&](const wire_buffer& r) { released = f.parameters_of(r) == *params; },
                caf::after(timeout) >> [] {});
  CHECK(released);
  CHECK(f.stats().updates == 1);
}

TEST_CASE("a worker that leaves no longer holds back the others") {
  shard_fixture f(tiny_spec(consistency::sync, 2));
  auto& self = *f.self;
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 0, 4.0f)});
  CHECK(f.stats().pulls_held == 1);
  self->send(f.shard, leave_atom::value, int32_t{1});
  bool released = false;
  self->receive(
    [&](const wire_buffer& r) {
      released = true;
      auto params = f.parameters_of(r);
      CHECK(params[0] == doctest::Approx(f.initial[0] - 4.0f));  // mean over the one live worker
    },
    caf::after(timeout) >> [] {});
  CHECK(released);
  auto rejected = f.push_pull(f.push_of(1, 0, 1.0f));
  REQUIRE_FALSE(rejected);
  CHECK(code_of(rejected.error()) == errc::unknown_worker);
}

TEST_CASE("sync: a replacement holds the min clock until admitted and only its incarnation may push") {
  shard_fixture f(tiny_spec(consistency::sync, 2));
  auto& self = *f.self;
  auto admit = [&](int32_t w, int64_t clock, uint32_t incarnation) {
    return admit_worker(f, w, clock, incarnation);
  };
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 0, 1.0f)});
  CHECK(f.stats().updates == 0);                                      // waits for worker 1
  self->send(f.shard, leave_atom::value, int32_t{1});                 // 1 is gone: clock 0 applied
  self->receive([](const wire_buffer&) {}, caf::after(timeout) >> [] { FAIL("not released"); });
  CHECK(f.stats().updates == 1);

  auto point = ask_rejoin(f, 1);
  CHECK(point.clock == 1);   // counted live at the min clock, 1
  CHECK(point.pushed == 0);  // the worker it replaces pushed nothing here
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 1, 2.0f)});
  CHECK(f.stats().updates == 1);  // clock 1 now waits for the replacement too
  CHECK(admit(1, 0, 7) != caf::none);  // never below the clock it was given
  CHECK(admit(1, 2, 7) == caf::none);  // it enters at 2: owes nothing for clock 1
  CHECK(f.stats().updates == 2);
  self->receive([](const wire_buffer&) {}, caf::after(timeout) >> [] { FAIL("not released"); });

  auto before = f.stats().dropped;
  auto stale = encode_push(1, 2, 0, f.layout, std::vector<float>(f.layout.total_floats(), 1.0f).data(), 0);
  auto refused = f.push_pull(stale);  // a push from the worker it replaced
  REQUIRE_FALSE(refused);
  CHECK(code_of(refused.error()) == errc::stale_clock);
  CHECK(f.stats().dropped == before + 1);
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 2, 1.0f)});
  auto fresh = encode_push(1, 2, 0, f.layout, std::vector<float>(f.layout.total_floats(), 3.0f).data(), 7);
  auto params = f.push_pull(fresh);
  REQUIRE(params);
  CHECK(f.stats().updates == 3);  // clock 2: the mean of both
  self->receive([](const wire_buffer&) {}, caf::after(timeout) >> [] { FAIL("not released"); });
}

TEST_CASE("sync: a push of the clock accumulated is applied with its mean after its worker leaves") {
  // Worker 0 pushes clock 0 (to every shard at once) and is lost. A shard that had every push
  // of clock 0 before the leave applied the mean of both; this one, whose worker 1 is slower,
  // must apply the same mean, not worker 1's gradient alone: else minibatch 0 of worker 0
  // would be applied on some shards only. Its replacement is live after it: clock 1.
  shard_fixture f(tiny_spec(consistency::sync, 2));
  auto& self = *f.self;
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 0, 4.0f)});
  self->send(f.shard, leave_atom::value, int32_t{0});  // (its held pull is answered: it left)
  CHECK(f.stats().updates == 0);  // clock 0 still waits for worker 1
  auto point = ask_rejoin(f, 0);
  CHECK(point.clock == 1);   // after its predecessor's push, which clock 0's mean holds
  CHECK(point.pushed == 1);  // clock 0 of its predecessor is here
  CHECK(admit_worker(f, 0, 1, 5) == caf::none);
  auto params = f.push_pull(f.push_of(1, 0, 2.0f));
  REQUIRE(params);
  CHECK(f.stats().updates == 1);
  for (std::size_t i = 0; i < params->size(); ++i)
    CHECK((*params)[i] == doctest::Approx(f.initial[i] - 3.0f));  // lr 1 × mean(4, 2)
  // The replacement goes on at clock 1 with worker 1: one mean of both again.
  self->send(f.shard, push_pull_atom::value,
             push_request{encode_push(0, 1, 0, f.layout,
                                      std::vector<float>(f.layout.total_floats(), 1.0f).data(),
                                      5)});
  auto next = f.push_pull(f.push_of(1, 1, 3.0f));
  REQUIRE(next);
  CHECK((*next)[0] == doctest::Approx(f.initial[0] - 3.0f - 2.0f));
  CHECK(f.stats().updates == 2);
}

TEST_CASE("sync: a replacement for a worker that left behind enters at min, told what it pushed") {
  // Worker 0 pushed clock 0 and is lost before pushing clock 1; the run goes on without it to
  // clock 2. The shard says: live at 2, 1 clock of the predecessor here (its replacement trains
  // minibatch 1 on). A rejoin undone (a leave) and asked again says the same: the first rejoin
  // moved where the worker counts as finished, not what it pushed.
  shard_fixture f(tiny_spec(consistency::sync, 2));
  auto& self = *f.self;
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 0, 1.0f)});
  REQUIRE(f.push_pull(f.push_of(1, 0, 1.0f)));
  self->receive([](const wire_buffer&) {}, caf::after(timeout) >> [] { FAIL("not released"); });
  self->send(f.shard, leave_atom::value, int32_t{0});
  REQUIRE(f.push_pull(f.push_of(1, 1, 1.0f)));  // the mean of worker 1's alone
  CHECK(f.stats().updates == 2);
  auto point = ask_rejoin(f, 0);
  CHECK(point.clock == 2);
  CHECK(point.pushed == 1);
  self->send(f.shard, leave_atom::value, int32_t{0});
  point = ask_rejoin(f, 0);
  CHECK(point.clock == 2);
  CHECK(point.pushed == 1);
}

TEST_CASE("restore replaces values, optimizer state and clocks, and answers held pulls") {
  auto spec = tiny_spec(consistency::ssp, 2, 0);
  spec.optimizer.kind = optimizer_kind::momentum;
  shard_fixture f(spec);
  auto& self = *f.self;
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 0, 1.0f)});  // held: worker 1 is behind
  CHECK(f.stats().pulls_held == 1);
  std::vector<float> values(f.layout.shard_floats(0), 0.5f), state(values.size(), 0.25f);
  auto saved = encode_shard_checkpoint(spec, 0, 40, 17, 39, f.layout, values.data(), state.data(), 1);
  caf::error err;
  self->request(f.shard, timeout, restore_atom::value, saved, std::vector<uint32_t>{3, 4})
    .receive([](caf::ok_atom) {}, [&](caf::error& e) { err = e; });
  CHECK(err == caf::none);
  bool rolled_back = false;  // the held pull belonged to the old state
  self->receive([](const wire_buffer&) {},
                [&](caf::error& e) { rolled_back = code_of(e) == errc::rolled_back; },
                caf::after(timeout) >> [] {});
  CHECK(rolled_back);
  CHECK(f.stats().updates == 17);
  CHECK(f.stats().min_clock == 40);
  CHECK(f.snapshot() == std::vector<float>(f.layout.total_floats(), 0.5f));
  auto grad = std::vector<float>(f.layout.total_floats(), 1.0f);
  auto stale = f.push_pull(encode_push(0, 40, 0, f.layout, grad.data(), 0));
  REQUIRE_FALSE(stale);  // incarnation 0 is gone
  self->send(f.shard, push_pull_atom::value, push_request{encode_push(0, 40, 0, f.layout, grad.data(), 3)});
  auto params = f.push_pull(encode_push(1, 40, 0, f.layout, grad.data(), 4));
  REQUIRE(params);
  // momentum from the restored state, one push after the other with lr / workers = 0.5:
  // v1 = 0.9 × 0.25 + 1, v2 = 0.9 × v1 + 1, p = 0.5 − 0.5 v1 − 0.5 v2
  float v1 = 0.9f * 0.25f + 1.0f, v2 = 0.9f * v1 + 1.0f;
  CHECK((*params)[0] == doctest::Approx(0.5f - 0.5f * v1 - 0.5f * v2).epsilon(1e-5));
}

TEST_CASE("a shard drops bad pushes, counts them and keeps its state") {
  shard_fixture f(tiny_spec(consistency::async, 2));
  auto before = f.snapshot();
  auto good = f.push_of(0, 0, 1.0f);
  auto blocks = all_blocks(f.layout, 1.0f);

  auto truncated = wire_buffer::from_bytes(good.bytes(), good.size_bytes() / 2);
  std::vector<uint8_t> garbage(256);
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = uint8_t(i * 37 + 11);
  auto unknown_block = blocks;
  unknown_block[0].first = 99;
  auto wrong_count = blocks;
  wrong_count[1].second.pop_back();
  auto duplicate = blocks;
  duplicate[1] = duplicate[0];
  auto nan = blocks;
  nan[2].second[1] = std::numeric_limits<float>::quiet_NaN();
  auto inf = blocks;
  inf[3].second[0] = -std::numeric_limits<float>::infinity();
  auto missing = blocks;
  missing.pop_back();

  std::vector<bad_push> cases{
    {"empty", wire_buffer{}, errc::malformed_message},
    {"truncated", truncated, errc::malformed_message},
    {"garbage", wire_buffer::from_bytes(garbage.data(), garbage.size()), errc::malformed_message},
    {"unknown block", craft_push(0, 0, 0, unknown_block), errc::unknown_block},
    {"wrong element count", craft_push(0, 0, 0, wrong_count), errc::wrong_element_count},
    {"duplicate block", craft_push(0, 0, 0, duplicate), errc::missing_block},
    {"missing block", craft_push(0, 0, 0, missing), errc::missing_block},
    {"NaN", craft_push(0, 0, 0, nan), errc::non_finite_value},
    {"infinity", craft_push(0, 0, 0, inf), errc::non_finite_value},
    {"clock from the future", craft_push(0, 5, 0, blocks), errc::future_clock},
    {"unknown worker", craft_push(7, 0, 0, blocks), errc::unknown_worker},
    {"negative worker", craft_push(-1, 0, 0, blocks), errc::unknown_worker},
    {"other shard", craft_push(0, 0, 3, blocks), errc::wrong_shard},
  };
  check_each_dropped(f, cases, before);
  const uint64_t dropped = cases.size();
  auto stats = f.stats();
  CHECK(stats.updates == 0);
  CHECK(stats.pushes == 0);
  // The shard still serves, and worker 0 is still expected at clock 0.
  REQUIRE(f.push_pull(good));
  auto stale = f.push_pull(good);
  REQUIRE_FALSE(stale);
  CHECK(code_of(stale.error()) == errc::stale_clock);
  CHECK(f.stats().dropped == dropped + 1);
  CHECK(f.stats().updates == 1);
}

TEST_CASE("a shard refuses to serve before init and rejects a malformed init") {
  actor_fixture f;
  auto shard = spawn_ps_shard(*f.sys, 0);
  caf::error err;
  (*f.self)->request(shard, timeout, pull_atom::value, int32_t{0}, int64_t{0})
    .receive([](const wire_buffer&) {}, [&](caf::error& e) { err = e; });
  CHECK(code_of(err) == errc::not_initialized);
  std::vector<uint8_t> junk(64, 0xff);
  (*f.self)->request(shard, timeout, init_atom::value, wire_buffer::from_bytes(junk.data(), junk.size()))
    .receive([](caf::ok_atom) {}, [&](caf::error& e) { err = e; });
  CHECK(code_of(err) == errc::malformed_message);
  (*f.self)->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("a checkpoint of a clock passed without a snapshot is refused, not left unanswered") {
  auto spec = tiny_spec(consistency::sync, 1);
  spec.total_clocks = 10;
  spec.checkpoint_every = 2;
  shard_fixture f(spec, shard_config{"/nonexistent", {}});  // the root: only the clock is wrong
  for (int64_t c = 0; c < 6; ++c) REQUIRE(f.push_pull(f.push_of(0, c, 1.0f)));  // keeps 4 and 6
  // an evicted snapshot, and a clock off the schedule asked for too late (interrupt.cpp asks
  // again further ahead)
  for (auto [clock, code] : {std::pair{int64_t{2}, errc::checkpoint_failed},
                             std::pair{int64_t{3}, errc::checkpoint_clock_passed}}) {
    CAPTURE(clock);
    caf::error err;
    (*f.self)->request(f.shard, timeout, checkpoint_atom::value, std::string("/nonexistent"), clock)
      .receive([](file_record&) {}, [&](caf::error& e) { err = e; });
    REQUIRE(err != caf::none);
    CHECK(err.category() == error_category);
    CHECK(code_of(err) == code);
  }
}

TEST_CASE("sync: a reply's newest_clock counts only gradients already applied") {
  shard_fixture f(tiny_spec(consistency::sync, 2));
  auto& self = *f.self;
  auto newest_of = [&](const wire_buffer& reply) {
    auto msg = decode_shard_parameters(reply);
    REQUIRE(msg);
    return msg->newest_clock;
  };
  self->send(f.shard, push_pull_atom::value, push_request{f.push_of(0, 0, 1.0f)});  // kept, not applied
  int64_t newest = -2;
  self->request(f.shard, timeout, pull_atom::value, int32_t{1}, int64_t{0})
    .receive([&](const wire_buffer& r) { newest = newest_of(r); }, [](caf::error&) {});
  CHECK(newest == -1);  // worker 0's clock-0 gradient waits for worker 1's
  auto params = f.push_pull(f.push_of(1, 0, 3.0f));
  REQUIRE(params);
  self->receive([&](const wire_buffer& r) { newest = newest_of(r); },
                caf::after(timeout) >> [] { FAIL("not released"); });
  CHECK(newest == 0);  // the mean of clock 0 is in
}

TEST_CASE("an init identical to the installed one changes nothing, a different one is refused") {
  // Without a chief every worker of a user's own loop sends the same init (ps.hpp task_cluster).
  shard_fixture f(tiny_spec(consistency::sync, 1));
  auto after_one = f.push_pull(f.push_of(0, 0, 1.0f));
  REQUIRE(after_one);
  auto init_with = [&](const std::vector<float>& values) {
    std::vector<float> part(f.layout.shard_floats(0));
    f.layout.gather(0, values.data(), part.data());
    caf::error err;
    (*f.self)->request(f.shard, timeout, init_atom::value,
                       encode_shard_init(f.spec, 0, f.layout, part.data()))
      .receive([](caf::ok_atom) {}, [&](caf::error& e) { err = e; });
    return err;
  };
  CHECK(!init_with(f.initial));           // the same bytes: acknowledged ...
  CHECK(f.snapshot() == *after_one);      // ... and the update of clock 0 is still there
  auto other = f.initial;
  other[0] += 1;
  CHECK(code_of(init_with(other)) == errc::invalid_spec);
  CHECK(f.snapshot() == *after_one);
  CHECK(f.stats().dropped == 1);
}
