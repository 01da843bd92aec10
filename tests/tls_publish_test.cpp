// Mutual TLS on CAF's connections (tls_config.hpp, guarded publish over TLS, the connector): a
// peer with a certificate of the cluster's CA is served; a plain-TCP stranger, a TLS peer
// without a certificate, one with a self-signed certificate and one with a certificate of
// another CA are each refused before a message reaches the published actor, and each refusal
// is reported with the peer's address and OpenSSL's reason. Also check_tls_files.
#include "actors/guard/connect.hpp"
#include "actors/guard/guarded_publish.hpp"
#include "actors/guard/tls_config.hpp"
#include "actors/protocol/system_config.hpp"
#include "scratch_dir.hpp"
#include "tls_test_client.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <doctest/doctest.h>

#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

using namespace actorps;

namespace {

using adder_actor = caf::typed_actor<caf::replies_to<int32_t>::with<int32_t>>;

constexpr auto bound = std::chrono::seconds(10);  // every wait below ends by then

/// Counts what the adder answered: a refused peer must leave it at 0.
adder_actor::behavior_type counting_adder(std::shared_ptr<std::atomic<int>> served) {
  return {[served](int32_t x) {
    ++*served;
    return x + 1;
  }};
}

/// Runs a shell command; true when it exits 0.
bool run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

/// The certificates of the tests, made once: the cluster's (make_certs.sh), another CA's with the
/// same task names, and a self-signed one naming a task of the cluster.
struct certificates {
  test::scratch_dir dir{"actorps_tls"};
  std::string cluster = dir.path + "/cluster", other = dir.path + "/other";

  certificates() {
    const std::string script = std::string(ACTORPS_SOURCE_DIR) + "/scripts/make_certs.sh";
    REQUIRE(run(script + " " + cluster + " chief:0 worker:0"));
    REQUIRE(run(script + " " + other + " worker:0"));
    REQUIRE(run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
                " -subj /CN=worker:0 -keyout " + dir.path + "/self.key -out " + dir.path
                + "/self.pem"));
  }
  tls_files of(const std::string& task) const {
    return {cluster + "/" + task + ".pem", cluster + "/" + task + ".key", cluster + "/ca.pem"};
  }
  /// Another CA's worker:0, trusting the cluster's CA (its certificate is public).
  tls_files foreign() const { return {other + "/worker-0.pem", other + "/worker-0.key", cluster + "/ca.pem"}; }
  tls_files self_signed() const {
    return {dir.path + "/self.pem", dir.path + "/self.key", cluster + "/ca.pem"};
  }
};

const certificates& certs() {
  static certificates made;
  return made;
}

/// An actor system for one process: middleman, and TLS with `files` when given (no
/// check_tls_files: an attacker's files would not pass it).
struct node_config : caf::actor_system_config {
  explicit node_config(const std::optional<tls_files>& files) {
    configure_system(*this, 2, network_settings{});
    if (files) configure_tls(*this, *files);
  }
};

/// A TLS client with no certificate (tls_test_client.hpp) that sends a line.
std::pair<uint16_t, bool> bare_tls_client(uint16_t port, const std::string& ca) {
  return test::tls_client_without_certificate(port, ca, "hello\n", 6, bound.count());
}

/// A refusal as on_refused reported it.
struct refusal {
  std::string peer;
  std::string why;
};

/// chief:0's process: an adder published with publish_guarded over TLS on 127.0.0.1.
struct tls_server {
  node_config cfg{certs().of("chief-0")};
  caf::actor_system sys{cfg};
  caf::scoped_actor inbox{sys};
  std::shared_ptr<std::atomic<int>> served = std::make_shared<std::atomic<int>>(0);
  adder_actor published = sys.spawn(counting_adder, served);
  uint16_t port = 0;

  tls_server() {
    auto to = caf::actor_cast<caf::weak_actor_ptr>(inbox->ctrl());
    auto bound_port = publish_guarded(sys, published, "127.0.0.1", 0,
                                      [to](const std::string& peer, const std::string& why) {
                                        if (auto dest = caf::actor_cast<caf::actor>(to.lock()))
                                          caf::anon_send(dest, peer, why);
                                      });
    REQUIRE(bound_port);
    port = *bound_port;
  }
  ~tls_server() {
    sys.middleman().unpublish(published, port);
    caf::anon_send_exit(published, caf::exit_reason::user_shutdown);
  }

  std::optional<refusal> next_refusal() {
    std::optional<refusal> got;
    inbox->receive([&](std::string& peer, std::string& why) { got = refusal{peer, why}; },
                   caf::after(bound) >> [] {});
    return got;
  }
};

/// A client process with `files` (none: plain CAF) asks the server's adder for 41 + 1: the
/// answer, or the error that stopped it.
caf::expected<int32_t> ask(uint16_t port, const std::optional<tls_files>& files,
                           std::chrono::milliseconds connect_timeout = std::chrono::seconds(2)) {
  node_config cfg{files};
  caf::actor_system client{cfg};
  auto remote = connect_to<adder_actor>(client, {"127.0.0.1", port}, connect_timeout);
  if (!remote) return std::move(remote.error());
  caf::expected<int32_t> answer{caf::make_error(caf::sec::runtime_error, "no answer")};
  caf::scoped_actor self{client};
  self->request(*remote, bound, int32_t{41})
    .receive([&](int32_t x) { answer = x; }, [&](caf::error& err) { answer = std::move(err); });
  return answer;
}

/// A client with `files` is refused: it gets no answer, the adder served nobody, and the
/// server reported it from 127.0.0.1 with a reason holding `reason`.
void check_refused(const std::optional<tls_files>& files, const std::string& reason) {
  tls_server server;
  auto answer = ask(server.port, files);
  CHECK_MESSAGE(!answer, "the refused peer got an answer");
  auto refused = server.next_refusal();
  REQUIRE_MESSAGE(refused, "no refusal reported");
  CHECK(refused->peer.rfind("127.0.0.1:", 0) == 0);
  CHECK(refused->peer.size() > std::string("127.0.0.1:").size());
  INFO("why: " << refused->why);
  CHECK(refused->why.find("no TLS handshake with the cluster's certificates") != std::string::npos);
  CHECK(refused->why.find(reason) != std::string::npos);
  CHECK(*server.served == 0);
  // The server goes on serving the cluster.
  auto good = ask(server.port, certs().of("worker-0"));
  REQUIRE_MESSAGE(good, server.sys.render(good.error()));
  CHECK(*good == 42);
}

} // namespace

TEST_CASE("tls: a peer with a certificate of the cluster's CA is served") {
  tls_server server;
  auto answer = ask(server.port, certs().of("worker-0"));
  REQUIRE_MESSAGE(answer, server.sys.render(answer.error()));
  CHECK(*answer == 42);
  CHECK(*server.served == 1);
  // Nothing refused: the peer's connection, once its handshake is through, is no refusal even
  // when it closes.
  bool none = true;
  server.inbox->receive([&](std::string& peer, std::string& why) {
    none = false;
    FAIL_CHECK("refused " << peer << ": " << why);
  }, caf::after(std::chrono::milliseconds(0)) >> [] {});
  CHECK(none);
}

TEST_CASE("tls: a TLS peer without a certificate is refused and reported") {
  tls_server server;
  auto [local_port, read_something] = bare_tls_client(server.port, certs().cluster + "/ca.pem");
  CHECK(!read_something);
  auto refused = server.next_refusal();
  REQUIRE_MESSAGE(refused, "no refusal reported");
  CHECK(refused->peer == "127.0.0.1:" + std::to_string(local_port));
  INFO("why: " << refused->why);
  CHECK(refused->why.find("peer did not return a certificate") != std::string::npos);
  CHECK(*server.served == 0);
}

TEST_CASE("tls: a peer with a self-signed certificate is refused and reported") {
  check_refused(certs().self_signed(), "certificate verify failed");
}

TEST_CASE("tls: a peer with a certificate of another CA is refused and reported") {
  check_refused(certs().foreign(), "certificate verify failed");
}

TEST_CASE("tls: a plain TCP stranger is refused and reported with its address") {
  tls_server server;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) > 0);
  auto refused = server.next_refusal();
  ::close(fd);
  REQUIRE(refused);
  CHECK(refused->peer == "127.0.0.1:" + std::to_string(ntohs(local.sin_port)));
  CHECK(refused->why.find("http request") != std::string::npos);
  CHECK(*server.served == 0);
}

TEST_CASE("check_tls_files names the missing flag and the file that is wrong") {
  const auto& c = certs();
  auto good = c.of("worker-0");
  CHECK(check_tls_files(good).empty());
  CHECK(check_tls_files({}).empty());  // no TLS at all
  auto no_key = good;
  no_key.key.clear();
  CHECK(check_tls_files(no_key).rfind("--tls-key is missing", 0) == 0);
  auto no_ca = good;
  no_ca.ca.clear();
  CHECK(check_tls_files(no_ca).rfind("--tls-ca is missing", 0) == 0);
  auto absent = good;
  absent.cert = c.dir.path + "/nowhere.pem";
  CHECK(check_tls_files(absent).rfind("--tls-cert " + absent.cert + ": cannot read it", 0) == 0);
  auto not_pem = good;
  not_pem.ca = c.dir.path + "/not.pem";
  std::ofstream(not_pem.ca) << "hello\n";
  CHECK(check_tls_files(not_pem) == "--tls-ca " + not_pem.ca + ": not a PEM certificate");
  auto key_as_cert = good;
  key_as_cert.cert = good.key;
  CHECK(check_tls_files(key_as_cert).find("not a PEM certificate") != std::string::npos);
  auto wrong_key = good;
  wrong_key.key = c.cluster + "/chief-0.key";
  CHECK(check_tls_files(wrong_key)
        == "--tls-key " + wrong_key.key + " is not the key of --tls-cert " + good.cert);
  CHECK(check_tls_files(c.foreign()).find("does not verify against --tls-ca") != std::string::npos);
  CHECK(check_tls_files(c.self_signed()).find("does not verify against --tls-ca")
        != std::string::npos);
  CHECK(certificate_common_name(good.cert) == "worker:0");
}
