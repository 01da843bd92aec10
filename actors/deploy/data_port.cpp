#include "actors/deploy/data_port.hpp"

namespace actorps {

uint16_t data_port_of(const cluster_spec& cluster, const task_id& task, int requested) {
  const auto& own = cluster.address(task);
  const bool derived = requested <= 0;
  const int port = derived ? own.port + 1 : requested;
  const auto what = (derived ? "the data port of " + task.text() + " (its port + 1), "
                             : std::string("--data-port "))
                    + std::to_string(port) + ",";
  if (port > 65535) throw cluster_error(what + " is past 65535: give --data-port");
  if (port == own.port)
    throw cluster_error(what + " is " + task.text() + "'s own port: give another --data-port");
  for (const auto& type : task_types()) {
    const auto& list = cluster.tasks(type);
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].host == own.host && list[i].port == port)
        throw cluster_error(what + " is the address of " + type + ":" + std::to_string(i)
                            + " in the cluster (" + list[i].text() + "): give " + task.text()
                            + " another --data-port");
  }
  return static_cast<uint16_t>(port);
}

} // namespace actorps
