// Which path a worker's or evaluator's data link to a shard in another process takes
// (--data-link): `auto` picks shared memory when the shard's local socket is reachable (same
// host and network namespace; with TLS, entered with a ticket taken over TLS: link_hub.hpp),
// then the local socket alone, then TCP; `tcp`, `socket` and `shm` force one (the benchmark and the tests compare them; a
// forced path that cannot be had fails the connection with the reason).
#pragma once

#include <optional>
#include <string>

namespace actorps {

enum class data_link_path { automatic, tcp, socket, shm };

/// "auto", "tcp", "socket", "shm" → the path; nullopt for anything else.
std::optional<data_link_path> parse_data_link_path(const std::string& text);
const char* data_link_path_name(data_link_path p);

/// The path this process's connect_shard uses (set once from --data-link, before connecting;
/// default automatic).
void set_data_link_path(data_link_path p);
data_link_path configured_data_link_path();

} // namespace actorps
