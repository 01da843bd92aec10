// A task's view of the cluster, sent with its join so that the chief can refuse a task started
// with another spec (a worker whose TF_CONFIG lists 3 ps where the chief's lists 2 would
// otherwise run with the chief's view in silence). The view is canonical text, one string on
// the wire: "chief=h0:2222;ps=h1:2222,h2:2222;worker=h3:2222" (the chief, ps and worker jobs in
// that order, each job's addresses in index order; the evaluator, whom nobody dials, is not
// part of it: TFJob gives the evaluator a cluster without itself).
#pragma once

#include "actors/protocol/address.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace actorps {

/// The canonical text of a cluster's jobs.
std::string cluster_view_text(const std::map<std::string, std::vector<host_port>>& jobs);

/// "" when the two views are the same; else the first difference, worded for a log line:
/// "ps: this task's cluster lists 3 (h1:1, h2:1, h3:1), the chief's 2 (h1:1, h2:1)".
std::string cluster_view_difference(const std::string& task_view, const std::string& chief_view);

/// As cluster_view_difference, except that the task's ps and worker jobs may list more tasks
/// than the chief's after the same ones: a task an orchestrator added to a running job (a
/// spare, or a shard or worker since a growth) sees the cluster the job grows into.
std::string cluster_view_difference_growing(const std::string& task_view,
                                            const std::string& chief_view);

/// The address the view lists for `job`:`index` ("host:port"), "" when it lists none.
std::string cluster_view_address(const std::string& view, const std::string& job, int32_t index);

/// A spare's join (`job`:`index`, past the chief's tasks of that job): the address its own view
/// lists for it, or why it is refused (`refusal` not empty): its view is not the chief's with
/// more tasks (an empty chief view is not compared), or it does not list it.
struct spare_seat {
  host_port address;
  std::string refusal;
};
spare_seat seat_for_spare(const std::string& task_view, const std::string& chief_view,
                          const std::string& job, int32_t index);

} // namespace actorps
