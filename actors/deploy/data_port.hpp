// Where a ps task's data link listens (the TCP side of link_socket.hpp). A fixed, documented
// port, so that a network policy allowing the cluster's ports (and the ones beside them)
// suffices: --data-port, or by default the task's own port + 1. A port that is another task's
// address in the cluster spec (same host name, same port) is refused before anything listens.
#pragma once

#include "actors/deploy/cluster_spec.hpp"

#include <cstdint>

namespace actorps {

/// The data link's port for ps task `task`: `requested` when positive, else the task's port
/// + 1. Throws cluster_error naming --data-port when that port is the task's own, another
/// task's in the cluster, or past 65535.
uint16_t data_port_of(const cluster_spec& cluster, const task_id& task, int requested);

} // namespace actorps
