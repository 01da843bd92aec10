// A task of a cluster, as TF_CONFIG's "task" names it ({"type": "worker", "index": 0}).
#pragma once

#include <string>

namespace actorps {

struct task_id {
  std::string type;  ///< chief, ps, worker or evaluator
  int index = 0;
  std::string text() const { return type + ":" + std::to_string(index); }
};

} // namespace actorps
