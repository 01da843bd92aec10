// The actor a ps process publishes (actors/deploy/ps_task.hpp) and connect_shard, which finds a
// shard and its data link through it: the shard's own interface says nothing about sockets.
#include "actors/link/data_link_path.hpp"
#include "actors/deploy/ps_task.hpp"
#include "actors/deploy/remote_shard.hpp"
#include "actors/link/shard_link_server.hpp"
#include "actors/protocol/system_config.hpp"
#include "shard_fixture.hpp"

#include <caf/io/all.hpp>
#include <doctest/doctest.h>

#include <map>
#include <memory>

using namespace actorps;
using namespace actorps::test;

namespace {

enum class offered { local_and_tcp, tcp_only, none };

caf::actor_system_config& with_network(caf::actor_system_config& cfg) {
  configure_system(cfg, 2, network_settings{});
  return cfg;
}

/// A ps process in miniature: a shard, its data link (as `what` says) and the ps task that
/// tells clients about both, published on 127.0.0.1.
struct ps_process {
  caf::actor_system_config cfg;
  caf::actor_system sys{with_network(cfg)};
  ps_shard_actor shard = spawn_ps_shard(sys, 0);
  std::unique_ptr<shard_link_server> links;
  ps_task_actor task;
  uint16_t port = 0;

  explicit ps_process(offered what) {
    ps_task_config tc{shard, 0, {}};
    if (what != offered::none) {
      auto listening = shard_link_server::listen("127.0.0.1", 0, [](const std::string&) {});
      REQUIRE(listening);
      links = std::move(*listening);
      links->serve(sys, shard, 0);
      tc.link_port = links->port();
      if (what == offered::local_and_tcp) tc.link_name = links->local_name();
    }
    task = spawn_ps_task(sys, tc);
    auto published = sys.middleman().publish(task, 0, "127.0.0.1", true);
    REQUIRE(published);
    port = *published;
  }
  ~ps_process() {
    sys.middleman().unpublish(task, port);
    caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
    links.reset();
  }
};

} // namespace

TEST_CASE("a ps task hands out its shard and its data link, and stops with the shard") {
  actor_fixture f;
  auto shard = spawn_ps_shard(*f.sys, 0);
  auto task = spawn_ps_task(*f.sys, {shard, 4711, "actorps-link-test"});
  auto& self = *f.self;
  self->request(task, timeout, shard_atom::value)
    .receive([&](ps_shard_actor& handed) { CHECK(handed == shard); },
             [&](caf::error& err) { FAIL(describe(err)); });
  self->request(task, timeout, link_atom::value)
    .receive(
      [&](uint16_t port, std::string& name) {
        CHECK(port == 4711);
        CHECK(name == "actorps-link-test");
      },
      [&](caf::error& err) { FAIL(describe(err)); });
  self->monitor(task);
  self->send_exit(shard, caf::exit_reason::kill);
  bool down = false;
  self->receive(
    [&](caf::down_msg& dm) {
      down = true;
      CHECK(dm.source == task.address());
      CHECK(dm.reason == caf::exit_reason::kill);  // the shard's reason, for whoever watches
    },
    caf::after(timeout) >> [] {});
  CHECK(down);
}

TEST_CASE("connect_shard reaches the shard through the published ps task, with the offered link") {
  auto spec = tiny_spec(consistency::async, 1);
  block_layout layout(spec);
  struct expectation {
    offered what;
    const char* transport;
    data_link_path path = data_link_path::automatic;  ///< --data-link
  };
  for (auto e : {expectation{offered::local_and_tcp, "shared memory"},
                 expectation{offered::local_and_tcp, "local socket", data_link_path::socket},
                 expectation{offered::local_and_tcp, "tcp", data_link_path::tcp},
                 expectation{offered::tcp_only, "tcp"}, expectation{offered::none, "caf"}}) {
    CAPTURE(e.transport);
    set_data_link_path(e.path);
    ps_process ps{e.what};
    caf::actor_system_config cfg;
    caf::actor_system client{with_network(cfg)};
    auto remote = connect_shard(client, {"127.0.0.1", ps.port}, 0, std::chrono::seconds(10),
                                std::chrono::milliseconds(10000));
    REQUIRE_MESSAGE(remote, describe(remote.error()));
    CHECK(std::string(remote->transport()) == e.transport);
    {
      caf::scoped_actor self{client};
      // init goes to the shard over CAF, push_pull over the link (when there is one).
      std::vector<float> initial(layout.total_floats(), 2.0f), grad(layout.total_floats(), 0.5f);
      bool initialised = false;
      self->request(remote->handle, timeout, init_atom::value,
                    encode_shard_init(spec, 0, layout, initial.data()))
        .receive([&](caf::ok_atom) { initialised = true; },
                 [&](caf::error& err) { FAIL(describe(err)); });
      REQUIRE(initialised);
      std::vector<float> params(layout.total_floats(), 0.0f);
      self->request(remote->handle, timeout, push_pull_atom::value,
                    push_request{encode_push(0, 0, 0, layout, grad.data())})
        .receive(
          [&](const wire_buffer& reply) {
            REQUIRE(scatter_shard_parameters(reply, layout, params.data()));
          },
          [&](caf::error& err) { FAIL(describe(err)); });
      for (float p : params) CHECK(p == doctest::Approx(1.5f));  // SGD, lr 1: 2 - 0.5
    }
    remote->close();
  }
  set_data_link_path(data_link_path::automatic);
}

namespace {

/// Worker `w` of a loop of its own asking ps:0 to go on with `shards` and `workers`: the
/// answer comes to `observer` as (w, clock), or (w, the error's text).
void ask_scale(caf::actor_system& sys, const ps_task_actor& task, const caf::actor& observer,
               int32_t w, int32_t shards, int32_t workers = 3) {
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(task, caf::infinite, scale_atom::value, w, shards, workers)
      .then([=](int64_t clock) { self->send(observer, w, clock); },
            [=](caf::error& err) { self->send(observer, w, describe(err)); });
  });
}

/// Spare worker `w` waiting at ps:0 to be taken in: the answer comes to `observer` as (w, the
/// changes made), or (w, the error's text).
void ask_join(caf::actor_system& sys, const ps_task_actor& task, const caf::actor& observer,
              int32_t w) {
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(task, caf::infinite, join_atom::value, w)
      .then([=](const std::vector<int64_t>& changes) { self->send(observer, w, changes); },
            [=](caf::error& err) { self->send(observer, w, describe(err)); });
  });
}

} // namespace

TEST_CASE("ps:0 is where the workers of a loop of their own meet to change the shards") {
  actor_fixture f;
  auto shard = spawn_ps_shard(*f.sys, 0);
  ps_task_config tc{shard, 0, {}};
  tc.finish_after = 3;  // workers 0, 1 and 2
  auto task = spawn_ps_task(*f.sys, tc);
  auto& self = *f.self;
  auto me = caf::actor_cast<caf::actor>(self);
  std::map<int32_t, int64_t> clocks;
  std::map<int32_t, std::string> errors;
  auto answered = [&](std::chrono::milliseconds within) {
    bool any = false;
    self->receive([&](int32_t w, int64_t clock) { clocks[w] = clock; any = true; },
                  [&](int32_t w, std::string& why) { errors[w] = why; any = true; },
                  caf::after(within) >> [] {});
    return any;
  };
  auto outcome = [&](int32_t shards, int64_t clock, const std::string& why) {
    self->request(task, timeout, scale_atom::value, done_atom::value, shards, int32_t{3}, clock,
                  why)
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { FAIL(describe(err)); });
  };

  // Held until every worker has asked; worker 0 is told to move the state (-1), the others the
  // clock it says the change went on from.
  ask_scale(*f.sys, task, me, 1, 2);
  ask_scale(*f.sys, task, me, 2, 2);
  CHECK_FALSE(answered(std::chrono::milliseconds(200)));
  ask_scale(*f.sys, task, me, 0, 2);
  REQUIRE(answered(timeout));
  CHECK(clocks == std::map<int32_t, int64_t>{{0, -1}});
  CHECK_FALSE(answered(std::chrono::milliseconds(100)));
  outcome(2, 7, "");
  REQUIRE(answered(timeout));
  REQUIRE(answered(timeout));
  CHECK(clocks == std::map<int32_t, int64_t>{{0, -1}, {1, 7}, {2, 7}});
  CHECK(errors.empty());

  // Two numbers: both refused, each naming the two, and the one waiting with them.
  clocks.clear();
  ask_scale(*f.sys, task, me, 2, 3);
  ask_scale(*f.sys, task, me, 1, 3);
  CHECK_FALSE(answered(std::chrono::milliseconds(200)));
  ask_scale(*f.sys, task, me, 0, 1);
  for (int i = 0; i < 3; ++i) REQUIRE(answered(timeout));
  CHECK(clocks.empty());
  REQUIRE(errors.size() == 3);
  for (const auto& [w, why] : errors) {
    CAPTURE(w);
    CHECK(why.find("worker 0 asks for 1 shards and 3 workers, worker 1 for 3 and 3")
          != std::string::npos);
  }

  // A worker that has finished is not waited for; worker 0's failure reaches the others.
  errors.clear();
  self->request(task, timeout, done_atom::value, int32_t{1})
    .receive([](caf::ok_atom) {}, [&](caf::error& err) { FAIL(describe(err)); });
  ask_scale(*f.sys, task, me, 1, 2);  // refused: it has finished
  REQUIRE(answered(timeout));
  CHECK(errors[1].find("worker 1 has finished") != std::string::npos);
  ask_scale(*f.sys, task, me, 2, 2);
  ask_scale(*f.sys, task, me, 0, 2);
  REQUIRE(answered(timeout));
  CHECK(clocks == std::map<int32_t, int64_t>{{0, -1}});
  outcome(2, -1, "the spare ps:2 could not be reached");
  REQUIRE(answered(timeout));
  CHECK(errors[2].find("the spare ps:2 could not be reached") != std::string::npos);
  caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("ps:0 takes spare workers in with a change of workers, and lets them go at the end") {
  actor_fixture f;
  auto shard = spawn_ps_shard(*f.sys, 0);
  ps_task_config tc{shard, 0, {}};
  tc.finish_after = 4;  // workers 0..3 listed
  tc.training = 2;      // 0 and 1 in the job from the start, 2 and 3 spares
  auto task = spawn_ps_task(*f.sys, tc);
  auto& self = *f.self;
  auto me = caf::actor_cast<caf::actor>(self);
  std::map<int32_t, int64_t> clocks;
  std::map<int32_t, std::string> errors;
  std::map<int32_t, std::vector<int64_t>> taken_in;
  auto answered = [&](std::chrono::milliseconds within) {
    bool any = false;
    self->receive([&](int32_t w, int64_t clock) { clocks[w] = clock; any = true; },
                  [&](int32_t w, std::string& why) { errors[w] = why; any = true; },
                  [&](int32_t w, std::vector<int64_t>& c) { taken_in[w] = c; any = true; },
                  caf::after(within) >> [] {});
    return any;
  };
  auto outcome = [&](int32_t shards, int32_t workers, int64_t clock) {
    self->request(task, timeout, scale_atom::value, done_atom::value, shards, workers, clock,
                  std::string{})
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { FAIL(describe(err)); });
  };
  auto done = [&](int32_t w) {
    self->request(task, timeout, done_atom::value, w)
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { FAIL(describe(err)); });
  };

  // The spares wait; a spare cannot ask for a change; a number beyond the listed is refused.
  ask_join(*f.sys, task, me, 2);
  ask_join(*f.sys, task, me, 3);
  ask_scale(*f.sys, task, me, 3, 1, 3);
  REQUIRE(answered(timeout));
  CHECK(errors[3].find("worker 3 is not in the job") != std::string::npos);
  ask_scale(*f.sys, task, me, 1, 1, 5);
  REQUIRE(answered(timeout));
  CHECK(errors[1].find("the number of workers is 1 to the 4 worker tasks listed (got 5)")
        != std::string::npos);
  errors.clear();

  // 0 and 1 grow the job to 3 workers at clock 5: spare 2 is taken in with the change, 3 waits.
  ask_scale(*f.sys, task, me, 1, 1, 3);
  ask_scale(*f.sys, task, me, 0, 1, 3);
  REQUIRE(answered(timeout));
  CHECK(clocks == std::map<int32_t, int64_t>{{0, -1}});
  outcome(1, 3, 5);
  REQUIRE(answered(timeout));
  REQUIRE(answered(timeout));
  CHECK(clocks == std::map<int32_t, int64_t>{{0, -1}, {1, 5}});
  CHECK(taken_in == std::map<int32_t, std::vector<int64_t>>{{2, {1, 3, 5}}});
  CHECK_FALSE(answered(std::chrono::milliseconds(100)));  // 3 still waits
  CHECK(errors.empty());

  // The next change waits for worker 2 too; it shrinks to 2 workers at clock 9: 2 is out.
  clocks.clear();
  ask_scale(*f.sys, task, me, 0, 1, 2);
  ask_scale(*f.sys, task, me, 1, 1, 2);
  CHECK_FALSE(answered(std::chrono::milliseconds(200)));
  ask_scale(*f.sys, task, me, 2, 1, 2);
  REQUIRE(answered(timeout));
  CHECK(clocks == std::map<int32_t, int64_t>{{0, -1}});
  outcome(1, 2, 9);
  REQUIRE(answered(timeout));
  REQUIRE(answered(timeout));
  CHECK(clocks == std::map<int32_t, int64_t>{{0, -1}, {1, 9}, {2, 9}});
  ask_scale(*f.sys, task, me, 2, 1, 3);
  REQUIRE(answered(timeout));
  CHECK(errors[2].find("worker 2 is not in the job") != std::string::npos);

  // Worker 0's wait for the others counts the job's workers: 1, not 2 (out) nor 3 (a spare).
  f.sys->spawn([task, me](caf::event_based_actor* s) {
    s->request(task, caf::infinite, done_atom::value, others_atom::value, int32_t{0})
      .then([=](caf::ok_atom) { s->send(me, int32_t{0}, std::string{"others done"}); });
  });
  CHECK_FALSE(answered(std::chrono::milliseconds(200)));
  done(2);
  CHECK_FALSE(answered(std::chrono::milliseconds(200)));
  done(1);
  REQUIRE(answered(timeout));
  CHECK(errors[0] == "others done");

  // Once every worker in the job has finished, the spare still waiting is let go, and a spare
  // asking later is refused at once.
  done(0);
  REQUIRE(answered(timeout));
  CHECK(errors[3].find("the job finished without taking worker 3 in") != std::string::npos);
  errors.clear();
  ask_join(*f.sys, task, me, 3);
  REQUIRE(answered(timeout));
  CHECK(errors[3].find("the job finished without taking worker 3 in") != std::string::npos);
  caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
}
