// Checkpoints on disk: ROOT/ckpt-<clock>/ holding one shard-<i>.capnp per shard (written by the
// shards), run.capnp (the chief's: spec, clock, data positions) and MANIFEST.json, written
// last by the chief, listing every file with its size and CRC-32 (with a key, also its SHA-256,
// and the manifest signed: checkpoint_signing.hpp).
//
// A checkpoint without a valid manifest does not exist. Every file, the manifest included, is
// written durably and atomically (a temporary name, fsync, rename, fsync of the directory), so a
// crash at any moment leaves either the complete checkpoint or none — never a half-written file
// under its final name. Loading checks the signature, then every file against the manifest
// (a regular file of the listed size and checksums, before its bytes are kept in memory), and
// decodes every file before anyone trusts it; the newest checkpoint that passes is used and each
// newer one that failed is reported with the reason.
//
// Delta checkpoints (CHECKPOINT_FORMAT.md): after a full checkpoint, one may hold only what
// changed since its predecessor (each shard file's sparse rows pushed since, with tombstones;
// dense tensors and all optimizer state whole). Its manifest names its base (the full one the
// chain starts at) and its predecessor, each by clock and manifest SHA-256. Loading a delta
// reads its chain, base first, refuses a gap, a duplicate, a link of another base or another
// run, naming the link, and folds the chain into whole shard states; a chain that cannot be
// read is passed over like any damaged checkpoint, so the newest complete prefix is used.
//
// Plain functions, blocking on the filesystem: actors call them from the detached
// checkpoint_io actor (actors/checkpoint_io.hpp), never from a scheduler thread.
#pragma once

#include "actors/protocol/checkpoint_types.hpp"
#include "actors/protocol/wire.hpp"
#include "kernels/value_bounds.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

/// Any failure to write or read a checkpoint; what() names the file and the problem.
struct checkpoint_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr const char* manifest_name = "MANIFEST.json";
inline constexpr const char* run_file_name = "run.capnp";
/// The largest manifest read: a few lines per shard, so some hundred thousand shards.
inline constexpr std::size_t max_manifest_bytes = std::size_t(16) << 20;

std::string shard_file_name(int32_t shard);
/// "ckpt-000000001200": zero-padded, so names sort by clock.
std::string checkpoint_dir_name(int64_t clock);
/// The clock a checkpoint directory's name says ("ckpt-000000001200", also "….old-2"), if any.
std::optional<int64_t> checkpoint_clock_of(const std::string& name);

uint32_t crc32_of(const void* data, std::size_t n);

/// Writes `n` bytes to `path` durably and atomically; returns its manifest record.
file_record write_file_durably(const std::filesystem::path& path, const void* data, std::size_t n);

/// Creates ROOT (if needed) and an empty directory for the checkpoint at `clock`, naming run
/// `run_id` as its maker (checkpoint_lineage.hpp; "": none); a directory of that name left by
/// an earlier run (complete or not) is moved aside, never overwritten. Throws checkpoint_error
/// (e.g. ROOT not writable).
std::filesystem::path prepare_checkpoint_dir(const std::filesystem::path& root, int64_t clock,
                                             const std::string& run_id = "");

/// Writes run.capnp and then the manifest (which lists the shard files and run.capnp): the
/// checkpoint exists from the manifest's rename on. With a `key` (checkpoint_signing.hpp) the
/// manifest also lists each file's SHA-256, as on disk, and is signed with HMAC-SHA256. Then
/// removes every checkpoint directory of the same run (run.capnp's run id) older than its
/// `keep` newest complete ones (keep <= 0: none removed); other runs' directories are never
/// touched, and none that a kept checkpoint's chain needs. A shard file of changes only
/// (delta_since >= 0) makes the checkpoint a delta, whose `link` names its base and predecessor
/// (refused without one, or with a file of changes since after the predecessor's clock).
/// Returns the manifest's SHA-256 (what a delta of this one names).
std::string commit_checkpoint(const std::filesystem::path& dir, int64_t clock,
                              std::vector<file_record> shard_files, const wire_buffer& run,
                              int keep, const std::string& key = "",
                              const checkpoint_link& link = {});

/// Verifies and decodes one checkpoint directory: the signature (with a `key`, which a signed
/// checkpoint needs and an unsigned one is refused under), each file a regular one of the size
/// and checksums listed (checked before its contents are read into memory), then the content
/// against itself and the directory's name (checkpoint_consistency.hpp); throws
/// checkpoint_error saying what is wrong.
/// Every parameter must lie within max_parameter (the resuming run's --max-parameter).
/// A delta is returned as it is on disk (its shard files hold changes only): see load_chain.
loaded_checkpoint load_checkpoint(const std::filesystem::path& dir,
                                  float max_parameter = default_max_parameter,
                                  const std::string& key = "");

/// load_checkpoint, and for a delta its whole chain, in the same root, folded: the shard files
/// returned are whole states (byte for byte what a full checkpoint at that clock holds), and
/// `chain` lists the directories read, base first. Throws checkpoint_error naming the link that
/// is missing (a gap), damaged, out of order (a duplicate), or of another base or run.
loaded_checkpoint load_chain(const std::filesystem::path& dir,
                             float max_parameter = default_max_parameter,
                             const std::string& key = "");

/// Why a valid checkpoint is not wanted ("" when it is): e.g. another run's.
using checkpoint_filter = std::function<std::string(const run_checkpoint&)>;

/// The newest valid checkpoint that `wanted` accepts (none: any): `path` is a checkpoint
/// directory (that one only) or a root holding ckpt-* directories; the newer ones passed over
/// are listed in `skipped` with the reason. Throws checkpoint_error listing why each candidate
/// failed when none qualifies.
loaded_checkpoint load_newest_checkpoint(const std::filesystem::path& path,
                                         const checkpoint_filter& wanted = {},
                                         float max_parameter = default_max_parameter,
                                         const std::string& key = "");

/// Checks a shard's checkpoint against the layout: shard `shard`'s blocks in id order, each
/// with its size in values and slots × size in optimizer state, every parameter within
/// max_parameter and every state value finite (checkpoint_consistency.hpp's out_of_bounds).
/// Shards run it on every restore with their own bound; loading runs it on every file.
/// `held` (a live resize's part, shard_cut::part_for): the layout the shard holds its blocks
/// under now; the view then carries only the blocks `layout` gives the shard and `held` did not.
caf::error check_shard_checkpoint(const shard_checkpoint_view& view, const block_layout& layout,
                                  int32_t shard, float max_parameter = default_max_parameter,
                                  const block_layout* held = nullptr);

/// Why a checkpoint cannot continue the run `current` ("" when it can): the model, its cut into
/// blocks, its buckets, the number of workers and the optimizer must be the same (the whole
/// identity, dataset included, is run_identity.hpp's); the number of shards may differ
/// (checkpoint_resize.hpp).
std::string incompatibility(const train_spec& saved, const train_spec& current);

} // namespace actorps
