#include "actors/protocol/digest.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace actorps {

namespace {

std::string to_hex(const unsigned char* bytes, std::size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

} // namespace

struct sha256_stream::context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~context() { EVP_MD_CTX_free(md); }
};

sha256_stream::sha256_stream() : ctx_(std::make_unique<context>()) {
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 unavailable (OpenSSL)");
}

sha256_stream::~sha256_stream() = default;

void sha256_stream::update(const void* data, std::size_t n) {
  if (EVP_DigestUpdate(ctx_->md, data, n) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
}

std::string sha256_stream::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_->md, md, &n) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  return to_hex(md, n);
}

std::string sha256_hex(const std::string& bytes) {
  sha256_stream sha;
  sha.update(bytes.data(), bytes.size());
  return sha.hex();
}

std::string hmac_sha256_hex(const std::string& key, const std::string& text) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(text.data()), text.size(), md, &n))
    throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
  return to_hex(md, n);
}

bool same_digest(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace actorps
