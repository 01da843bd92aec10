#include "actors/tls/tls_files.hpp"
#include "actors/protocol/input_file.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <unistd.h>

namespace actorps {

namespace {

using file_ptr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;
using x509_ptr = std::unique_ptr<X509, void (*)(X509*)>;
using key_ptr = std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)>;

/// An encrypted key would make OpenSSL ask for a passphrase on the terminal: refuse instead.
int no_passphrase(char*, int, int, void*) { return -1; }

/// Opens `path` for reading, or says why not ("--tls-cert /x: No such file or directory"): a
/// regular file of at most 1 MiB (a FIFO would block the task before it starts).
file_ptr open_file(const std::string& flag, const std::string& path, std::string& why) {
  file_ptr f{nullptr, std::fclose};
  auto input = open_input_file(path, std::size_t(1) << 20);
  if (!input) {
    why = flag + " " + path + ": cannot read it (" + input.reason + ")";
    return f;
  }
  f.reset(::fdopen(input.fd, "rb"));
  if (!f) {
    why = flag + " " + path + ": cannot read it (" + std::strerror(errno) + ")";
    ::close(input.fd);
  }
  return f;
}

x509_ptr read_certificate(const std::string& flag, const std::string& path, std::string& why) {
  x509_ptr cert{nullptr, X509_free};
  auto f = open_file(flag, path, why);
  if (!f) return cert;
  cert.reset(PEM_read_X509(f.get(), nullptr, no_passphrase, nullptr));
  ERR_clear_error();
  if (!cert) why = flag + " " + path + ": not a PEM certificate";
  return cert;
}

key_ptr read_key(const std::string& flag, const std::string& path, std::string& why) {
  key_ptr key{nullptr, EVP_PKEY_free};
  auto f = open_file(flag, path, why);
  if (!f) return key;
  key.reset(PEM_read_PrivateKey(f.get(), nullptr, no_passphrase, nullptr));
  ERR_clear_error();
  if (!key) why = flag + " " + path + ": not a PEM private key (or one with a passphrase)";
  return key;
}

/// Whether `ca` issued `cert` (signature, validity dates): "" or the verifier's reason.
std::string verify_against(X509* cert, X509* ca) {
  std::unique_ptr<X509_STORE, void (*)(X509_STORE*)> store{X509_STORE_new(), X509_STORE_free};
  std::unique_ptr<X509_STORE_CTX, void (*)(X509_STORE_CTX*)> ctx{X509_STORE_CTX_new(),
                                                                 X509_STORE_CTX_free};
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca) != 1
      || X509_STORE_CTX_init(ctx.get(), store.get(), cert, nullptr) != 1) {
    ERR_clear_error();
    return "cannot set up the verification";
  }
  auto ok = X509_verify_cert(ctx.get()) == 1;
  ERR_clear_error();
  return ok ? "" : X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
}

} // namespace

std::string check_tls_files(const tls_files& files) {
  if (!files.enabled()) return "";
  for (auto [flag, value] : {std::pair<const char*, const std::string*>{"--tls-cert", &files.cert},
                             {"--tls-key", &files.key},
                             {"--tls-ca", &files.ca}})
    if (value->empty())
      return std::string(flag) + " is missing: TLS needs --tls-cert, --tls-key and --tls-ca "
                                 "together (or none of them)";
  std::string why;
  auto cert = read_certificate("--tls-cert", files.cert, why);
  if (!cert) return why;
  auto key = read_key("--tls-key", files.key, why);
  if (!key) return why;
  auto ca = read_certificate("--tls-ca", files.ca, why);
  if (!ca) return why;
  auto matches = X509_check_private_key(cert.get(), key.get()) == 1;
  ERR_clear_error();
  if (!matches)
    return "--tls-key " + files.key + " is not the key of --tls-cert " + files.cert;
  if (auto bad = verify_against(cert.get(), ca.get()); !bad.empty())
    return "--tls-cert " + files.cert + " does not verify against --tls-ca " + files.ca + ": "
           + bad;
  return "";
}

std::string certificate_common_name(const std::string& file) {
  std::string why;
  auto cert = read_certificate("", file, why);
  if (!cert) return "";
  auto name = X509_get_subject_name(cert.get());
  char cn[256] = {};
  if (!name || X509_NAME_get_text_by_NID(name, NID_commonName, cn, sizeof cn) < 0) return "";
  return cn;
}

} // namespace actorps
