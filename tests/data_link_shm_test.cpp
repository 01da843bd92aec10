// The data link's shared-memory path (shm_region.hpp): payloads through two memfd rings, the
// local socket carrying only headers. Round trips byte-identical to the shard with the copies
// it was designed for, counted; malformed offers and frames refused; a shard process killed
// with a 16 MiB push in flight: the worker sees the shard lost at once and no segment leaks.
#include "link_fixture.hpp"
#include "actors/link/shm_region.hpp"
#include "actors/protocol/buffer_lease.hpp"
#include "actors/protocol/link_memory.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>

using namespace actorps;
using namespace actorps::test;

namespace {

uint64_t copied_now() { return copied_payload_bytes.load(); }

/// Threads of this process now (entries of /proc/self/task).
std::size_t threads_of_this_process() {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

/// Entries of /proc/self/fd that are memfds named `memfd` (a link's rings: "actorps-link"; the
/// process's arena and the peers' held: "actorps-arena"), and mappings of /proc/self/maps.
std::size_t descriptors_of(const std::string& memfd) {
  const std::string name = "/memfd:" + memfd;
  std::size_t n = 0;
  for (int fd = 0; fd < 4096; ++fd) {
    char path[64], target[256];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    auto len = ::readlink(path, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = 0;
    if (std::strncmp(target, name.c_str(), name.size()) == 0) ++n;
  }
  return n;
}
std::size_t memfd_descriptors() { return descriptors_of("actorps-link"); }
/// This process's arena and the peers' arenas it holds (peer_arena.hpp keeps a descriptor).
std::size_t arena_descriptors() { return descriptors_of("actorps-arena"); }
std::size_t mappings_of(const std::string& memfd) {
  std::ifstream maps("/proc/self/maps");
  std::size_t n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find("/memfd:" + memfd) != std::string::npos) ++n;
  return n;
}
std::size_t link_mappings() { return mappings_of("actorps-link"); }
/// This process's arena and the peers' arenas it maps (link_memory.hpp).
std::size_t arena_mappings() { return mappings_of("actorps-arena"); }

/// A plain local link to `f`'s server, after its hello, that offered the two rings `rings`
/// (mapped here): the test then writes frames by hand.
struct raw_shm_link {
  std::shared_ptr<link_socket> link;
  std::shared_ptr<shm_mapping> requests, replies;
};
raw_shm_link offer_by_hand(link_fixture& f, std::size_t ring = 1 << 20, int arena = -1) {
  auto link = raw_link(f, true);
  frame_header h;
  std::string why;
  int fds[3] = {create_shm_region(ring, why), create_shm_region(ring, why), arena};
  REQUIRE(fds[0] >= 0);
  REQUIRE(fds[1] >= 0);
  auto requests = shm_mapping::map(fds[0], ring);
  auto replies = shm_mapping::map(fds[1], ring);
  REQUIRE(requests);
  REQUIRE(replies);
  REQUIRE_FALSE(link->send_with_fds(
    make_header(frame_kind::shm_offer, 7, int64_t(ring), int64_t(ring)), fds, arena >= 0 ? 3 : 2));
  ::close(fds[0]);
  ::close(fds[1]);
  REQUIRE_FALSE(link->receive_header(h));
  REQUIRE(static_cast<frame_kind>(h.kind) == frame_kind::reply);
  CHECK(h.id == 7);
  return {link, *requests, *replies};
}

frame_header region_header(frame_kind kind, uint64_t id, int64_t offset, uint64_t size,
                           int64_t pieces = 0) {
  auto h = make_header(kind, id, offset, pieces, size);
  h.kind |= in_region_bit;
  return h;
}

/// Whether `link` was closed by the other side: the frames it still sent (a failure saying
/// why) are read, then the end.
bool closed_by_peer(link_socket& link) {
  for (;;) {
    frame_header h;
    if (link.receive_header(h)) return true;
    if (static_cast<frame_kind>(h.kind) != frame_kind::failure) return false;
    caf::error carried;
    if (link.receive_failure(h, carried)) return true;
  }
}

} // namespace

TEST_CASE("data link over shared memory: round trips are byte-identical to the shard, with exactly the copies designed") {
  link_fixture link{word_aligned_spec()};
  shard_fixture direct{word_aligned_spec()};
  auto remote = link.attach_over(link_path::shm);
  CHECK(remote.transport() == std::string("shared memory"));
  for (int64_t clock = 0; clock < 4; ++clock) {
    auto push = link.push_of(0, clock, 0.5f * float(clock + 1));
    auto before = copied_now();
    auto via_link = link.ask(remote.handle, push_pull_atom::value, push_request{push});
    auto copied = copied_now() - before;
    auto in_process = direct.ask(direct.shard, push_pull_atom::value,
                                 push_request{direct.push_of(0, clock, 0.5f * float(clock + 1))});
    REQUIRE(via_link);
    REQUIRE(in_process);
    CHECK(same_bytes(*via_link, *in_process));
    // The push into the request ring, the reply into the reply ring; the worker's reply is the
    // record itself (no destination): nothing else.
    CHECK(copied == push.size_bytes() + via_link->size_bytes());
  }
  // A reply received into place: copied out of its record once, byte-identical to the shard.
  std::vector<float> params(link.layout.total_floats(), -1.0f);
  std::shared_ptr<void> unowned;
  remote.destination->set(std::shared_ptr<const block_layout>(unowned, &link.layout),
                          std::shared_ptr<std::vector<float>>(unowned, &params));
  auto reply_bytes = link.ask(link.shard, pull_atom::value, int32_t{0}, int64_t{0})->size_bytes();
  auto before = copied_now();
  auto pulled = link.ask(remote.handle, pull_atom::value, int32_t{0}, int64_t{0});
  REQUIRE(pulled);
  CHECK(copied_now() - before == 2 * reply_bytes);  // into the ring, out of it into `params`
  auto snapshot = direct.snapshot();  // an independent shard given the same pushes
  REQUIRE(snapshot.size() == params.size());
  CHECK(std::memcmp(snapshot.data(), params.data(), params.size() * 4) == 0);
  CHECK(params != link.initial);
  remote.close();
}

TEST_CASE("data link over shared memory: the proxy sends on the requester's thread, forwards control messages, and once closed fails requests and tells its monitors") {
  link_fixture link{word_aligned_spec()};
  // Threads counted after a round trip through each proxy: a detached actor's thread may start
  // only once it has a message.
  REQUIRE(link.ask(link.shard, pull_atom::value, int32_t{0}, int64_t{0}));
  // A proxy over the local socket alone is a detached actor: its thread and its reader's.
  auto threads_before = threads_of_this_process();
  auto over_socket = link.attach_over(link_path::socket);
  REQUIRE(link.ask(over_socket.handle, pull_atom::value, int32_t{0}, int64_t{0}));
  CHECK(threads_of_this_process() - threads_before == 2);
  // Over shared memory the requester's thread sends: the reader's is the only new one.
  threads_before = threads_of_this_process();
  auto remote = link.attach_over(link_path::shm);
  REQUIRE(link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 0, 0.25f)}));
  CHECK(threads_of_this_process() - threads_before == 1);
  // stats is no data-link request: the proxy hands it to the shard, which answers the asker.
  shard_stats stats;
  (*link.self)->request(remote.handle, timeout, stats_atom::value)
    .receive([&](shard_stats& s) { stats = s; }, [&](caf::error& err) { FAIL(describe(err)); });
  CHECK(stats.pushes == link.stats().pushes);
  CHECK(stats.pushes == 1);
  (*link.self)->monitor(remote.handle);
  remote.close();
  bool down = false;
  (*link.self)->receive([&](caf::down_msg& dm) { down = dm.source == remote.handle.address(); },
                        caf::after(timeout) >> [] {});
  CHECK(down);
  auto after = link.ask(remote.handle, push_pull_atom::value, push_request{link.push_of(0, 1, 0.25f)});
  REQUIRE_FALSE(after);
  CHECK(after.error() == caf::sec::request_receiver_down);
  CHECK(link.stats().pushes == 1);  // the shard never saw it
  over_socket.close();
}

TEST_CASE("data link over shared memory: offsets and sizes outside the ring, and bad offers, are refused and counted, the server keeps serving") {
  link_fixture link{word_aligned_spec()};
  const std::size_t ring = 1 << 20;
  auto push = link.push_of(0, 0, 1.0f);
  struct bad_frame {
    const char* what;
    int64_t offset;
    uint64_t size;
  };
  std::size_t refused = link.server->refused();
  // (three: the log writes 5 refusals a window, and two more follow)
  for (auto bad : {bad_frame{"offset past the end", int64_t(ring) + 64, push.size_bytes()},
                   bad_frame{"a size that runs past the end", int64_t(ring) - 64, push.size_bytes()},
                   bad_frame{"an offset inside a record header", 8, push.size_bytes()}}) {
    CAPTURE(std::string(bad.what));
    auto raw = offer_by_hand(link, ring);
    auto h = region_header(frame_kind::push_pull, 1, bad.offset, bad.size);
    REQUIRE_FALSE(raw.link->send(h));
    CHECK(closed_by_peer(*raw.link));
    CHECK(link.server->refused() == ++refused);
    CHECK(link.next_log_line().find("shared region") != std::string::npos);
  }
  // A good frame written by hand into the ring is served.
  {
    auto raw = offer_by_hand(link, ring);
    std::memcpy(raw.requests->data() + 64, push.bytes(), push.size_bytes());
    REQUIRE_FALSE(raw.link->send(region_header(frame_kind::push_pull, 2, 64, push.size_bytes())));
    frame_header h;
    REQUIRE_FALSE(raw.link->receive_header(h));
    CHECK(kind_of(h.kind) == frame_kind::reply);
    CHECK(in_region(h));
    CHECK(h.size > 0);
    CHECK(h.a >= 64);
  }
  // An offer with one descriptor, or over TCP, and a region frame on a link without one.
  {
    auto local = raw_link(link, true);
    frame_header h;
    std::string why;
    int fd = create_shm_region(ring, why);
    REQUIRE(fd >= 0);
    REQUIRE_FALSE(local->send_with_fds(make_header(frame_kind::shm_offer, 1, ring, ring), &fd, 1));
    ::close(fd);
    REQUIRE_FALSE(local->receive_header(h));
    CHECK(static_cast<frame_kind>(h.kind) == frame_kind::failure);
    CHECK(link.server->refused() == ++refused);
    CHECK(link.next_log_line().find("1 descriptors, expected 2") != std::string::npos);
  }
  {
    auto tcp = raw_link(link, false);
    REQUIRE_FALSE(tcp->send(region_header(frame_kind::push_pull, 1, 64, 64)));
    CHECK(closed_by_peer(*tcp));
    CHECK(link.server->refused() == ++refused);
    CHECK(link.next_log_line().find("without it") != std::string::npos);
  }
  // The server still serves a proper client over shared memory.
  auto remote = link.attach_over(link_path::shm);
  auto pulled = link.ask(remote.handle, pull_atom::value, int32_t{0}, int64_t{0});
  REQUIRE(pulled);
  CHECK(link.parameters_of(*pulled) == link.snapshot());
  remote.close();
}

TEST_CASE("data link over shared memory: a shard process killed with a 16 MiB push in flight is lost at once and leaves no segment") {
  // sync with 2 workers: worker 0's push_pull is held by the shard (worker 1 never pushes), so
  // the kill always lands while the request is in flight. Layers {1024, 4096}: 16.8 MB.
  auto spec = tiny_spec(consistency::sync, 2);
  spec.model = mlp_model({1024, 4096});
  spec.block_floats = 65536;
  int to_parent[2];
  REQUIRE(::pipe(to_parent) == 0);
  // Forked before this process starts any thread (each test case runs in a process of its own).
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(to_parent[0]);
    int out = to_parent[1];
    auto say = [out](const std::string& line) {
      auto text = line + "\n";
      [[maybe_unused]] auto n = ::write(out, text.data(), text.size());
    };
    try {
      shard_config wide;  // the fixture's initial values 0, 1, 2, ... pass 4 million
      wide.bounds.max_parameter = 1e8f;
      shard_fixture shard{spec, wide};
      auto server = shard_link_server::listen("127.0.0.1", 0, say);
      if (!server) ::_exit(2);
      (*server)->serve(*shard.sys, shard.shard, 0);
      say((*server)->local_name());
      for (;;) ::pause();  // until the parent's SIGKILL
    } catch (const std::exception& e) {
      say(std::string("the shard process failed: ") + e.what());
      ::_exit(3);
    } catch (...) {
      ::_exit(3);
    }
  }
  ::close(to_parent[1]);
  FILE* from_child = ::fdopen(to_parent[0], "r");
  REQUIRE(from_child);
  auto next_line = [&] {
    char buf[512] = {};
    if (!std::fgets(buf, sizeof buf, from_child)) return std::string();
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  };
  auto name = next_line();
  if (name.empty()) {
    int status = 0;
    ::waitpid(child, &status, 0);
    FAIL("the shard process ended: status " << status);
  }

  REQUIRE(enable_link_memory().empty());  // this process's own arena: it stays
  float_buffer own(1 << 16);  // maps the arena's first stretch here (it is mapped as used)
  REQUIRE(link_memory_offset(own.data(), own.size() * 4) >= 0);
  const auto descriptors_before = memfd_descriptors();
  const auto mappings_before = link_mappings();
  const auto arenas_before = arena_mappings();
  const auto arena_fds_before = arena_descriptors();
  CHECK(arenas_before == 1);
  CHECK(arena_fds_before == 1);
  {
    shard_config wide;
    wide.bounds.max_parameter = 1e8f;
    shard_fixture worker_side{spec, wide};  // a layout and an actor system on the worker's side
    auto link = connect_local_link(name);
    REQUIRE(link);
    auto remote = attach_link(*worker_side.sys, ps_shard_actor{}, std::move(*link), 0,
                              link_request_timeout, {}, true);
    REQUIRE(remote);
    CHECK(remote->transport() == std::string("shared memory"));
    CHECK(link_mappings() == mappings_before + 2);
    // The shard process's arena is held (a descriptor) but nothing of it mapped yet: a window
    // is mapped where a reply's pieces lie (peer_arena.hpp).
    CHECK(arena_descriptors() == arena_fds_before + 1);
    CHECK(memfd_descriptors() == descriptors_before);  // closed once both sides mapped them
    auto push = worker_side.push_of(0, 0, 1.0f);
    REQUIRE(push.size_bytes() > (16u << 20));
    caf::actor me = caf::actor_cast<caf::actor>(*worker_side.self);
    auto handle = remote->handle;
    worker_side.sys->spawn([=](caf::event_based_actor* a) {
      a->request(handle, caf::infinite, push_pull_atom::value, push_request{push})
        .then([=](const wire_buffer&) { a->send(me, caf::ok_atom::value); },
              [=](caf::error& err) { a->send(me, err); });
    });
    // The shard's side names the link's path when it reads the request's header: kill it then.
    auto line = next_line();
    CHECK(line.find("over shared memory") != std::string::npos);
    REQUIRE(::kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    // The socket's end fails the request at once, as a lost shard (no request timeout: the
    // request above has none).
    caf::error lost;
    (*worker_side.self)->receive([&](caf::error& err) { lost = std::move(err); },
                                 [&](caf::ok_atom) { FAIL("a reply from a killed shard"); },
                                 caf::after(std::chrono::seconds(30)) >> [] { FAIL("no answer: hung"); });
    CHECK(lost == caf::sec::request_receiver_down);
    // The proxy ends (its reader joined): every mapping with it.
    (*worker_side.self)->monitor(remote->handle);
    remote->close();
    (*worker_side.self)->receive([](caf::down_msg&) {},
                                 caf::after(std::chrono::seconds(30)) >> [] { FAIL("the proxy did not end"); });
  }
  CHECK(link_mappings() == mappings_before);
  CHECK(arena_descriptors() == arena_fds_before);  // the dead shard's arena went with the proxy
  CHECK(memfd_descriptors() == descriptors_before);
  std::fclose(from_child);
}

namespace {

/// A model whose gradient (61 450 floats) is over link_memory_min_bytes: it lies in the arena.
train_spec arena_spec() {
  auto spec = tiny_spec(consistency::async, 1);
  spec.model = mlp_model({4, 4096, 10});
  spec.block_floats = 1 << 16;  // whole layers: blocks big enough to be referenced, not copied
  return spec;
}

/// A gradient in this process's arena, its value at i a function of i and `clock`.
float_buffer gradient_in_arena(const block_layout& layout, int64_t clock) {
  float_buffer g(layout.total_floats());
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = 1e-3f * float(int(i % 13) - 6) * float(clock + 1);
  return g;
}

} // namespace

TEST_CASE("data link over shared memory: a push whose blocks lie in the worker's arena leaves with only its structure copied, and its gradient stays leased until the shard releases it") {
  // The arena first, as in a ps process (its link server makes it before the shard's init): the
  // shard's parameters lie there too, and its replies go by reference.
  REQUIRE(enable_link_memory().empty());
  link_fixture link{arena_spec()};
  shard_fixture direct{arena_spec()};
  auto remote = link.attach_over(link_path::shm);
  REQUIRE(link_memory_fd() >= 0);  // the offer made this process's arena
  for (int64_t clock = 0; clock < 3; ++clock) {
    CAPTURE(clock);
    auto grads = gradient_in_arena(link.layout, clock);
    REQUIRE(link_memory_offset(grads.data(), grads.size() * 4) >= 0);
    auto lease = std::make_shared<buffer_lease>();
    auto push = encode_push_by_reference(0, clock, 0, link.layout, grads.data(), lease);
    REQUIRE(push.is_gathered());
    const auto structure = push.pieces().front().bytes;
    const auto reply_structure = reply_structure_bytes(link.layout);
    const auto copy = push.flat();  // what a copy of the blocks would have carried
    auto before = copied_now();
    auto via_link = link.ask(remote.handle, push_pull_atom::value, push_request{push});
    auto copied = copied_now() - before;
    REQUIRE(via_link);
    // Only the structures into the rings (not the 240 KiB of blocks either way); the reply is
    // handed on as its record, its blocks read where they lie in the shard's arena.
    CHECK(structure < 1024);
    CHECK(copied == structure + reply_structure);
    CHECK(via_link->is_gathered());
    auto in_process = direct.push_pull(copy);
    REQUIRE(in_process);
    CHECK(link.parameters_of(*via_link) == *in_process);
    // The shard releases the push's record before it answers the next request (it handles one
    // message at a time); that answer makes the proxy reclaim the record, and with it the lease.
    push = wire_buffer{};
    REQUIRE(link.ask(remote.handle, pull_atom::value, int32_t{0}, clock + 1));
    CHECK_FALSE(release_for_writing(grads, lease));  // nobody holds it: written in place
  }
  CHECK(link.snapshot() == direct.snapshot());
  CHECK(link.stats().updates == 3);
  remote.close();
}

TEST_CASE("data link over shared memory: a record of pieces that lies (outside the arena or record, segments that are not its pieces, no arena offered) is refused and counted, and an honest one is served") {
  link_fixture link{arena_spec()};
  shard_fixture direct{arena_spec()};
  const std::size_t ring = 1 << 20, arena_bytes = 1 << 20;
  std::string why;
  int arena_fd = create_shm_region(arena_bytes, why);
  REQUIRE(arena_fd >= 0);
  auto arena = shm_mapping::map(arena_fd, arena_bytes);
  REQUIRE(arena);
  // A push built by reference (from the heap): its pieces, which the test lays out by hand.
  std::vector<float> grad(link.layout.total_floats(), 0.25f);
  auto push = encode_push_by_reference(0, 0, 0, link.layout, grad.data());
  auto pieces = push.pieces();
  REQUIRE(pieces.size() >= 3);
  // Writes the record at offset 64 of the request ring: the table of `d` and piece 0 inline, each
  // other piece at its descriptor's offset in the arena; returns the record's bytes.
  auto write = [&](raw_shm_link& raw, std::vector<shm_piece> d) {
    uint8_t* body = raw.requests->data() + 64;
    const auto table = d.size() * sizeof(shm_piece);
    std::memcpy(body, d.data(), table);
    std::memcpy(body + table, pieces[0].data, pieces[0].bytes);
    for (std::size_t i = 1; i < pieces.size() && i < d.size(); ++i)
      if (d[i].in_arena && d[i].offset + pieces[i].bytes <= arena_bytes)
        std::memcpy((*arena)->data() + d[i].offset, pieces[i].data, pieces[i].bytes);
    return table + pieces[0].bytes;
  };
  auto honest = [&] {
    std::vector<shm_piece> d;
    d.push_back({0, pieces.size() * sizeof(shm_piece), pieces[0].bytes});
    uint64_t at = 4096;
    for (std::size_t i = 1; i < pieces.size(); ++i) {
      d.push_back({1, at, pieces[i].bytes});
      at += (pieces[i].bytes + 63) / 64 * 64;
    }
    return d;
  };
  std::size_t refused = link.server->refused();
  struct lie {
    const char* what;
    std::function<void(std::vector<shm_piece>&)> edit;
    const char* logged;
  };
  for (const auto& bad :
       {lie{"a block past the arena's end", [&](auto& d) { d[1].offset = arena_bytes - 8; }, "outside its arena"},
        lie{"a piece that is not its segment", [&](auto& d) { d[2].bytes -= 8; }, "is not its piece"},
        lie{"the structure in the arena", [&](auto& d) { d[0].in_arena = 1; }, "not in the record"},
        lie{"an inline piece over its own table", [&](auto& d) { d[0].offset = 0; }, "outside its record"}}) {
    CAPTURE(std::string(bad.what));
    auto raw = offer_by_hand(link, ring, arena_fd);
    auto d = honest();
    auto bytes = write(raw, d);
    bad.edit(d);
    std::memcpy(raw.requests->data() + 64, d.data(), d.size() * sizeof(shm_piece));
    REQUIRE_FALSE(raw.link->send(region_header(frame_kind::push_pull, 1, 64, bytes, int64_t(d.size()))));
    CHECK(closed_by_peer(*raw.link));
    CHECK(link.server->refused() == ++refused);
    CHECK(link.next_log_line().find(bad.logged) != std::string::npos);
  }
  {  // pieces on a link whose client offered no arena
    auto raw = offer_by_hand(link, ring);
    auto d = honest();
    auto bytes = write(raw, d);
    REQUIRE_FALSE(raw.link->send(region_header(frame_kind::push_pull, 1, 64, bytes, int64_t(d.size()))));
    CHECK(closed_by_peer(*raw.link));
    CHECK(link.server->refused() == ++refused);
    CHECK(link.next_log_line().find("arena that was not offered") != std::string::npos);
  }
  CHECK(link.stats().updates == 0);  // none of them reached the shard
  // The honest record: applied as the same push from a copy is by another shard.
  auto raw = offer_by_hand(link, ring, arena_fd);
  auto d = honest();
  auto bytes = write(raw, d);
  REQUIRE_FALSE(raw.link->send(region_header(frame_kind::push_pull, 2, 64, bytes, int64_t(d.size()))));
  frame_header h;
  REQUIRE_FALSE(raw.link->receive_header(h));
  CHECK(kind_of(h.kind) == frame_kind::reply);
  CHECK(h.id == 2);
  REQUIRE(direct.push_pull(push.flat()));
  CHECK(link.snapshot() == direct.snapshot());
  ::close(arena_fd);
}

TEST_CASE("data link over shared memory: a reply built on the shard's parameters in its arena leaves with only its structure copied and lands in place byte-identical") {
  // The arena first, as in a ps process (its link server makes it before the shard's init): the
  // shard's parameters are allocated there.
  REQUIRE(enable_link_memory().empty());
  link_fixture link{arena_spec()};
  shard_fixture direct{arena_spec()};
  auto remote = link.attach_over(link_path::shm);
  std::vector<float> params(link.layout.total_floats(), -1.0f);
  std::shared_ptr<void> unowned;
  remote.destination->set(std::shared_ptr<const block_layout>(unowned, &link.layout),
                          std::shared_ptr<std::vector<float>>(unowned, &params));
  const auto reply_structure = reply_structure_bytes(link.layout);
  const auto reply_bytes = link.ask(link.shard, pull_atom::value, int32_t{0}, int64_t{0})->size_bytes();
  for (int64_t clock = 0; clock < 3; ++clock) {
    CAPTURE(clock);
    auto grads = gradient_in_arena(link.layout, clock);
    auto push = encode_push_by_reference(0, clock, 0, link.layout, grads.data());
    const auto push_structure = push.pieces().front().bytes;
    auto before = copied_now();
    REQUIRE(link.ask(remote.handle, push_pull_atom::value, push_request{push}));
    // Of the push and of the reply only their structures went into the rings; the reply's blocks
    // were read from the shard's arena once, into `params`.
    CHECK(copied_now() - before == push_structure + reply_structure + reply_bytes);
    REQUIRE(direct.push_pull(push.flat()));
    auto snapshot = direct.snapshot();
    REQUIRE(snapshot.size() == params.size());
    CHECK(std::memcmp(snapshot.data(), params.data(), params.size() * 4) == 0);
  }
  CHECK(params != link.initial);
  remote.close();
}

TEST_CASE("shm_ring: the blocks its unreleased records name are bounded by the ring's size, past it a message is copied, and a released record makes room again") {
  REQUIRE(enable_link_memory().empty());
  const std::size_t ring_bytes = 1 << 20;
  std::string why;
  int fd = create_shm_region(ring_bytes, why);
  REQUIRE(fd >= 0);
  auto region = shm_mapping::map(fd, ring_bytes);
  REQUIRE(region);
  ::close(fd);
  auto arena = peer_arena::open(link_memory_fd());
  REQUIRE(arena);
  shm_ring ring{*region, true};
  shm_inbox inbox{*region, *arena};

  block_layout layout{arena_spec()};
  auto grads = gradient_in_arena(layout, 0);
  auto push = encode_push_by_reference(0, 0, 0, layout, grads.data());
  const std::size_t named = push.size_bytes() - push.pieces().front().bytes;  // ~240 KiB
  REQUIRE(named > ring_bytes / 5);
  REQUIRE(named <= ring_bytes / 4);
  std::vector<shm_placed> placed;
  for (int i = 0; i < 4; ++i) {
    placed.push_back(ring.place(push));
    CHECK(placed.back().pieces > 0);
  }
  CHECK(ring.named_bytes() == 4 * named);
  // A fifth would name more than the ring holds: copied, as a message outside the arena is.
  auto before = copied_now();
  auto copied = ring.place(push);
  CHECK(copied.offset >= 0);
  CHECK(copied.pieces == 0);
  CHECK(copied_now() - before == push.size_bytes());
  CHECK(ring.named_bytes() == 4 * named);
  // The reader takes the first record and lets it go: the next message goes by reference again.
  {
    auto first = inbox.take(placed[0].offset, placed[0].size, placed[0].pieces);
    REQUIRE(first);
    CHECK(first->is_gathered());
    CHECK(same_bytes(first->flat(), push.flat()));
  }
  auto again = ring.place(push);
  CHECK(again.pieces > 0);
  CHECK(ring.named_bytes() == 4 * named);
}
