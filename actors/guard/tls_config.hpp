// Turning mutual TLS on for every CAF connection of a process, or saying loudly that it is off.
//
// TLS is a property of the actor system: with CAF's OpenSSL module loaded, publish_guarded
// accepts only TLS peers with a certificate of the cluster's CA and the connector dials over TLS
// (connect.hpp), so every connection a deployment opens is covered. CAF's automatic connections
// (the BASP broker dialling nodes it hears of, over plain TCP) stay off.
#pragma once

#include "actors/tls/tls_files.hpp"

#include <caf/actor_system_config.hpp>

#include <string>

namespace actorps {

/// Loads CAF's OpenSSL module into `cfg` with `files` (checked by check_tls_files first) as the
/// openssl.certificate, openssl.key and openssl.cafile keys. Call after the middleman is loaded
/// (configure_system with network settings). Does nothing when `files` is not enabled.
void configure_tls(caf::actor_system_config& cfg, const tls_files& files);

/// The TLS files configure_tls put into `cfg` (none when it did not).
tls_files configured_tls(const caf::actor_system_config& cfg);

/// Logs once per process, as a WARN line of `who`, that the cluster runs without TLS: anyone who
/// reaches its ports can control the run.
void warn_unauthenticated(const std::string& who);

} // namespace actorps
