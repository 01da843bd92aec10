// A stranger on a ps task's CAF port (no TLS: anyone who can reach it) gets the shard from the
// ps task and asks it for a checkpoint into a directory of its choosing: refused, counted,
// nothing created there, and the shard goes on training and checkpointing under its own root.
#include "actors/deploy/ps_task.hpp"
#include "actors/protocol/system_config.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shard_fixture.hpp"

#include <caf/io/all.hpp>
#include <doctest/doctest.h>

#include <filesystem>

using namespace actorps;
using namespace actorps::test;
namespace fs = std::filesystem;

namespace {

caf::actor_system_config& with_network(caf::actor_system_config& cfg) {
  configure_system(cfg, 2, network_settings{});
  return cfg;
}

/// One worker, async, a snapshot kept at every clock.
train_spec checkpointed_spec() {
  auto spec = tiny_spec(consistency::async, 1);
  spec.checkpoint_every = 1;
  spec.total_clocks = 10;
  return spec;
}

/// A ps process in miniature: shard 0 of a one-worker async run with checkpoints every clock,
/// configured with `root`, initialised, its ps task published on 127.0.0.1.
struct ps_process {
  caf::actor_system_config cfg;
  caf::actor_system sys{with_network(cfg)};
  train_spec spec;
  block_layout layout;
  ps_shard_actor shard;
  ps_task_actor task;
  uint16_t port = 0;

  explicit ps_process(const std::string& root) : spec(checkpointed_spec()), layout(spec) {
    shard = spawn_ps_shard(sys, 0, shard_config{root, {}});
    std::vector<float> values(layout.shard_floats(0), 0.5f);
    caf::scoped_actor self{sys};
    bool ok = false;
    auto init = encode_shard_init(spec, 0, layout, values.data());
    self->request(shard, timeout, init_atom::value, init)
      .receive([&](caf::ok_atom) { ok = true; }, [&](caf::error& e) { FAIL(describe(e)); });
    REQUIRE(ok);
    task = spawn_ps_task(sys, {shard, 0, {}});
    auto published = sys.middleman().publish(task, 0, "127.0.0.1", true);
    REQUIRE(published);
    port = *published;
  }
  ~ps_process() {
    sys.middleman().unpublish(task, port);
    caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
  }

  caf::expected<file_record> checkpoint(caf::scoped_actor& self, const ps_shard_actor& to,
                                        const std::string& dir, int64_t clock) {
    caf::expected<file_record> out{caf::none};
    self->request(to, timeout, checkpoint_atom::value, dir, clock)
      .receive([&](file_record& r) { out = std::move(r); },
               [&](caf::error& e) { out = std::move(e); });
    return out;
  }
};

} // namespace

TEST_CASE("a stranger's checkpoint request over CAF cannot write outside the ps task's root") {
  scratch_dir dir;
  auto root = dir.path + "/ckpt";
  fs::create_directories(root + "/ckpt-1");
  ps_process ps(root);
  caf::scoped_actor owner{ps.sys};
  std::vector<float> grad(ps.layout.total_floats(), 0.25f);
  auto push = [&](int64_t clock) { return encode_push(0, clock, 0, ps.layout, grad.data()); };
  owner->request(ps.shard, timeout, push_pull_atom::value, push_request{push(0)})
    .receive([](const wire_buffer&) {}, [](caf::error& e) { FAIL(describe(e)); });

  {  // the stranger: its own actor system, the ps task's port, no certificate asked
    caf::actor_system_config cfg;
    caf::actor_system stranger{with_network(cfg)};
    auto task = stranger.middleman().remote_actor<ps_task_actor>("127.0.0.1", ps.port);
    REQUIRE(task);
    caf::scoped_actor self{stranger};
    ps_shard_actor shard;
    self->request(*task, timeout, shard_atom::value)
      .receive([&](ps_shard_actor& s) { shard = s; }, [&](caf::error& e) { FAIL(describe(e)); });
    REQUIRE(shard);
    for (auto target : {dir.path + "/chosen", root + "/../chosen", root + "/ckpt-1/../../chosen"}) {
      CAPTURE(target);
      auto refused = ps.checkpoint(self, shard, target, 1);
      REQUIRE_FALSE(refused);
      CHECK(refused.error() == make_error(errc::outside_checkpoint_root));
    }
    CHECK_FALSE(fs::exists(dir.path + "/chosen"));
    self->request(shard, timeout, stats_atom::value)
      .receive([&](shard_stats& s) { CHECK(s.checkpoints_refused == 3); },
               [&](caf::error& e) { FAIL(describe(e)); });
  }

  // The run goes on: the next clock trains and the owner's checkpoint lands under the root.
  owner->request(ps.shard, timeout, push_pull_atom::value, push_request{push(1)})
    .receive([](const wire_buffer&) {}, [](caf::error& e) { FAIL(describe(e)); });
  auto written = ps.checkpoint(owner, ps.shard, root + "/ckpt-1", 1);
  REQUIRE(written);
  CHECK(fs::exists(root + "/ckpt-1/shard-0.capnp"));
  CHECK(std::vector<std::string>{"ckpt"} == [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename());
    return names;
  }());
}
