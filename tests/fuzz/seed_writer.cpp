// Writes seeds for the wire, link_frame, shm_record and arriving_push fuzz targets with the real
// encoders: each message the wire carries, whole data-link conversations (a client's hello and
// requests, a shard's answers), pushes as records in a shared-memory ring (flat, and by
// reference as records of pieces) and pushes built by reference partly arrived, each file
// prefixed with the selector byte its target reads first.
//   fuzz_seed_writer OUT   (writes OUT/wire/*, OUT/link_frame/*, OUT/shm_record/* and
//                           OUT/arriving_push/*)
#include "actors/chief/role_setup_codec.hpp"
#include "actors/link/link_socket.hpp"
#include "actors/link/reply_part.hpp"
#include "actors/link/shm_region.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <tuple>

namespace fs = std::filesystem;
using namespace actorps;

namespace {

fs::path out_dir;

void write_seed(const std::string& target, const std::string& name, uint8_t selector,
                const std::string& bytes) {
  fs::create_directories(out_dir / target);
  std::ofstream out(out_dir / target / name, std::ios::binary | std::ios::trunc);
  out.put(static_cast<char>(selector));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string bytes_of(const wire_buffer& buf) {
  return {reinterpret_cast<const char*>(buf.bytes()), buf.size_bytes()};
}

std::string frame(frame_kind kind, uint64_t id, int64_t a, int64_t b, const std::string& payload) {
  auto h = make_header(kind, id, a, b, payload.size());
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + payload;
}

std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
  return out;
}

/// A push as a shm_record input: the frame's offset (64: the record's header at 0), size and
/// pieces, then the bytes from the payload on, which the target writes into the ring from 64
/// and into the peer's arena from 0. By reference, laid out as shm_ring::place lays out a record
/// of pieces (shm_region.cpp) whose blocks lie in the arena: the piece table, piece 0 (segment
/// table and structure) inline after it, each other piece named by its offset in the arena;
/// here the blocks follow the record, where the arena holds the same bytes.
std::string shm_record(const wire_buffer& push, bool by_reference) {
  auto pieces = push.pieces();
  if (!by_reference) return le64(64) + le64(push.size_bytes()) + le64(0) + bytes_of(push);
  const std::size_t table = pieces.size() * sizeof(shm_piece);
  const std::size_t size = table + pieces[0].bytes;
  std::string body(size, '\0'), blocks;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    shm_piece d{i > 0 ? 1u : 0u, i > 0 ? size + blocks.size() : table, pieces[i].bytes};
    std::memcpy(&body[i * sizeof d], &d, sizeof d);
    if (i > 0) blocks.append(static_cast<const char*>(pieces[i].data), pieces[i].bytes);
  }
  std::memcpy(&body[table], pieces[0].data, pieces[0].bytes);
  return le64(64) + le64(size) + le64(pieces.size()) + body + blocks;
}

/// Takes `seed` (a shm_record input) as the target does and decodes it: a seed that the reader
/// refuses would not reach what it is for.
void check_shm_record(const std::string& seed, bool with_arena) {
  // The bytes after the numbers, written from `from` into a fresh region; its descriptor stays
  // open when `keep_fd` is given (for the arena, which the inbox maps as a peer's).
  auto region = [&](std::size_t from, int* keep_fd = nullptr) {
    std::string why;
    int fd = create_shm_region(64 * 1024, why);
    if (fd < 0) std::abort();
    auto mapped = shm_mapping::map(fd, 64 * 1024);
    if (keep_fd) *keep_fd = fd;
    else ::close(fd);
    if (!mapped) std::abort();
    std::memcpy((*mapped)->data() + from, seed.data() + 24, seed.size() - 24);
    return *mapped;
  };
  auto arena = [&]() -> std::shared_ptr<peer_arena> {
    int fd = -1;
    auto written = region(0, &fd);  // our mapping ends here; the bytes stay with the file
    auto view = peer_arena::open(fd);
    ::close(fd);
    if (!view) std::abort();
    return *view;
  };
  int64_t at, pieces;
  uint64_t size;
  std::memcpy(&at, seed.data(), 8);
  std::memcpy(&size, seed.data() + 8, 8);
  std::memcpy(&pieces, seed.data() + 16, 8);
  shm_inbox inbox(region(64), with_arena ? arena() : nullptr);
  auto taken = inbox.take(at, size, pieces);
  if (!taken || !decode_push(*taken)) {
    std::cerr << "fuzz_seed_writer: a shm_record seed that the reader refuses\n";
    std::exit(1);
  }
}

/// A small run: two dense tensors cut into blocks of 8 on two shards, one sparse table.
train_spec small_spec(bool sparse) {
  train_spec s;
  s.model.name = "fuzz";
  s.model.tensors = {{"dense/kernel", {6, 4}, tensor_init::uniform, 0.1},
                     {"dense/bias", {4}, tensor_init::zeros, 0}};
  if (sparse) {
    sparse_table_config table;
    table.dim = 3;
    table.optimizer.kind = row_optimizer_kind::adam;
    s.model.sparse_tables = {{"embedding", table}};
  }
  s.block_floats = 8;
  s.shards = 2;
  s.workers = 2;
  s.total_clocks = 10;
  s.checkpoint_every = 5;
  place_buckets(s);
  return s;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seed_writer OUT\n";
    return 2;
  }
  out_dir = argv[1];
  for (bool sparse : {false, true}) {
    const std::string tag = sparse ? "sparse_" : "dense_";
    auto spec = small_spec(sparse);
    block_layout layout(spec);
    std::vector<float> flat(layout.total_floats());
    std::iota(flat.begin(), flat.end(), 0.5f);
    std::vector<float> part(layout.shard_floats(0), 0.25f);
    std::vector<uint64_t> keys = {0, 77, 4096};
    std::vector<float> rows(keys.size() * 3, 0.125f);
    std::vector<sparse_rows_ref> grads, asked;
    if (sparse) {
      grads.push_back({0, 3, keys.data(), nullptr, keys.size(), rows.data()});
      asked.push_back({0, 3, keys.data(), nullptr, keys.size(), nullptr});
    }
    auto push = encode_push(1, 3, 0, layout, flat.data(), 2, grads, asked);
    auto pull = encode_pull(1, 4, 0, asked);
    auto reply = encode_shard_parameters(0, 2, 3, layout, part.data());
    write_seed("wire", tag + "push", 0, bytes_of(push));
    // The same push in a shared-memory ring: flat (the dense one read with the peer's arena
    // mapped, the sparse one without), and built by reference as a record of pieces.
    auto by_reference = encode_push_by_reference(1, 3, 0, layout, flat.data(), {}, 2, grads, asked);
    for (const auto& [name, selector, seed] :
         {std::tuple{tag + "push", sparse ? 1 : 0, shm_record(push, false)},
          std::tuple{tag + "push_pieces", 0, shm_record(by_reference, true)}}) {
      check_shm_record(seed, selector == 0);
      write_seed("shm_record", name, static_cast<uint8_t>(selector), seed);
    }
    // The same push as the data link reads it while it arrives: a fraction of its bytes in.
    for (int selector : {0, 40, 128, 200, 255})
      write_seed("arriving_push", tag + "push_" + std::to_string(selector),
                 static_cast<uint8_t>(selector), bytes_of(by_reference.flat()));
    write_seed("wire", tag + "pull", 1, bytes_of(pull));
    write_seed("wire", tag + "snapshot_pull", 1, bytes_of(encode_all_rows_pull(0)));
    write_seed("wire", tag + "pull_reply", 2, bytes_of(reply));
    write_seed("wire", tag + "shard_init", 3, bytes_of(encode_shard_init(spec, 0, layout, part.data())));
    role_setup setup;
    setup.spec = spec;
    setup.index = 1;
    setup.steps = 10;
    setup.data.train_path = "/data/train.libsvm";
    setup.shard_addresses = {"ps0:2222", "ps1:2222"};
    write_seed("wire", tag + "role_setup", 4, bytes_of(encode_role_setup(setup)));
    std::vector<float> state(2 * layout.shard_floats(0), 0.0f);  // momentum's slot and more
    std::vector<sparse_table_rows> tables;
    if (sparse) {
      sparse_table_rows t;
      t.keys = {0, 4096};
      t.values = {1, 2, 3, 4, 5, 6};
      t.state.assign(2 * t.values.size(), 0.0f);
      t.touches = {1, 2};
      t.steps = {1, 2};
      tables.push_back(t);
    }
    write_seed("wire", tag + "shard_checkpoint", 5,
               bytes_of(encode_shard_checkpoint(spec, 0, 5, 9, 4, layout, part.data(), state.data(),
                                                optimizer_state_slots(spec.optimizer.kind), tables)));
    run_checkpoint run;
    run.spec = spec;
    run.clock = 5;
    run.batch = 8;
    run.steps = 10;
    run.samples = 80;
    run.wall_s = 1.5;
    run.positions = {{0, 5, 0, 5}, {1, 5, 0, 5}};
    run.run_id = "0123456789abcdef";
    run.dataset = "synthetic";
    run.train_rows = 64;
    write_seed("wire", tag + "run_checkpoint", 6, bytes_of(encode_run_checkpoint(run)));

    // A client's conversation with shard 0, and the shard's answers.
    write_seed("link_frame", tag + "requests", 0,
               frame(frame_kind::hello, 0, 0, 120000, "") + frame(frame_kind::push_pull, 1, 0, 0, bytes_of(push))
                 + frame(frame_kind::pull, 2, 1, 4, "") + frame(frame_kind::keyed_pull, 3, 0, 0, bytes_of(pull))
                 + frame(frame_kind::snapshot, 4, 0, 0, "")
                 + frame(frame_kind::keyed_snapshot, 5, 0, 0, bytes_of(encode_all_rows_pull(0))));
    write_seed("link_frame", tag + "answers", 1,
               frame(frame_kind::reply, 0, 0, 0, "") + frame(frame_kind::reply, 1, 0, 0, bytes_of(reply))
                 + frame(frame_kind::failure, 2, 7, static_cast<int64_t>(error_category),
                         "push of worker 1 refused: stale incarnation"));
    // A reply in two parts (reply_part.hpp), a failure for another request between them.
    const auto cut = reply.size_bytes() / 2 / sizeof(capnp::word) * sizeof(capnp::word);
    write_seed("link_frame", tag + "answers_in_parts", 1,
               frame(frame_kind::reply, 0, 0, 0, "")
                 + frame(frame_kind::reply_part, 1, 0, 0, bytes_of(make_reply_part(reply, 0, cut).flat()))
                 + frame(frame_kind::failure, 2, 7, static_cast<int64_t>(error_category), "refused")
                 + frame(frame_kind::reply_part, 1, 0, 0,
                         bytes_of(make_reply_part(reply, cut, reply.size_bytes()).flat())));
  }
  return 0;
}
