// Every refusal as not authorised is counted where the summary reads it: a ps task's shard (as
// deployment.hpp's host_shard hosts it, over mutual TLS) reports among its own refusals those of
// its data link (link_authorisation.hpp) and of its ps task. A worker's certificate asks as
// another worker once on each — the ps task (done), the shard over CAF (push_pull), the shard
// over the data link (push_pull) — and the shard's counters, which the chief's summary adds up
// (refused_unauthorised), say 3; before, they said 1 (only the shard's own over CAF).
#include "actors/deploy/deployment.hpp"
#include "actors/guard/connect.hpp"
#include "actors/guard/guarded_publish.hpp"
#include "actors/deploy/remote_shard.hpp"
#include "actors/guard/tls_config.hpp"
#include "actors/protocol/system_config.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shard_fixture.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <doctest/doctest.h>

#include <cstdlib>

using namespace actorps;
using namespace actorps::test;

namespace {

struct refusal_certificates {
  scratch_dir dir{"actorps_refusals"};
  refusal_certificates() {
    auto script = std::string(ACTORPS_SOURCE_DIR) + "/scripts/make_certs.sh";
    REQUIRE(std::system((script + " " + dir.path + " ps:0 worker:0 worker:1 >/dev/null 2>&1").c_str())
            == 0);
  }
  tls_files of(const std::string& stem) const {
    return {dir.path + "/" + stem + ".pem", dir.path + "/" + stem + ".key", dir.path + "/ca.pem"};
  }
};

struct tls_system_config : caf::actor_system_config {
  explicit tls_system_config(const tls_files& files) {
    configure_system(*this, 2, network_settings{});
    configure_tls(*this, files);
  }
};

bool not_authorised(const caf::error& err) { return err && is_error(err, errc::not_authorised); }

/// The error `to` answers `xs` with (none: an answer of type `Out`).
template <class Out, class Handle, class... Ts>
caf::error ask(caf::scoped_actor& self, const Handle& to, Ts... xs) {
  caf::error out = caf::make_error(caf::sec::request_timeout, "no answer");
  self->request(to, timeout, xs...)
    .receive([&](Out&) { out = caf::none; }, [&](caf::error& e) { out = std::move(e); });
  return out;
}

} // namespace

TEST_CASE("refusals as not authorised: a ps task's shard counts its data link's and its task's with its own") {
  refusal_certificates certs;
  auto spec = tiny_spec(consistency::async, 2);
  block_layout layout{spec};

  // ps:0's process: the shard, its ps task and its data link, as run_task hosts them.
  tls_system_config ps_cfg{certs.of("ps-0")};
  caf::actor_system ps_sys{ps_cfg};
  caf::scoped_actor owner{ps_sys};
  cluster_spec cluster;
  cluster.jobs["ps"] = {host_port{"127.0.0.1", 0}};
  auto hosted = host_shard(ps_sys, cluster, 0, 0, 0, "127.0.0.1", 0, {}, certs.of("ps-0"));
  REQUIRE(hosted);
  std::vector<float> values(layout.shard_floats(0), 0.5f);
  owner->request(hosted->shard, timeout, init_atom::value, encode_shard_init(spec, 0, layout, values.data()))
    .receive([](caf::ok_atom) {}, [](caf::error& e) { FAIL(describe(e)); });
  auto port = publish_guarded(ps_sys, hosted->task, "127.0.0.1", 0, {});
  REQUIRE(port);
  auto stats = [&] {
    shard_stats out;
    owner->request(hosted->shard, timeout, stats_atom::value)
      .receive([&](shard_stats& s) { out = s; }, [](caf::error& e) { FAIL(describe(e)); });
    return out;
  };
  std::vector<float> grad(layout.total_floats(), 0.25f);
  auto as_worker_0 = encode_push(0, 0, 0, layout, grad.data());
  {
    // worker:1's process, with its own certificate.
    tls_system_config cfg{certs.of("worker-1")};
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    auto remote = connect_shard(sys, {"127.0.0.1", *port}, 0, timeout, std::chrono::seconds(10));
    REQUIRE_MESSAGE(remote, describe(remote.error()));
    REQUIRE(remote->link);  // the data link is in use: its refusal is the link's
    CHECK(stats().refused_unauthorised == 0);
    CHECK(not_authorised(ask<caf::ok_atom>(self, remote->task, done_atom::value, int32_t{0})));          // its ps task
    CHECK(stats().refused_unauthorised == 1);
    CHECK(not_authorised(ask<wire_buffer>(self, remote->shard, push_pull_atom::value, push_request{as_worker_0})));   // CAF
    CHECK(stats().refused_unauthorised == 2);
    CHECK(not_authorised(ask<wire_buffer>(self, remote->handle, push_pull_atom::value, push_request{as_worker_0})));  // data link
    CHECK(hosted->links->unauthorised() == 1);
    remote->close();
  }
  auto after = stats();
  CHECK(after.refused_unauthorised == 3);
  CHECK(after.pushes == 0);
  ps_sys.middleman().unpublish(hosted->task, *port);
  caf::anon_send_exit(hosted->shard, caf::exit_reason::user_shutdown);
  hosted->links.reset();
}
