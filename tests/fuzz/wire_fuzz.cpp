// The Cap'n Proto messages of the wire (actors/protocol/wire.hpp) from bytes nobody vouches
// for: what a stranger on the network, a corrupt checkpoint or a broken peer can hand a
// decoder. The first byte picks the decoder; a message that decodes goes on as far as its
// receiver takes it before touching state: laid out as a shard lays out a spec, its sparse
// parts checked against a shard's tables, a checkpoint checked as a restore checks it. A
// decoded message must encode again and decode to the same (checked on the fields that say
// what the message is).
#include "actors/chief/role_setup_codec.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/roles/shard_tables.hpp"
#include "actors/storage/checkpoint_consistency.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace actorps {
namespace {

/// A small run with dense blocks on two shards and one sparse table: what the decoded parts
/// of pushes, pulls and replies are checked against.
const train_spec& known_spec() {
  static const train_spec spec = [] {
    train_spec s;
    s.model.name = "fuzz";
    s.model.tensors = {{"dense/kernel", {6, 4}, tensor_init::uniform, 0.1},
                       {"dense/bias", {4}, tensor_init::zeros, 0}};
    sparse_table_config table;
    table.dim = 3;
    s.model.sparse_tables = {{"embedding", table}};
    s.block_floats = 8;
    s.shards = 2;
    s.workers = 2;
    place_buckets(s);
    return s;
  }();
  return spec;
}

const block_layout& known_layout() {
  static const block_layout layout(known_spec());
  return layout;
}

const shard_tables& known_tables() {
  static const shard_tables tables(known_spec(), 0);
  return tables;
}

/// A shard's layout of a decoded spec (ps_shard's layout_for), or null when it refuses it.
std::unique_ptr<block_layout> layout_of(const train_spec& spec) {
  try {
    auto layout = std::make_unique<block_layout>(spec);
    if (!invalid_buckets(spec).empty()) return nullptr;
    return layout;
  } catch (const std::invalid_argument&) {
    return nullptr;
  }
}

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "wire_fuzz: %s\n", what);
  std::abort();
}

void on_push(const wire_buffer& buf) {
  auto view = decode_push(buf);
  if (!view) return;
  (void)known_tables().validate(view->sparse, true);
  (void)known_tables().validate(view->pull_keys, false);
}

void on_pull(const wire_buffer& buf) {
  auto view = decode_pull(buf);
  if (!view) return;
  (void)known_tables().validate(view->keys, false);
}

void on_pull_reply(const wire_buffer& buf) {
  std::vector<float> flat(known_layout().total_floats());
  (void)scatter_shard_parameters(buf, known_layout(), flat.data());
}

void on_shard_init(const wire_buffer& buf) {
  auto view = decode_shard_init(buf);
  if (!view) return;
  auto layout = layout_of(view->spec);
  if (!layout || view->shard < 0 || view->shard >= layout->shards()) return;
  shard_tables tables(view->spec, view->shard);
  // A shard takes an init whose blocks fit the layout; encoded again, it decodes the same.
  const auto& ids = layout->shard_blocks(view->shard);
  if (view->blocks.size() != ids.size()) return;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (view->blocks[i].id != ids[i] || view->blocks[i].count != layout->blocks()[ids[i]].size)
      return;
  std::vector<float> part(layout->shard_floats(view->shard));
  auto again = decode_shard_init(encode_shard_init(view->spec, view->shard, *layout, part.data()));
  if (!again || again->blocks.size() != layout->shard_blocks(view->shard).size())
    broken("a decoded shard init does not survive encoding again");
}

void on_role_setup(const wire_buffer& buf) {
  auto setup = decode_role_setup(buf);
  if (!setup) return;
  auto again = decode_role_setup(encode_role_setup(*setup));
  if (!again || again->index != setup->index || again->shard_addresses != setup->shard_addresses
      || again->data.train_path != setup->data.train_path)
    broken("a decoded role setup does not survive encoding again");
}

void on_shard_checkpoint(const wire_buffer& buf) {
  auto view = decode_shard_checkpoint(buf);
  if (!view) return;
  auto layout = layout_of(view->spec);
  if (!layout) return;
  if (check_shard_checkpoint(*view, *layout, view->shard)) return;
  shard_tables tables(view->spec, view->shard);
  (void)tables.import_rows(view->sparse);
  auto again = decode_shard_checkpoint(encode_shard_checkpoint(view->spec, *view));
  if (!again || again->clock != view->clock || again->blocks.size() != view->blocks.size())
    broken("a decoded shard checkpoint does not survive encoding again");
}

void on_run_checkpoint(const wire_buffer& buf) {
  auto run = decode_run_checkpoint(buf);
  if (!run) return;
  (void)run_inconsistency(*run, run->clock);
  (void)incompatibility(run->spec, known_spec());
  auto again = decode_run_checkpoint(encode_run_checkpoint(*run));
  if (!again || again->clock != run->clock || again->run_id != run->run_id
      || again->positions.size() != run->positions.size())
    broken("a decoded run checkpoint does not survive encoding again");
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  fuzz::selected in;
  if (!fuzz::select(data, size, 7, in)) return 0;
  auto buf = wire_buffer::from_bytes(in.data, in.size);
  switch (in.choice) {
    case 0: on_push(buf); break;
    case 1: on_pull(buf); break;
    case 2: on_pull_reply(buf); break;
    case 3: on_shard_init(buf); break;
    case 4: on_role_setup(buf); break;
    case 5: on_shard_checkpoint(buf); break;
    case 6: on_run_checkpoint(buf); break;
  }
  return 0;
}
