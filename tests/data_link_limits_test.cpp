// The data link server's bounds (link_limits.hpp), driven by raw sockets as a stranger would:
// a fixed thread count under hundreds of connections, the connection over the limit refused,
// oversize frames refused before they are allocated, a client that never reads its replies
// held to its bound while others are served, a silent stranger timed out, accepting again
// after the descriptors ran out.
#include "descriptor_limit.hpp"
#include "link_fixture.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

using namespace actorps;
using namespace actorps::test;

namespace {

constexpr auto request_timeout = link_request_timeout;

/// A link server with `limits` in front of `shard`; its log lines go to `self`'s mailbox.
std::unique_ptr<shard_link_server> serve_links(actor_fixture& f, const ps_shard_actor& shard,
                                               link_limits limits) {
  caf::actor me = caf::actor_cast<caf::actor>(*f.self);
  auto listening = shard_link_server::listen(
    "127.0.0.1", 0, [me](const std::string& line) { caf::anon_send(me, line_atom::value, line); },
    limits);
  REQUIRE(listening);
  (*listening)->serve(*f.sys, shard, 0);
  return std::move(*listening);
}

/// The next log line containing `what` (others are skipped), or "" after 10 s.
std::string await_line(actor_fixture& f, const std::string& what) {
  std::string found;
  bool waiting = true;
  while (waiting) {
    (*f.self)->receive(
      [&](line_atom, std::string& line) {
        if (line.find(what) != std::string::npos) found = std::move(line), waiting = false;
      },
      caf::after(timeout) >> [&] { waiting = false; });
  }
  return found;
}

bool send_all(int fd, const void* data, std::size_t n) {
  return ::send(fd, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}

/// Reads one frame header; false when the connection ended (or 10 s passed) first.
bool read_header(int fd, frame_header& h) {
  return ::recv(fd, &h, sizeof h, MSG_WAITALL) == static_cast<ssize_t>(sizeof h);
}

/// Reads a failure frame's text (after its header).
std::string read_text(int fd, const frame_header& h) {
  std::string text(h.size, '\0');
  if (h.size > 0 && ::recv(fd, text.data(), text.size(), MSG_WAITALL) != ssize_t(h.size)) return {};
  return text;
}

/// A raw client that has said hello to shard 0 and been answered.
int hello_client(uint16_t port) {
  int fd = stranger_to(port);
  auto hello = make_header(frame_kind::hello, 0, 0, 10000);
  REQUIRE(send_all(fd, &hello, sizeof hello));
  frame_header h;
  REQUIRE(read_header(fd, h));
  REQUIRE(h.kind == static_cast<uint16_t>(frame_kind::reply));
  return fd;
}

/// True once the peer has closed `fd` (within 10 s).
bool closed_by_peer(int fd) {
  char byte;
  for (;;) {
    auto n = ::recv(fd, &byte, 1, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0) return false;  // timed out
  }
}

std::size_t thread_count() {
  std::size_t n = 0;
  DIR* dir = ::opendir("/proc/self/task");
  while (auto* e = ::readdir(dir)) n += e->d_name[0] != '.';
  ::closedir(dir);
  return n;
}

/// A field of /proc/self/status in kB ("VmRSS", "VmPeak").
long status_kb(const std::string& field) {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

std::size_t open_descriptors() {
  std::size_t n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (auto* e = ::readdir(dir)) n += e->d_name[0] != '.';
  ::closedir(dir);
  return n - 1;  // the directory's own
}

/// A push_pull over a real client (remote_shard), as a worker sends it.
bool served(shard_fixture& f, const shard_link_server& server, int64_t clock) {
  auto link = connect_link("127.0.0.1", server.port(), request_timeout);
  if (!link) return false;
  auto remote = attach_link(*f.sys, f.shard, std::move(*link), 0, request_timeout);
  if (!remote) return false;
  bool ok = false;
  (*f.self)->request(remote->handle, timeout, push_pull_atom::value, push_request{f.push_of(0, clock, 1.0f)})
    .receive([&](wire_buffer&) { ok = true; }, [&](caf::error& err) { MESSAGE(describe(err)); });
  remote->close();
  return ok;
}

} // namespace

TEST_CASE("data link limits: 520 connections held open cost the ps process no thread") {
  descriptor_limit fds{4096};
  shard_fixture f{tiny_spec(consistency::async, 1)};
  link_limits limits;
  limits.max_connections = 600;
  auto server = serve_links(f, f.shard, limits);
  std::vector<int> clients{hello_client(server->port())};
  auto before = thread_count();
  for (int i = 1; i < 520; ++i) clients.push_back(hello_client(server->port()));
  CHECK(server->connections() == 520);
  CHECK(thread_count() == before);
  // Each of them is still served: a pull over the last one answers with the shard's values.
  auto pull = make_header(frame_kind::pull, 7, 0, 0);
  REQUIRE(send_all(clients.back(), &pull, sizeof pull));
  frame_header h;
  REQUIRE(read_header(clients.back(), h));
  CHECK(h.kind == static_cast<uint16_t>(frame_kind::reply));
  CHECK(h.id == 7);
  CHECK(h.size > 0);
  for (int fd : clients) ::close(fd);
  CHECK(served(f, *server, 0));
}

TEST_CASE("data link limits: the connection over the limit gets a failure frame, a freed slot serves again") {
  shard_fixture f{tiny_spec(consistency::async, 1)};
  link_limits limits;
  limits.max_connections = 3;
  auto server = serve_links(f, f.shard, limits);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(hello_client(server->port()));
  int over = stranger_to(server->port());
  frame_header h;
  REQUIRE(read_header(over, h));
  CHECK(h.kind == static_cast<uint16_t>(frame_kind::failure));
  CHECK(read_text(over, h) == "this shard serves at most 3 data connections");
  CHECK(closed_by_peer(over));
  ::close(over);
  CHECK(await_line(f, "over the limit of 3 connections").find("refused a data connection from 127.0.0.1:") == 0);
  CHECK(server->refused() == 1);
  ::close(held.back());
  held.pop_back();
  // A round trip on a held connection: its bytes came after the closed one's end, so the server
  // has seen that end (and freed the slot) before it answers.
  auto pull = make_header(frame_kind::pull, 9, 0, 0);
  REQUIRE(send_all(held.front(), &pull, sizeof pull));
  REQUIRE(read_header(held.front(), h));
  CHECK(h.id == 9);
  CHECK(served(f, *server, 0));
  for (int fd : held) ::close(fd);
}

TEST_CASE("data link limits: a frame over the shard's largest request is refused without allocating it") {
  shard_fixture f{tiny_spec(consistency::async, 1)};
  link_limits limits;
  auto server = serve_links(f, f.shard, limits);
  CHECK(server->frame_limit() == limits.frame_limit_before_init);
  int fd = hello_client(server->port());
  auto peak_before = status_kb("VmPeak");
  // 1.5 GiB announced, not sent: allocating it would raise the peak virtual size by as much.
  auto huge = make_header(frame_kind::push_pull, 1, 0, 0, uint64_t(3) << 29);
  REQUIRE(send_all(fd, &huge, sizeof huge));
  frame_header h;
  REQUIRE(read_header(fd, h));
  CHECK(h.kind == static_cast<uint16_t>(frame_kind::failure));
  auto text = read_text(fd, h);
  CHECK(text.find("a frame of 1610612736 bytes, over this shard's limit of ") == 0);
  CHECK(closed_by_peer(fd));
  ::close(fd);
  CHECK(status_kb("VmPeak") - peak_before < (1L << 20));  // less than 1 GiB more, in kB
  // The limit came from the shard's size: its dense snapshot plus 64 KiB of slack.
  wire_buffer snap;
  (*f.self)->request(f.shard, timeout, snapshot_atom::value)
    .receive([&](wire_buffer& s) { snap = std::move(s); }, [&](caf::error&) {});
  CHECK(server->frame_limit() == request_frame_limit(snap.size_bytes(), false, limits));
  CHECK(text.find(std::to_string(server->frame_limit())) != std::string::npos);
  CHECK(await_line(f, "over this shard's limit").find("refused a data connection from 127.0.0.1:") == 0);
  CHECK(served(f, *server, 0));  // a push within the limit goes through
}

TEST_CASE("data link limits: before the shard's init a request over the small bound is refused") {
  actor_fixture f;
  auto shard = spawn_ps_shard(*f.sys, 0);  // never initialised
  link_limits limits;
  limits.frame_limit_before_init = 4096;
  auto server = serve_links(f, shard, limits);
  int fd = hello_client(server->port());
  auto big = make_header(frame_kind::push_pull, 1, 0, 0, 1 << 20);
  REQUIRE(send_all(fd, &big, sizeof big));
  frame_header h;
  REQUIRE(read_header(fd, h));
  CHECK(h.kind == static_cast<uint16_t>(frame_kind::failure));
  CHECK(read_text(fd, h) == "a frame of 1048576 bytes, over this shard's limit of 4096");
  CHECK(server->frame_limit() == 4096);
  ::close(fd);
  server.reset();
  (*f.self)->send_exit(shard, caf::exit_reason::user_shutdown);
}

TEST_CASE("data link limits: a client that never reads its replies is held to its bound while others are served") {
  // 4 MiB replies: one dense shard of 1 Mi floats.
  train_spec spec = tiny_spec(consistency::async, 1);
  spec.model = mlp_model({1023, 1024});
  spec.block_floats = 1 << 16;
  // the fixture's initial values 0, 1, 2, ... pass 1e6 in a layout this large
  shard_fixture f{spec, shard_config{"", value_bounds{default_max_gradient, 1e30f}}};
  link_limits limits;
  limits.max_requests_per_connection = 4;
  auto server = serve_links(f, f.shard, limits);
  REQUIRE(served(f, *server, 0));  // warms the allocator and learns the frame limit
  auto rss_before = status_kb("VmRSS");
  auto pulls_before = f.stats().pulls_served;
  int hog = hello_client(server->port());
  // Pull frames of 40 bytes until the sockets are full: the server stops reading it.
  auto pull = make_header(frame_kind::pull, 0, 0, 0);
  long sent = 0;
  while (sent < 2000000 && ::send(hog, &pull, sizeof pull, MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof pull)
    ++sent;
  CHECK(sent < 2000000);  // it stopped taking them
  CHECK(sent > 1000);
  // Another client is served meanwhile; its answer comes after every request read before it.
  CHECK(served(f, *server, 1));
  auto answered = f.stats().pulls_served - pulls_before - 1;
  MESSAGE("requests sent " << sent << ", answered " << answered);
  // At most its 4 requests held by the server plus what the kernel's socket buffers take
  // (4 MiB each way here, doubled by the kernel: a few 4 MiB replies).
  CHECK(answered <= 4 + 8);
  CHECK(status_kb("VmRSS") - rss_before < 48 * 1024);  // < 48 MiB, against sent × 4 MiB unbounded
  ::close(hog);
}

TEST_CASE("data link limits: a stranger silent past the hello timeout is disconnected") {
  shard_fixture f{tiny_spec(consistency::async, 1)};
  link_limits limits;
  limits.hello_timeout = std::chrono::milliseconds(300);
  auto server = serve_links(f, f.shard, limits);
  int fd = stranger_to(server->port());
  CHECK(closed_by_peer(fd));
  ::close(fd);
  CHECK(await_line(f, "no hello within 300 ms").find("refused a data connection from 127.0.0.1:") == 0);
  CHECK(server->refused() == 1);
  CHECK(server->connections() == 0);
}

TEST_CASE("data link limits: accepting goes on once the process's descriptors ran out and were freed") {
  shard_fixture f{tiny_spec(consistency::async, 1)};
  auto server = serve_links(f, f.shard, link_limits{});
  // (No client before the descriptors run out: one that closes late would free one.)
  std::vector<int> filler;
  {
    descriptor_limit fds{0};
    fds.set_soft(open_descriptors() + 16);
    for (;;) {
      int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      filler.push_back(fd);
    }
    REQUIRE(errno == EMFILE);
    ::close(filler.back());  // room for the client's own socket
    filler.pop_back();
    int client = stranger_to(server->port());
    CHECK(closed_by_peer(client));  // accepted and closed at once: the server has no descriptor
    ::close(client);
    CHECK(await_line(f, "out of file descriptors").find("Too many open files") != std::string::npos);
    for (int fd : filler) ::close(fd);
  }
  CHECK(served(f, *server, 0));
  CHECK(served(f, *server, 1));
}

TEST_CASE("data link limits: over the server's total of pending requests, a held pull still gets the push it waits for") {
  // sync, 2 workers: worker 0's push_pull is held at the shard until worker 1 pushes. With room
  // for one pending request in all, worker 1's push is still read (every connection may have
  // one), or both would wait forever.
  shard_fixture f{tiny_spec(consistency::sync, 2)};
  link_limits limits;
  limits.max_requests_total = 1;
  auto server = serve_links(f, f.shard, limits);
  auto attach = [&] {
    auto link = connect_link("127.0.0.1", server->port(), request_timeout);
    REQUIRE(link);
    auto remote = attach_link(*f.sys, f.shard, std::move(*link), 0, request_timeout);
    REQUIRE(remote);
    return *remote;
  };
  auto first = attach();
  auto second = attach();
  caf::actor me = caf::actor_cast<caf::actor>(*f.self);
  for (auto [remote, worker] : {std::pair{first, 0}, std::pair{second, 1}}) {
    auto push = f.push_of(worker, 0, 1.0f);
    auto handle = remote.handle;
    f.sys->spawn([=](caf::event_based_actor* a) {
      a->request(handle, timeout, push_pull_atom::value, push_request{push})
        .then([=](const wire_buffer&) { a->send(me, worker); },
              [=](caf::error& err) { a->send(me, err); });
    });
  }
  std::vector<int32_t> answered;
  for (int i = 0; i < 2; ++i)
    (*f.self)->receive([&](int32_t worker) { answered.push_back(worker); },
                       [&](caf::error& err) { FAIL(describe(err)); },
                       caf::after(timeout) >> [] { FAIL("a push_pull was never answered"); });
  CHECK(answered.size() == 2);
  CHECK(f.stats().pulls_held == 1);
  first.close();
  second.close();
}
