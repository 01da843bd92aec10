// Authorisation by role over mutual TLS (authorisation.hpp, peer_roles.hpp): a shard published
// over TLS in one process, and peers in other actor systems of the same process, each with a
// certificate of the cluster's CA naming its task. A worker's certificate cannot restore,
// checkpoint, init, admit, rejoin, make another worker leave, read the counters, or push as
// another worker; each refusal is not_authorised, counted, and the shard's state is unchanged.
// The same worker pushes as itself; the evaluator snapshots but cannot push; the chief
// checkpoints; only the chief stops an actor (an exit message, even kill). Also the origin check of
// every BASP message (basp_origin.hpp).
#include "actors/guard/basp_origin.hpp"
#include "actors/guard/connect.hpp"
#include "actors/guard/guarded_publish.hpp"
#include "actors/protocol/peer_roles.hpp"
#include "actors/guard/tls_config.hpp"
#include "actors/protocol/system_config.hpp"
#include "actors/roles/authorisation.hpp"
#include "actors/roles/evaluator.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shard_fixture.hpp"

#include <caf/all.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp/version.hpp>
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

using namespace actorps;
using namespace actorps::test;
namespace fs = std::filesystem;

namespace {

/// The cluster's certificates, made once with make_certs.sh.
struct task_certificates {
  scratch_dir dir{"actorps_authz"};
  task_certificates() {
    auto script = std::string(ACTORPS_SOURCE_DIR) + "/scripts/make_certs.sh";
    REQUIRE(std::system((script + " " + dir.path
                         + " chief:0 ps:0 worker:0 worker:1 evaluator:0 >/dev/null 2>&1")
                          .c_str())
            == 0);
  }
  tls_files of(const std::string& file) const {
    return {dir.path + "/" + file + ".pem", dir.path + "/" + file + ".key", dir.path + "/ca.pem"};
  }
};

const task_certificates& certs() {
  static task_certificates made;
  return made;
}

struct tls_node_config : caf::actor_system_config {
  explicit tls_node_config(const tls_files& files) {
    configure_system(*this, 2, network_settings{});
    configure_tls(*this, files);
  }
};

/// Two workers, async, a snapshot kept at every clock.
train_spec two_worker_spec() {
  auto spec = tiny_spec(consistency::async, 2);
  spec.checkpoint_every = 1;
  spec.total_clocks = 10;
  return spec;
}

/// ps:0's process: shard 0, initialised and at clock 1 (both workers pushed clock 0) by its own
/// process, published over TLS on 127.0.0.1.
struct ps_process {
  scratch_dir dir{"actorps_authz_ckpt"};
  std::string root = dir.path + "/ckpt";
  tls_node_config cfg{certs().of("ps-0")};
  caf::actor_system sys{cfg};
  caf::scoped_actor owner{sys};
  train_spec spec = two_worker_spec();
  block_layout layout{spec};
  ps_shard_actor shard = spawn_ps_shard(sys, 0, shard_config{root, {}});
  std::vector<float> grad = std::vector<float>(layout.total_floats(), 0.25f);
  uint16_t port = 0;

  ps_process() {
    fs::create_directories(root);
    std::vector<float> values(layout.shard_floats(0), 0.5f);
    REQUIRE_FALSE(ask<caf::ok_atom>(owner, init_atom::value, encode_shard_init(spec, 0, layout, values.data())));
    REQUIRE_FALSE(ask<wire_buffer>(owner, push_pull_atom::value, push_request{push(0, 0)}));
    REQUIRE_FALSE(ask<wire_buffer>(owner, push_pull_atom::value, push_request{push(1, 0)}));
    auto published = publish_guarded(sys, shard, "127.0.0.1", 0, {});
    REQUIRE(published);
    port = *published;
  }
  ~ps_process() {
    sys.middleman().unpublish(shard, port);
    caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
  }

  wire_buffer push(int32_t worker, int64_t clock) const {
    return encode_push(worker, clock, 0, layout, grad.data());
  }

  /// Sends `xs` to the shard as a request from `self`; the error it was answered with, if any.
  template <class Out, class... Ts>
  caf::error ask(caf::scoped_actor& self, Ts&&... xs) const {
    return ask_via<Out>(self, shard, std::forward<Ts>(xs)...);
  }
  /// The answer's type is `Out` (void: an empty answer).
  template <class Out, class... Ts>
  static caf::error ask_via(caf::scoped_actor& self, const ps_shard_actor& to, Ts&&... xs) {
    caf::error out = caf::make_error(caf::sec::request_timeout, "no answer");
    auto failed = [&](caf::error& e) { out = std::move(e); };
    auto handle = self->request(to, timeout, std::forward<Ts>(xs)...);
    if constexpr (std::is_void_v<Out>)
      handle.receive([&] { out = caf::none; }, failed);
    else
      handle.receive([&](Out&) { out = caf::none; }, failed);
    return out;
  }

  shard_stats stats() {
    shard_stats out;
    owner->request(shard, timeout, stats_atom::value)
      .receive([&](shard_stats& s) { out = s; }, [](caf::error& e) { FAIL(describe(e)); });
    return out;
  }
  std::vector<uint8_t> snapshot() {
    std::vector<uint8_t> out;
    owner->request(shard, timeout, snapshot_atom::value)
      .receive([&](wire_buffer& got) {  // flat(): a reply built by reference has segments apart
                 auto b = got.flat();
                 out.assign(b.bytes(), b.bytes() + b.size_bytes());
               },
               [](caf::error& e) { FAIL(describe(e)); });
    return out;
  }
  /// The shard's real checkpoint at clock 1, as the chief would fetch it.
  wire_buffer checkpoint_bytes() {
    wire_buffer out;
    owner->request(shard, timeout, checkpoint_atom::value, int64_t{1})
      .receive([&](wire_buffer& b) { out = std::move(b); }, [](caf::error& e) { FAIL(describe(e)); });
    return out;
  }
};

/// A task's process connected to the shard over TLS with its certificate (`file`: "worker-1").
struct peer_process {
  tls_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  ps_shard_actor shard;

  peer_process(const std::string& file, uint16_t port) : cfg(certs().of(file)) {
    auto remote = connect_to<ps_shard_actor>(sys, {"127.0.0.1", port}, timeout);
    REQUIRE_MESSAGE(remote, sys.render(remote.error()));
    shard = *remote;
  }
  template <class Out, class... Ts>
  caf::error ask(Ts&&... xs) {
    return ps_process::ask_via<Out>(self, shard, std::forward<Ts>(xs)...);
  }
};

/// `err` is not_authorised and names `what` and the sender `who`.
void check_not_authorised(const caf::error& err, const std::string& what, const std::string& who) {
  REQUIRE_MESSAGE(err, "accepted: " << what);
  INFO(describe(err));
  CHECK(err == make_error(errc::not_authorised));
  CHECK(describe(err).find(what) != std::string::npos);
  CHECK(describe(err).find(who) != std::string::npos);
}

} // namespace

TEST_CASE("tls roles: a worker's certificate cannot control the shard or push as another worker") {
  ps_process ps;
  auto saved = ps.checkpoint_bytes();
  auto before = ps.stats();
  auto values_before = ps.snapshot();
  REQUIRE(before.min_clock == 1);
  REQUIRE(before.pushes == 2);
  peer_process w1("worker-1", ps.port);

  std::vector<float> other(ps.layout.shard_floats(0), 9.0f);
  check_not_authorised(w1.ask<caf::ok_atom>(restore_atom::value, saved, std::vector<uint32_t>{7, 7}), "restore",
                       "worker:1");
  check_not_authorised(w1.ask<file_record>(checkpoint_atom::value, ps.root + "/ckpt-1", int64_t{1}),
                       "checkpoint", "worker:1");
  check_not_authorised(w1.ask<wire_buffer>(checkpoint_atom::value, int64_t{1}), "checkpoint", "worker:1");
  check_not_authorised(w1.ask<caf::ok_atom>(init_atom::value, encode_shard_init(ps.spec, 0, ps.layout, other.data())),
                       "init", "worker:1");
  check_not_authorised(w1.ask<caf::ok_atom>(admit_atom::value, int32_t{0}, int64_t{5}, uint32_t{3}), "admit",
                       "worker:1");
  check_not_authorised(w1.ask<rejoin_point>(rejoin_atom::value, int32_t{0}), "rejoin", "worker:1");
  check_not_authorised(w1.ask<void>(leave_atom::value, int32_t{0}), "leave of worker 0", "worker:1");
  check_not_authorised(w1.ask<wire_buffer>(push_pull_atom::value, push_request{ps.push(0, 1)}), "push_pull as worker 0",
                       "worker:1");
  check_not_authorised(w1.ask<wire_buffer>(pull_atom::value, int32_t{0}, int64_t{1}), "pull as worker 0",
                       "worker:1");
  check_not_authorised(w1.ask<shard_stats>(stats_atom::value), "stats", "worker:1");

  // Nothing changed: the values, the clocks, the pushes; no checkpoint file; each refusal counted.
  auto after = ps.stats();
  CHECK(after.refused_unauthorised == before.refused_unauthorised + 10);
  CHECK(after.dropped == before.dropped + 10);
  CHECK(after.pushes == before.pushes);
  CHECK(after.updates == before.updates);
  CHECK(after.min_clock == before.min_clock);
  CHECK(ps.snapshot() == values_before);
  CHECK_FALSE(fs::exists(ps.root + "/ckpt-1/shard-0.capnp"));

  // Worker 0 is still live (its leave was refused): its own push for clock 1 is accepted, and
  // worker 1 pushes as itself.
  CHECK_FALSE(ps.ask<wire_buffer>(ps.owner, push_pull_atom::value, push_request{ps.push(0, 1)}));
  auto own = w1.ask<wire_buffer>(push_pull_atom::value, push_request{ps.push(1, 1)});
  CHECK_MESSAGE(!own, describe(own));
  CHECK(w1.ask<void>(leave_atom::value, int32_t{1}) == caf::error{});  // leaving as itself passes
  auto last = ps.stats();
  CHECK(last.pushes == before.pushes + 2);
  CHECK(last.refused_unauthorised == after.refused_unauthorised);
}

TEST_CASE("tls roles: the evaluator snapshots but cannot push, the chief checkpoints") {
  ps_process ps;
  auto before = ps.stats();
  {
    peer_process eval("evaluator-0", ps.port);
    CHECK_FALSE(eval.ask<wire_buffer>(snapshot_atom::value));
    check_not_authorised(eval.ask<wire_buffer>(push_pull_atom::value, push_request{ps.push(0, 1)}), "push_pull as worker 0",
                         "evaluator:0");
    check_not_authorised(eval.ask<wire_buffer>(checkpoint_atom::value, int64_t{1}), "checkpoint",
                         "evaluator:0");
  }
  {
    peer_process chief("chief-0", ps.port);
    fs::create_directories(ps.root + "/ckpt-1");
    auto written = chief.ask<file_record>(checkpoint_atom::value, ps.root + "/ckpt-1", int64_t{1});
    CHECK_MESSAGE(!written, describe(written));
    CHECK(fs::exists(ps.root + "/ckpt-1/shard-0.capnp"));
    CHECK_FALSE(chief.ask<shard_stats>(stats_atom::value));
  }
  auto after = ps.stats();
  CHECK(after.refused_unauthorised == before.refused_unauthorised + 2);
  CHECK(after.pushes == before.pushes);
}

TEST_CASE("tls roles: the evaluator refuses a worker's eval and reports the refusal to the chief, which counts it") {
  ps_process ps;
  // The evaluator's process: its evaluator reads shard 0 over TLS as evaluator:0, and is
  // published over TLS itself, as a task node hands it to the chief.
  peer_process node("evaluator-0", ps.port);
  auto test_set = std::make_shared<dataset>();
  test_set->rows = 2;
  test_set->cols = 4;
  test_set->classes = 2;
  test_set->x = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
  test_set->y = {0, 1};
  auto evaluator = spawn_evaluator(node.sys, {ps.spec, test_set, {node.shard}, timeout});
  auto published = publish_guarded(node.sys, evaluator, "127.0.0.1", 0, {});
  REQUIRE(published);
  auto eval_as = [&](const std::string& file, eval_report* out) {
    tls_node_config cfg{certs().of(file)};
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    auto remote = connect_to<evaluator_actor>(sys, {"127.0.0.1", *published}, timeout);
    REQUIRE_MESSAGE(remote, sys.render(remote.error()));
    caf::error err = caf::make_error(caf::sec::request_timeout, "no answer");
    self->request(*remote, timeout, eval_atom::value, int64_t{1})
      .receive([&](eval_report& r) { err = caf::none; if (out) *out = r; },
               [&](caf::error& e) { err = std::move(e); });
    return err;
  };
  check_not_authorised(eval_as("worker-1", nullptr), "eval", "worker:1");
  check_not_authorised(eval_as("worker-0", nullptr), "eval", "worker:0");
  eval_report report;
  auto err = eval_as("chief-0", &report);
  REQUIRE_MESSAGE(!err, describe(err));
  CHECK(report.test_rows == 2);
  CHECK(report.refused == 2);  // what the chief adds to the summary's refused_unauthorised
  node.sys.middleman().unpublish(evaluator, *published);
  caf::anon_send_exit(evaluator, caf::exit_reason::user_shutdown);
}

TEST_CASE("tls roles: only the chief's certificate stops the shard, a worker's kill closes its own connection") {
  ps_process ps;
  auto refusals = basp_origin::refusals();
  {
    peer_process w1("worker-1", ps.port);
    w1.self->monitor(w1.shard);
    w1.self->send_exit(w1.shard, caf::exit_reason::kill);
    // The ps process closes the worker's connection: its proxy of the shard goes down.
    caf::error reason;
    w1.self->receive([&](caf::down_msg& dm) { reason = dm.reason; },
                     caf::after(timeout) >> [] { FAIL("the connection was not closed"); });
    CHECK(reason == caf::exit_reason::remote_link_unreachable);
  }
  CHECK(basp_origin::refusals() == refusals + 1);
  auto alive = ps.stats();  // the shard still answers, its state as before
  CHECK(alive.pushes == 2);
  CHECK(alive.min_clock == 1);
  {
    peer_process chief("chief-0", ps.port);
    ps.owner->monitor(ps.shard);
    chief.self->send_exit(chief.shard, caf::exit_reason::user_shutdown);
    caf::error reason;
    ps.owner->receive([&](caf::down_msg& dm) { reason = dm.reason; },
                      caf::after(timeout) >> [] { FAIL("the chief could not stop the shard"); });
    CHECK(reason == caf::exit_reason::user_shutdown);
  }
  CHECK(basp_origin::refusals() == refusals + 1);
}

TEST_CASE("tls roles: a certificate's CN names the task, anything else is nobody") {
  auto w = role_from_cn("worker:12");
  CHECK(w.kind == sender_role::kind_t::task);
  CHECK(w.type == "worker");
  CHECK(w.index == 12);
  for (auto cn : {"", "alice", "worker:", ":1", "worker:1x", "worker:99999999999"}) {
    CAPTURE(cn);
    CHECK(role_from_cn(cn).kind == sender_role::kind_t::unknown);
  }
  CHECK(authorise_chief(w, "init") == make_error(errc::not_authorised));
  CHECK_FALSE(authorise_chief(role_from_cn("chief:0"), "init"));
  CHECK(authorise_chief(role_from_cn("chief:1"), "init") == make_error(errc::not_authorised));
  CHECK_FALSE(authorise_worker(w, 12, "push_pull"));
  CHECK(authorise_worker(w, 3, "push_pull") == make_error(errc::not_authorised));
  CHECK_FALSE(authorise_reader(role_from_cn("evaluator:0"), "snapshot"));
  CHECK(authorise_reader(role_from_cn("ps:1"), "snapshot") == make_error(errc::not_authorised));
  sender_role open{sender_role::kind_t::open, "", -1, "a peer of a cluster without TLS"};
  CHECK_FALSE(authorise_chief(open, "restore"));  // without TLS everything is as before
}

namespace {

namespace basp = caf::io::basp;

/// A BASP header as CAF writes it, serialised (a handshake's operation data is the version).
std::vector<char> header_bytes(basp::message_type op, uint32_t payload_len, uint64_t data = 0,
                               caf::actor_id source = 1) {
  caf::actor_id dest = 2;
  if (op == basp::message_type::server_handshake || op == basp::message_type::client_handshake) {
    data = basp::version;
    source = dest = 0;
  }
  if (op == basp::message_type::down_message) dest = 0;  // a down message names no receiver
  basp::header hdr{op, 0, payload_len, data, source, dest};
  std::vector<char> out;
  caf::binary_serializer sink{nullptr, out};
  REQUIRE_FALSE(sink(hdr));
  return out;
}

/// A payload that begins with the node ids `from` (and `to`, when given).
std::vector<char> payload_bytes(const caf::node_id& from, const std::optional<caf::node_id>& to = {}) {
  std::vector<char> out;
  caf::binary_serializer sink{nullptr, out};
  REQUIRE_FALSE(sink(from));
  if (to) REQUIRE_FALSE(sink(*to));
  out.resize(out.size() + 16, 0);  // the rest of the message
  return out;
}

/// A direct message's payload as CAF writes it: no forwarding stack, then `msg`.
std::vector<char> content_bytes(caf::actor_system& sys, caf::message msg) {
  std::vector<char> out;
  std::vector<caf::strong_actor_ptr> stages;
  caf::binary_serializer sink{sys, out};
  REQUIRE_FALSE(sink(stages, msg));
  return out;
}

} // namespace

TEST_CASE("basp origin: a message claiming another node than the handshake's closes the connection") {
  auto here = caf::make_node_id(1, "0102030405060708090a0b0c0d0e0f1011121314");
  auto peer = caf::make_node_id(2, "1102030405060708090a0b0c0d0e0f1011121314");
  auto chief = caf::make_node_id(3, "2102030405060708090a0b0c0d0e0f1011121314");
  REQUIRE(here);
  REQUIRE(peer);
  REQUIRE(chief);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto bind_ok = [](const caf::node_id&) { return true; };
  auto feed = [&](basp_origin& o, std::vector<char> bytes, bool may_stop = false) {
    auto before = bytes;
    auto why = o.inspect(nullptr, bytes, bytes.size(), *here, bind_ok, may_stop);
    CHECK((bytes != before) == !why.empty());  // refused bytes are spoiled for CAF
    return why;
  };
  auto handshaken = [&] {
    basp_origin o;
    auto hs = payload_bytes(*peer);
    CHECK(feed(o, header_bytes(basp::message_type::client_handshake,
                               static_cast<uint32_t>(hs.size())))
            .empty());
    CHECK(feed(o, hs).empty());
    CHECK(o.peer() == *peer);
    return o;
  };
  auto refusals = basp_origin::refusals();

  {  // the peer's own messages pass: direct, heartbeat, routed and monitor from itself to here
    auto o = handshaken();
    CHECK(feed(o, header_bytes(basp::message_type::heartbeat, 0)).empty());
    auto direct = content_bytes(sys, caf::make_message(int32_t{1}));
    CHECK(feed(o, header_bytes(basp::message_type::direct_message, uint32_t(direct.size()))).empty());
    CHECK(feed(o, direct).empty());
    auto own = payload_bytes(*peer, *here);
    CHECK(feed(o, header_bytes(basp::message_type::routed_message, uint32_t(own.size()))).empty());
    CHECK(feed(o, own).empty());
    CHECK(feed(o, header_bytes(basp::message_type::monitor_message, uint32_t(own.size()))).empty());
    CHECK(feed(o, own).empty());
  }
  {  // a routed message "from" the chief's node
    auto o = handshaken();
    auto forged = payload_bytes(*chief, *here);
    CHECK(feed(o, header_bytes(basp::message_type::routed_message, uint32_t(forged.size()))).empty());
    auto why = feed(o, forged);
    CHECK(why.find("claiming to come from node") != std::string::npos);
  }
  {  // a down message for another node: no relaying
    auto o = handshaken();
    auto relay = payload_bytes(*peer, *chief);
    CHECK(feed(o, header_bytes(basp::message_type::down_message, uint32_t(relay.size()))).empty());
    CHECK(feed(o, relay).find("relays nothing") != std::string::npos);
  }
  {  // a second handshake: the same name passes (CAF repeats one at times), another does not
    auto o = handshaken();
    auto same = payload_bytes(*peer), other = payload_bytes(*chief);
    CHECK(feed(o, header_bytes(basp::message_type::client_handshake, uint32_t(same.size()))).empty());
    CHECK(feed(o, same).empty());
    CHECK(feed(o, header_bytes(basp::message_type::client_handshake, uint32_t(other.size()))).empty());
    CHECK(feed(o, other).find("second handshake naming node") != std::string::npos);
  }
  {  // an anonymous request: nobody to authorise
    auto o = handshaken();
    CHECK(feed(o, header_bytes(basp::message_type::direct_message, 8, 0, 0)).find("anonymous")
          != std::string::npos);
  }
  {  // an exit message: refused unless the peer may stop actors (its certificate is chief:0)
    auto exit = content_bytes(sys, caf::make_message(caf::exit_msg{{}, caf::exit_reason::kill}));
    auto chief_peer = handshaken();
    CHECK(feed(chief_peer, header_bytes(basp::message_type::direct_message, uint32_t(exit.size())), true).empty());
    CHECK(feed(chief_peer, exit, true).empty());
    auto o = handshaken();
    CHECK(feed(o, header_bytes(basp::message_type::direct_message, uint32_t(exit.size()))).empty());
    CHECK(feed(o, exit).find("an exit message") != std::string::npos);
  }
  {  // a forwarding stack, which actorps never sends and which would hide the message's type
    auto o = handshaken();
    std::vector<char> staged{1, 0, 0, 0, 0, 0, 0, 0, 0};
    CHECK(feed(o, header_bytes(basp::message_type::direct_message, uint32_t(staged.size()))).empty());
    CHECK(feed(o, staged).find("forwarding stack") != std::string::npos);
  }
  {  // a node id already bound to another certificate
    basp_origin o;
    auto hs = payload_bytes(*chief);
    CHECK(feed(o, header_bytes(basp::message_type::client_handshake, uint32_t(hs.size()))).empty());
    auto bytes = hs;
    auto why = o.inspect(nullptr, bytes, bytes.size(), *here,
                         [](const caf::node_id&) { return false; }, false);
    CHECK(why.find("another certificate") != std::string::npos);
    CHECK(bytes != hs);
  }
  CHECK(basp_origin::refusals() == refusals + 7);
}

TEST_CASE("peer roles: a node id is bound to one certificate at a time, and its messages stay its own after it closes") {
  auto here = caf::make_node_id(4, "3102030405060708090a0b0c0d0e0f1011121314");
  auto peer = caf::make_node_id(5, "4102030405060708090a0b0c0d0e0f1011121314");
  REQUIRE(here);
  REQUIRE(peer);
  CHECK(bind_peer(*here, *peer, "worker:1"));
  CHECK(bind_peer(*here, *peer, "worker:1"));   // a second connection of the same task
  CHECK_FALSE(bind_peer(*here, *peer, "chief:0"));
  CHECK(bound_cn(*here, *peer) == "worker:1");
  unbind_peer(*here, *peer);
  CHECK(bound_cn(*here, *peer) == "worker:1");
  unbind_peer(*here, *peer);
  // Closed: what it delivered before is still worker:1's (a message may wait in a mailbox)...
  CHECK(bound_cn(*here, *peer) == "worker:1");
  // ...and the id is free again: a new connection may bind it to another task.
  CHECK(bind_peer(*here, *peer, "chief:0"));
  CHECK(bound_cn(*here, *peer) == "chief:0");
  CHECK_FALSE(bind_peer(*here, *peer, "worker:1"));
  unbind_peer(*here, *peer);
  auto never = caf::make_node_id(6, "5102030405060708090a0b0c0d0e0f1011121314");
  REQUIRE(never);
  CHECK(bound_cn(*here, *never).empty());
}
