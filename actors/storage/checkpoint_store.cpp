#include "actors/storage/checkpoint_store.hpp"
#include "actors/storage/checkpoint_consistency.hpp"
#include "actors/storage/checkpoint_lineage.hpp"
#include "actors/protocol/digest.hpp"
#include "actors/protocol/input_file.hpp"
#include "kernels/sparse/row_optimizer.hpp"
#include "kernels/sparse/sparse_table.hpp"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace actorps {

namespace {

constexpr const char* format_name = "actorps-checkpoint";
constexpr int format_version = 1;
constexpr const char* signature_algorithm = "hmac-sha256";

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw checkpoint_error(path.string() + ": " + what);
}

std::string errno_text() { return std::strerror(errno); }

void fsync_directory(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(dir, "cannot open the directory to sync it: " + errno_text());
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail(dir, "fsync failed: " + errno_text());
}

bool is_checkpoint_name(const std::string& name) {
  auto clock = checkpoint_clock_of(name);
  return clock && name == checkpoint_dir_name(*clock);
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// What a manifest says of one file.
struct listed_file {
  std::string name;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  std::string sha256;  ///< signed manifests only
};

/// The CRC-32 and (when `sha` is given) SHA-256 of the `size` bytes of `fd`, read in pieces into
/// `into` when it is given (size bytes there), else through a small buffer.
uint32_t digest_file(const fs::path& path, int fd, uint64_t size, sha256_stream* sha,
                     char* into) {
  std::vector<char> scratch(into ? 0 : std::size_t(1) << 20);
  uLong crc = ::crc32(0L, Z_NULL, 0);
  for (uint64_t at = 0; at < size;) {
    char* to = into ? into + at : scratch.data();
    const uint64_t room = into ? size - at : scratch.size();
    auto want = static_cast<std::size_t>(std::min<uint64_t>(size - at, room));
    auto got = ::pread(fd, to, std::min<std::size_t>(want, 1u << 30), static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path, "cannot be read: " + errno_text());
    if (got == 0) fail(path, "shrank while being read");
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(to), static_cast<uInt>(got));
    if (sha) sha->update(to, static_cast<std::size_t>(got));
    at += static_cast<uint64_t>(got);
  }
  return static_cast<uint32_t>(crc);
}

/// Why a file's digests are not the manifest's ("" when they are).
std::string digest_mismatch(const listed_file& f, uint32_t crc, sha256_stream* sha) {
  if (crc != f.crc32) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "checksum %08x, the manifest says %08x", crc, f.crc32);
    return std::string(buf) + " (corrupt)";
  }
  if (sha && !same_digest(sha->hex(), f.sha256))
    return "SHA-256 differs from the signed manifest's (rewritten: its CRC-32 alone matching "
           "proves nothing)";
  return "";
}

/// A checkpoint file as its manifest entry describes it. The file must be a regular one of the
/// listed size, and its digests the listed ones, before any memory is taken for its contents: a
/// manifest that lists a 2 GiB file costs a 1 MiB buffer unless the file holds exactly what the
/// manifest says. The digests are checked again on the bytes kept.
wire_buffer read_file(const fs::path& path, const listed_file& f) {
  auto input = open_input_file(path.string());
  if (!input) fail(path, input.reason);
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_at_end{input.fd};
  auto size = input.size;
  if (size != f.bytes)
    fail(path, "the manifest says " + std::to_string(f.bytes) + " bytes, the file has "
                 + std::to_string(size) + " (truncated or replaced)");
  if (size % sizeof(capnp::word) != 0 || size > max_wire_bytes)
    fail(path, std::to_string(size) + " bytes is not a Cap'n Proto message");
  const bool signed_file = !f.sha256.empty();
  {
    std::optional<sha256_stream> sha;
    if (signed_file) sha.emplace();
    auto crc = digest_file(path, input.fd, size, sha ? &*sha : nullptr, nullptr);
    if (auto why = digest_mismatch(f, crc, sha ? &*sha : nullptr); !why.empty()) fail(path, why);
  }
  auto words = wire_buffer::allocate(size / sizeof(capnp::word));
  std::optional<sha256_stream> sha;
  if (signed_file) sha.emplace();
  auto crc = digest_file(path, input.fd, size, sha ? &*sha : nullptr,
                         reinterpret_cast<char*>(words.get()));
  if (auto why = digest_mismatch(f, crc, sha ? &*sha : nullptr); !why.empty())
    fail(path, "changed while being read: " + why);
  return wire_buffer{std::move(words), size / sizeof(capnp::word)};
}

/// The SHA-256 of a file on disk, read through a small buffer.
std::string sha256_of_file(const fs::path& path) {
  auto input = open_input_file(path.string());
  if (!input) fail(path, "cannot be signed: " + input.reason);
  sha256_stream sha;
  try {
    digest_file(path, input.fd, input.size, &sha, nullptr);
  } catch (...) {
    ::close(input.fd);
    throw;
  }
  ::close(input.fd);
  return sha.hex();
}

/// What the signature covers: the manifest without its signature, compact, keys sorted.
std::string signed_text(nlohmann::json manifest) {
  manifest.erase("signature");
  return manifest.dump();
}

/// Refuses a manifest whose signature is not what `key` makes (key given), or a signed one
/// when no key is (it cannot be checked, and was signed for a reason).
void check_signature(const fs::path& manifest_path, const nlohmann::json& manifest,
                     const std::string& key) {
  const bool is_signed = manifest.contains("signature");
  if (key.empty()) {
    if (is_signed)
      fail(manifest_path, "is signed (HMAC-SHA256) and no key was given to check it: give the "
                          "cluster's --checkpoint-key");
    return;
  }
  if (!is_signed)
    fail(manifest_path, "is not signed, and a checkpoint key is given (--checkpoint-key): an "
                        "unsigned checkpoint could have been written by anyone");
  const auto& sig = manifest.at("signature");
  if (sig.at("algorithm") != signature_algorithm)
    fail(manifest_path, "is signed with " + sig.at("algorithm").dump() + ", not "
                          + signature_algorithm);
  if (!same_digest(hmac_sha256_hex(key, signed_text(manifest)), sig.at("hmac").get<std::string>()))
    fail(manifest_path, "signature does not match: the checkpoint was changed after it was "
                        "signed, or signed with another key");
}

/// A manifest as read: its JSON and the SHA-256 of its bytes (what a delta names it by).
struct manifest_read {
  nlohmann::json json;
  std::string sha256;
};

/// Reads and parses dir's manifest; throws checkpoint_error when it is missing or not JSON.
manifest_read read_manifest(const fs::path& dir) {
  auto path = dir / manifest_name;
  if (!fs::exists(path))
    fail(dir, "no " + std::string(manifest_name)
                + " (incomplete: the run stopped while writing it)");
  std::string text;
  if (auto why = read_input_file(path.string(), max_manifest_bytes, text); !why.empty())
    throw checkpoint_error(why);
  manifest_read out;
  out.sha256 = sha256_hex(text);
  try {
    out.json = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    fail(path, std::string("not valid JSON: ") + e.what());
  }
  return out;
}

/// A manifest's place in a chain (base_clock -1: a full checkpoint); throws nlohmann's
/// exceptions for a malformed one.
checkpoint_link link_of(const nlohmann::json& manifest) {
  checkpoint_link link;
  if (manifest.value("kind", std::string("full")) != "delta") return link;
  const auto& base = manifest.at("base");
  const auto& pred = manifest.at("predecessor");
  link.base_clock = base.at("clock").get<int64_t>();
  link.base_sha256 = base.at("manifest_sha256").get<std::string>();
  link.predecessor_clock = pred.at("clock").get<int64_t>();
  link.predecessor_sha256 = pred.at("manifest_sha256").get<std::string>();
  return link;
}

/// Why a manifest's link cannot be one ("" when it can): its base and predecessor before it.
std::string link_inconsistency(const checkpoint_link& link, int64_t clock) {
  if (link.base_clock < 0) return "";
  auto n = [](int64_t v) { return std::to_string(v); };
  if (link.predecessor_clock >= clock)
    return "names its predecessor at clock " + n(link.predecessor_clock) + ", not before its own "
           + n(clock) + " (a duplicate or out of order)";
  if (link.base_clock > link.predecessor_clock)
    return "names its base at clock " + n(link.base_clock) + ", after its predecessor's "
           + n(link.predecessor_clock);
  if (link.base_sha256.size() != 64 || link.predecessor_sha256.size() != 64)
    return "names its base or predecessor without a SHA-256";
  return "";
}

/// Every ckpt-* directory under root with its clock, newest first.
std::vector<std::pair<int64_t, fs::path>> checkpoint_dirs(const fs::path& root, bool exact_names) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    auto name = entry.path().filename().string();
    auto clock = checkpoint_clock_of(name);
    if (!clock || !entry.is_directory()) continue;
    if (exact_names && !is_checkpoint_name(name)) continue;
    out.emplace_back(*clock, entry.path());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a > b; });
  return out;
}

/// Removes what --keep no longer needs of run `run_id`'s checkpoints: every one older than its
/// keep-th newest complete one, and unfinished ones (no manifest: a crash while writing) older
/// than its newest complete one. Another run's are not this run's to remove, whatever their
/// clocks.
void prune(const fs::path& root, int keep, const std::string& run_id) {
  if (keep <= 0) return;
  auto dirs = checkpoint_dirs(root, false);
  dirs.erase(std::remove_if(dirs.begin(), dirs.end(),
                            [&](const auto& d) { return run_id_of(d.second) != run_id; }),
             dirs.end());
  std::vector<int64_t> complete;
  for (const auto& [clock, dir] : dirs)
    if (is_checkpoint_name(dir.filename().string()) && fs::exists(dir / manifest_name))
      complete.push_back(clock);
  if (complete.empty()) return;
  auto newest = complete.front();
  auto cutoff = complete.size() >= static_cast<std::size_t>(keep) ? complete[keep - 1] : INT64_MIN;
  // Every link a kept delta is built on stays, however old: its chain, back to its base.
  std::set<int64_t> needed;
  for (auto clock : complete) {
    if (clock < cutoff) break;
    for (auto at = clock; needed.insert(at).second;) {
      checkpoint_link link;
      try {
        link = link_of(read_manifest(root / checkpoint_dir_name(at)).json);
      } catch (const std::exception&) {
        break;  // unreadable: loading will not follow it either
      }
      if (link.base_clock < 0 || link.predecessor_clock >= at) break;
      at = link.predecessor_clock;
    }
  }
  for (const auto& [clock, dir] : dirs) {
    bool unfinished = is_checkpoint_name(dir.filename().string()) && !fs::exists(dir / manifest_name);
    if (!unfinished && is_checkpoint_name(dir.filename().string()) && needed.count(clock)) continue;
    if (clock >= cutoff && !(unfinished && clock < newest)) continue;
    std::error_code ec;
    fs::remove_all(dir, ec);  // best effort: a leftover is only disk space
  }
}

/// Checks one decoded shard file against the run's layout.
void check_shard(const fs::path& file, const shard_checkpoint_view& view, const block_layout& layout,
                 int32_t shard, int64_t clock, const run_checkpoint& run, float max_parameter) {
  if (view.shard != shard) fail(file, "holds shard " + std::to_string(view.shard));
  if (view.clock != clock)
    fail(file, "is from clock " + std::to_string(view.clock) + ", the manifest's is "
                 + std::to_string(clock));
  auto why = incompatibility(view.spec, run.spec);
  if (why.empty() && (view.spec.shards != run.spec.shards
                      || view.spec.bucket_shards != run.spec.bucket_shards))
    why = "it was written under another shard count or bucket placement";
  if (why.empty()) why = shard_inconsistency(view, run);
  if (!why.empty()) fail(file, "does not match run.capnp: " + why);
  if (auto err = check_shard_checkpoint(view, layout, shard, max_parameter))
    fail(file, describe(err));
}

} // namespace

caf::error check_shard_checkpoint(const shard_checkpoint_view& view, const block_layout& layout,
                                  int32_t shard, float max_parameter, const block_layout* held) {
  if (shard < 0 || shard >= layout.shards() || view.shard != shard)
    return make_error(errc::wrong_shard, "checkpoint of shard " + std::to_string(view.shard));
  if (held && held->blocks().size() != layout.blocks().size())
    return make_error(errc::missing_block, "a resize's part of a model cut into "
                                             + std::to_string(layout.blocks().size())
                                             + " blocks, the shard's into "
                                             + std::to_string(held->blocks().size()));
  std::vector<uint32_t> ids;  // the blocks the view carries
  for (auto id : layout.shard_blocks(shard))
    if (!held || held->blocks()[id].shard != shard) ids.push_back(id);
  if (view.blocks.size() != ids.size() || view.state.size() != ids.size())
    return make_error(errc::missing_block, "checkpoint carries " + std::to_string(view.blocks.size())
                                             + " blocks, expected " + std::to_string(ids.size()));
  auto slots = optimizer_state_slots(view.spec.optimizer.kind);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& b = layout.blocks()[ids[i]];
    const auto& v = view.blocks[i];
    const auto& s = view.state[i];
    if (v.id != b.id || s.id != b.id || v.count != b.size || s.count != slots * b.size)
      return make_error(errc::wrong_element_count, "checkpoint block " + std::to_string(v.id));
  }
  if (view.sparse.size() != view.spec.model.sparse_tables.size())
    return make_error(errc::unknown_table, "checkpoint carries " + std::to_string(view.sparse.size())
                                             + " sparse tables, the spec "
                                             + std::to_string(view.spec.model.sparse_tables.size()));
  if (auto why = out_of_bounds(view, layout, max_parameter); !why.empty())
    return make_error(errc::value_out_of_bounds, why);
  return caf::none;
}

std::optional<int64_t> checkpoint_clock_of(const std::string& name) {
  const std::string prefix = "ckpt-";
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::size_t i = prefix.size(), end = i;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == i || end - i > 18) return std::nullopt;
  return std::stoll(name.substr(i, end - i));
}

std::string shard_file_name(int32_t shard) { return "shard-" + std::to_string(shard) + ".capnp"; }

std::string checkpoint_dir_name(int64_t clock) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "ckpt-%012lld", static_cast<long long>(clock));
  return buf;
}

uint32_t crc32_of(const void* data, std::size_t n) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {  // zlib takes uInt lengths
    auto chunk = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = ::crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

file_record write_file_durably(const fs::path& path, const void* data, std::size_t n) {
  auto tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot be written: " + errno_text());
  auto* p = static_cast<const char*>(data);
  std::size_t left = n;
  while (left > 0) {
    auto written = ::write(fd, p, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      auto why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(path, "write failed: " + why);
    }
    p += written;
    left -= static_cast<std::size_t>(written);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    auto why = errno_text();
    ::unlink(tmp.c_str());
    fail(path, "fsync failed: " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto why = errno_text();
    ::unlink(tmp.c_str());
    fail(path, "rename failed: " + why);
  }
  fsync_directory(path.parent_path().empty() ? fs::path(".") : path.parent_path());
  return {path.filename().string(), n, crc32_of(data, n)};
}

fs::path prepare_checkpoint_dir(const fs::path& root, int64_t clock, const std::string& run_id) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) fail(root, "the checkpoint directory cannot be created (" + ec.message() + ")");
  if (::access(root.c_str(), W_OK | X_OK) != 0)
    fail(root, "the checkpoint directory is not writable (" + errno_text() + ")");
  auto dir = root / checkpoint_dir_name(clock);
  if (fs::exists(dir)) {
    for (int n = 1;; ++n) {  // keep what is there: it may be the only copy of something
      auto aside = dir;
      aside += ".old-" + std::to_string(n);
      if (fs::exists(aside)) continue;
      fs::rename(dir, aside, ec);
      if (ec) fail(dir, "cannot be moved aside (" + ec.message() + ")");
      break;
    }
  }
  fs::create_directory(dir, ec);
  if (ec) fail(dir, "cannot be created (" + ec.message() + ")");
  if (!run_id.empty()) write_run_id(dir, run_id);  // first: an unfinished one is attributable
  fsync_directory(root);
  return dir;
}

std::string commit_checkpoint(const fs::path& dir, int64_t clock, std::vector<file_record> files,
                              const wire_buffer& run, int keep, const std::string& key,
                              const checkpoint_link& link) {
  auto decoded = decode_run_checkpoint(run);
  if (!decoded) fail(dir / run_file_name, describe(decoded.error()));
  for (const auto& f : files) {  // a shard on another host wrote its file into its own disk
    std::error_code ec;
    if (fs::file_size(dir / f.name, ec) != f.bytes || ec)
      fail(dir / f.name, "was written by its shard but is not here: the shards and the chief do "
                         "not share this filesystem");
  }
  const bool delta = std::any_of(files.begin(), files.end(),
                                 [](const file_record& f) { return f.delta_since >= 0; });
  if (delta && link.base_clock < 0)
    fail(dir, "its shard files hold changes only, and it continues no chain of checkpoints");
  if (delta) {
    if (auto why = link_inconsistency(link, clock); !why.empty()) fail(dir, why);
    for (const auto& f : files)
      if (f.delta_since > link.predecessor_clock)
        fail(dir / f.name, "holds the changes since clock " + std::to_string(f.delta_since)
                             + ", after its predecessor's clock "
                             + std::to_string(link.predecessor_clock));
  }
  files.push_back(write_file_durably(dir / run_file_name, run.bytes(), run.size_bytes()));
  nlohmann::json manifest;
  manifest["format"] = format_name;
  manifest["version"] = format_version;
  manifest["clock"] = clock;
  manifest["run_id"] = decoded->run_id;
  manifest["created"] = utc_now();
  manifest["kind"] = delta ? "delta" : "full";
  if (delta) {
    manifest["base"] = {{"clock", link.base_clock}, {"manifest_sha256", link.base_sha256}};
    manifest["predecessor"] = {{"clock", link.predecessor_clock},
                               {"manifest_sha256", link.predecessor_sha256}};
  }
  auto& list = manifest["files"] = nlohmann::json::array();
  for (const auto& f : files) {
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", f.crc32);
    list.push_back({{"name", f.name}, {"bytes", f.bytes}, {"crc32", crc}});
    if (f.delta_since >= 0) list.back()["delta_since"] = f.delta_since;
    // the bytes on disk, as a reader will hash them (a shard wrote its own file)
    if (!key.empty()) list.back()["sha256"] = sha256_of_file(dir / f.name);
  }
  if (!key.empty())
    manifest["signature"] = {{"algorithm", signature_algorithm},
                             {"hmac", hmac_sha256_hex(key, signed_text(manifest))}};
  auto text = manifest.dump(2) + "\n";
  write_file_durably(dir / manifest_name, text.data(), text.size());
  prune(dir.parent_path(), keep, decoded->run_id);
  return sha256_hex(text);
}

loaded_checkpoint load_checkpoint(const fs::path& dir, float max_parameter,
                                  const std::string& key) {
  auto manifest_path = dir / manifest_name;
  auto read = read_manifest(dir);
  const auto& manifest = read.json;
  loaded_checkpoint out;
  out.dir = dir.string();
  out.manifest_sha256 = read.sha256;
  std::vector<std::pair<std::string, wire_buffer>> files;
  try {
    if (!manifest.is_object() || manifest.at("format") != format_name
        || manifest.at("version") != format_version)
      fail(manifest_path, "not an actorps checkpoint manifest of version "
                            + std::to_string(format_version));
    check_signature(manifest_path, manifest, key);
    out.clock = manifest.at("clock").get<int64_t>();
    out.link = link_of(manifest);
    if (auto why = link_inconsistency(out.link, out.clock); !why.empty()) fail(manifest_path, why);
    for (const auto& f : manifest.at("files")) {
      listed_file listed;
      listed.name = f.at("name").get<std::string>();
      const auto& name = listed.name;
      if (name.empty() || name.find('/') != std::string::npos || name.front() == '.')
        fail(manifest_path, "lists a file outside its directory: " + name);
      listed.bytes = f.at("bytes").get<uint64_t>();
      auto crc = f.at("crc32").get<std::string>();
      std::size_t used = 0;
      auto value = std::stoul(crc, &used, 16);
      if (used != crc.size() || value > UINT32_MAX) throw std::invalid_argument(crc);
      listed.crc32 = static_cast<uint32_t>(value);
      if (!key.empty()) listed.sha256 = f.at("sha256").get<std::string>();
      auto bytes = read_file(dir / name, listed);
      files.emplace_back(name, std::move(bytes));
    }
  } catch (const nlohmann::json::exception& e) {
    fail(manifest_path, std::string("malformed: ") + e.what());
  } catch (const std::invalid_argument&) {
    fail(manifest_path, "malformed checksum");
  } catch (const std::out_of_range&) {
    fail(manifest_path, "malformed checksum");
  }
  auto find = [&](const std::string& name) -> const wire_buffer& {
    for (const auto& [n, buf] : files)
      if (n == name) return buf;
    fail(manifest_path, "does not list " + name);
  };
  out.run_bytes = find(run_file_name);
  auto run = decode_run_checkpoint(out.run_bytes);
  if (!run) fail(dir / run_file_name, describe(run.error()));
  if (run->clock != out.clock)
    fail(dir / run_file_name, "is from clock " + std::to_string(run->clock) + ", the manifest's is "
                                + std::to_string(out.clock));
  // the directory's name is the one thing a consistent rewrite of the files leaves alone
  auto named = checkpoint_clock_of(dir.filename().string());
  if (auto why = run_inconsistency(*run, named ? *named : out.clock); !why.empty())
    fail(dir / run_file_name, why);
  block_layout layout(run->spec);
  for (int32_t s = 0; s < run->spec.shards; ++s) {
    auto name = shard_file_name(s);
    const auto& buf = find(name);
    auto view = decode_shard_checkpoint(buf);
    if (!view) fail(dir / name, describe(view.error()));
    check_shard(dir / name, *view, layout, s, out.clock, *run, max_parameter);
    if (out.link.base_clock < 0 && view->delta_since >= 0)
      fail(dir / name, "holds the changes since clock " + std::to_string(view->delta_since)
                         + " only, in a checkpoint its manifest says is whole");
    if (view->delta_since > out.link.predecessor_clock)
      fail(dir / name, "holds the changes since clock " + std::to_string(view->delta_since)
                         + ", after its predecessor's clock "
                         + std::to_string(out.link.predecessor_clock));
    out.shards.push_back(buf);
  }
  return out;
}

namespace {

/// One shard's state folded along a chain: the view, and the file its dense parts point into.
struct folded_shard {
  wire_buffer holder;
  shard_checkpoint_view view;
};

/// Folds `link` (a delta's shard file, or a whole one) into `into`.
void fold(folded_shard& into, const wire_buffer& file, const fs::path& path) {
  auto view = decode_shard_checkpoint(file);  // checked when its checkpoint was loaded
  if (!view) fail(path, describe(view.error()));
  if (view->delta_since < 0) {
    into = {file, std::move(*view)};
    return;
  }
  const auto& tables = view->spec.model.sparse_tables;
  if (into.view.sparse.size() != view->sparse.size() || tables.size() != view->sparse.size())
    fail(path, "holds " + std::to_string(view->sparse.size()) + " sparse tables, its predecessor "
                 + std::to_string(into.view.sparse.size()));
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const auto& cfg = tables[t].config;
    try {
      apply_delta_rows(into.view.sparse[t], view->sparse[t], cfg.dim,
                       row_state_slots(cfg.optimizer.kind),
                       row_counts_steps(cfg.optimizer.kind));
    } catch (const std::exception& e) {
      fail(path, "sparse table " + tables[t].name + ": " + e.what());
    }
  }
  auto sparse = std::move(into.view.sparse);
  into = {file, std::move(*view)};
  into.view.sparse = std::move(sparse);
}

} // namespace

loaded_checkpoint load_chain(const fs::path& dir, float max_parameter, const std::string& key) {
  auto newest = load_checkpoint(dir, max_parameter, key);
  if (newest.link.base_clock < 0) return newest;
  const auto root = dir.parent_path();
  const auto name = [](int64_t clock) { return checkpoint_dir_name(clock); };
  const auto run_id = [](const nlohmann::json& m) { return m.value("run_id", std::string()); };
  // Back along the manifests first (small): every link named, present, and of this chain.
  std::vector<fs::path> links{dir};
  auto at_link = newest.link;
  auto at_clock = newest.clock;
  const auto newest_run = run_id(read_manifest(dir).json);
  for (;;) {
    const auto here = links.back().filename().string();
    const auto pred_dir = root / name(at_link.predecessor_clock);
    const auto pred = name(at_link.predecessor_clock);
    if (!fs::exists(pred_dir / manifest_name))
      fail(dir, "its chain has a gap: " + here + " names its predecessor " + pred
                  + ", which is not there (or incomplete)");
    manifest_read m;
    checkpoint_link link;
    int64_t clock = 0;
    try {
      m = read_manifest(pred_dir);
      clock = m.json.at("clock").get<int64_t>();
      link = link_of(m.json);
    } catch (const checkpoint_error& e) {
      fail(dir, std::string("its chain's link ") + pred + " cannot be read: " + e.what());
    } catch (const std::exception& e) {
      fail(dir, "its chain's link " + pred + " has a malformed manifest: " + e.what());
    }
    if (!same_digest(m.sha256, at_link.predecessor_sha256))
      fail(dir, here + " names " + pred + " with manifest SHA-256 "
                  + at_link.predecessor_sha256.substr(0, 12) + "…, the one there is "
                  + m.sha256.substr(0, 12) + "… (another base's, another run's, or rewritten)");
    if (run_id(m.json) != newest_run)
      fail(dir, "its chain's link " + pred + " is another run's (run " + run_id(m.json)
                  + ", not " + newest_run + ")");
    if (clock != at_link.predecessor_clock || clock >= at_clock)
      fail(dir, "its chain's link " + pred + " is from clock " + std::to_string(clock)
                  + ", not before " + here + "'s " + std::to_string(at_clock)
                  + " (a duplicate or out of order)");
    links.push_back(pred_dir);
    if (link.base_clock < 0) {  // the base
      if (clock != at_link.base_clock || !same_digest(m.sha256, at_link.base_sha256))
        fail(dir, here + " names its base " + name(at_link.base_clock) + ", its chain reaches "
                    + pred + " (a delta of another base)");
      break;
    }
    if (link.base_clock != at_link.base_clock
        || !same_digest(link.base_sha256, at_link.base_sha256))
      fail(dir, here + " names its base " + name(at_link.base_clock) + ", its predecessor " + pred
                  + " is built on " + name(link.base_clock) + " (a delta of another base)");
    at_link = link;
    at_clock = clock;
  }
  // Then the files, base first, each checked as any checkpoint's and folded in.
  std::reverse(links.begin(), links.end());
  std::vector<folded_shard> shards;
  for (std::size_t i = 0; i < links.size(); ++i) {
    const auto& link_dir = links[i];
    loaded_checkpoint part;
    if (i + 1 == links.size()) {
      part = std::move(newest);
    } else {
      try {
        part = load_checkpoint(link_dir, max_parameter, key);
      } catch (const checkpoint_error& e) {
        fail(dir, std::string("its chain's link ") + link_dir.filename().string()
                    + " is damaged: " + e.what());
      }
    }
    if (i == 0) shards.resize(part.shards.size());
    if (part.shards.size() != shards.size())
      fail(link_dir, "has " + std::to_string(part.shards.size()) + " shards, its base "
                       + std::to_string(shards.size()));
    for (std::size_t s = 0; s < shards.size(); ++s)
      fold(shards[s], part.shards[s], link_dir / shard_file_name(static_cast<int32_t>(s)));
    if (i + 1 == links.size()) newest = std::move(part);
  }
  newest.shards.clear();
  for (auto& s : shards) {
    s.view.delta_since = -1;
    newest.shards.push_back(encode_shard_checkpoint(s.view.spec, s.view));
  }
  for (const auto& l : links) newest.chain.push_back(l.string());
  return newest;
}

loaded_checkpoint load_newest_checkpoint(const fs::path& path, const checkpoint_filter& wanted,
                                         float max_parameter, const std::string& key) {
  if (!fs::is_directory(path)) fail(path, "no such checkpoint directory");
  auto unwanted = [&](const loaded_checkpoint& ckpt) -> std::string {
    if (!wanted) return "";
    auto run = decode_run_checkpoint(ckpt.run_bytes);  // decoded once already: cannot fail
    return run ? wanted(*run) : describe(run.error());
  };
  if (fs::exists(path / manifest_name) || is_checkpoint_name(path.filename().string())) {
    auto loaded = load_chain(path, max_parameter, key);
    if (auto why = unwanted(loaded); !why.empty()) fail(path, why);
    return loaded;
  }
  std::vector<std::string> failed;
  for (const auto& [clock, dir] : checkpoint_dirs(path, true)) {
    try {
      auto loaded = load_chain(dir, max_parameter, key);
      if (auto why = unwanted(loaded); !why.empty()) fail(dir, why);
      loaded.skipped = std::move(failed);
      return loaded;
    } catch (const checkpoint_error& e) {
      failed.push_back(e.what());
    }
  }
  std::string text = "no valid checkpoint";
  for (const auto& f : failed) text += "\n  " + f;
  if (failed.empty()) text += " (no ckpt-* directories)";
  fail(path, text);
}

std::string incompatibility(const train_spec& saved, const train_spec& current) {
  if (saved.model.name != current.model.name)
    return "the checkpoint's model is " + saved.model.name + ", this run's is "
           + current.model.name;
  if (saved.model.tensors.size() != current.model.tensors.size())
    return "the checkpoint's model has " + std::to_string(saved.model.tensors.size())
           + " tensors, this run's " + std::to_string(current.model.tensors.size());
  for (std::size_t i = 0; i < saved.model.tensors.size(); ++i) {
    const auto& a = saved.model.tensors[i];
    const auto& b = current.model.tensors[i];
    if (a.name != b.name || a.shape != b.shape)
      return "the checkpoint's tensor " + std::to_string(i) + " is " + describe(a)
             + ", this run's is " + describe(b);
  }
  if (saved.block_floats != current.block_floats)
    return "the checkpoint cuts blocks of " + std::to_string(saved.block_floats)
           + " floats, this run " + std::to_string(current.block_floats);
  // another shard count is fine: the shard states are cut again (checkpoint_resize.hpp)
  if (saved.workers != current.workers)
    return "the checkpoint has " + std::to_string(saved.workers) + " workers, this run "
           + std::to_string(current.workers) + " (each worker's data position is its own: "
           "resume with --workers " + std::to_string(saved.workers) + ")";
  if (saved.optimizer.kind != current.optimizer.kind)
    return std::string("the checkpoint's optimizer is ") + to_string(saved.optimizer.kind)
           + ", this run's " + to_string(current.optimizer.kind);
  const auto& st = saved.model.sparse_tables;
  const auto& ct = current.model.sparse_tables;
  if (st.size() != ct.size())
    return "the checkpoint's model has " + std::to_string(st.size()) + " sparse tables, this run's "
           + std::to_string(ct.size());
  for (std::size_t i = 0; i < st.size(); ++i) {
    if (st[i].name != ct[i].name || st[i].config.dim != ct[i].config.dim
        || st[i].config.optimizer.kind != ct[i].config.optimizer.kind)
      return "the checkpoint's sparse table " + std::to_string(i) + " is " + st[i].name + " (dim "
             + std::to_string(st[i].config.dim) + ", " + to_string(st[i].config.optimizer.kind)
             + "), this run's " + ct[i].name + " (dim " + std::to_string(ct[i].config.dim) + ", "
             + to_string(ct[i].config.optimizer.kind) + ")";
  }
  auto placed = current;  // the chief places the buckets when the run starts
  place_buckets(placed);
  // the placement itself may differ: a resumed run takes the checkpoint's (resumed_placement)
  if (saved.bucket_shards.size() != placed.bucket_shards.size())
    return "the checkpoint hashes sparse keys into " + std::to_string(saved.bucket_shards.size())
           + " buckets, this run " + std::to_string(placed.bucket_shards.size());
  return "";
}

} // namespace actorps
