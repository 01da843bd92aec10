// SHA-256 and HMAC-SHA256 (OpenSSL), as hex: the checksums an export records for its files and
// the signatures of checkpoint manifests (storage/checkpoint_signing.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace actorps {

/// SHA-256 over bytes given in pieces.
class sha256_stream {
public:
  sha256_stream();
  ~sha256_stream();
  sha256_stream(const sha256_stream&) = delete;
  sha256_stream& operator=(const sha256_stream&) = delete;

  void update(const void* data, std::size_t n);
  /// The digest of everything given, as 64 lowercase hex digits; call once.
  std::string hex();

private:
  struct context;
  std::unique_ptr<context> ctx_;
};

/// The SHA-256 of `bytes`, as 64 lowercase hex digits.
std::string sha256_hex(const std::string& bytes);

/// HMAC-SHA256 of `text` under `key`, as 64 lowercase hex digits.
std::string hmac_sha256_hex(const std::string& key, const std::string& text);

/// Whether two digests are equal, in time independent of where they differ.
bool same_digest(const std::string& a, const std::string& b);

} // namespace actorps
