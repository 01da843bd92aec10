// Signed checkpoints: with a key the cluster holds (--checkpoint-key FILE), the chief lists each
// file's SHA-256 in the manifest and signs the manifest with HMAC-SHA256 (actors/protocol/
// digest.hpp), so a file rewritten with its CRC-32 recomputed — a CRC is a checksum, not a
// signature — no longer loads. A reader with the key refuses an unsigned or wrongly signed
// checkpoint; a reader without one refuses a signed checkpoint, saying it needs the key
// (checkpoint_store.hpp does both).
#pragma once

#include <cstddef>
#include <string>

namespace actorps {

/// The fewest and most bytes a key file may hold.
inline constexpr std::size_t min_checkpoint_key_bytes = 16;
inline constexpr std::size_t max_checkpoint_key_bytes = 4096;

/// The key in `path`: every byte of the file (a trailing newline too), which must be a regular
/// file of min_checkpoint_key_bytes to max_checkpoint_key_bytes (e.g. `openssl rand -hex 32`).
/// Throws checkpoint_error "<path>: <what is wrong>".
std::string read_checkpoint_key(const std::string& path);

} // namespace actorps
