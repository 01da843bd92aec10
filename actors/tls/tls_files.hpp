// The three files of a task's mutual TLS identity (--tls-cert, --tls-key, --tls-ca): its own
// certificate (whose subject CN names the task, scripts/make_certs.sh), the certificate's private
// key, and the cluster's CA, the only issuer whose certificates a peer may present.
#pragma once

#include <string>

namespace actorps {

struct tls_files {
  std::string cert;  ///< PEM certificate of this task, signed by `ca`
  std::string key;   ///< PEM private key matching `cert`
  std::string ca;    ///< PEM certificate of the cluster's CA

  /// TLS is on when the files are given (check_tls_files insists on all three or none).
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

/// Checks the files before anything listens: all three or none ("--tls-key is missing: ...");
/// each readable and PEM; the key the certificate's; the certificate issued by the CA and not
/// expired. Returns "" when they are fine (or absent), else why not, naming the flag and file.
std::string check_tls_files(const tls_files& files);

/// The subject CN of the PEM certificate in `file` ("" when unreadable or absent).
std::string certificate_common_name(const std::string& file);

} // namespace actorps
