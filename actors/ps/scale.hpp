// Growing or shrinking the shards or workers of a distributed run while it trains (`actorps
// scale`).
//
// The chief takes the request at the next clock it can, which every worker pauses at: every
// shard's state at that clock is cut for the new number of shards, the minibatches no worker
// has trained are shared out among the new number of workers, and training goes on from
// there, nothing lost or applied twice. A growth takes in spare ps or worker tasks: tasks
// started with a cluster spec that lists them beyond the run's (the chief's spec with more ps
// or worker tasks), which joined and wait. A shrink stops the shards beyond the new size once
// their state is in hand, and the workers beyond it once they trained their clocks before the
// change; their tasks exit 0.
//
//   auto outcome = actorps::scale_job({"chief-host:2222", 3});  // 3 shards
//   auto more = actorps::scale_job({"chief-host:2222", 0, 4});  // 4 workers
//   if (outcome.status != actorps::scale_status::done) std::cerr << outcome.message << "\n";
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace actorps {

struct scale_options {
  std::string chief;  ///< the chief's address, HOST:PORT (its cluster spec's)
  int32_t ps = 0;       ///< the number of shards the run goes on with; 0: as many as now
  int32_t workers = 0;  ///< the number of workers the run goes on with; 0: as many as now
  /// The asker's TLS files (all three, or none for a cluster without TLS): with TLS only a
  /// certificate of the cluster's CA whose CN is admin:0 (or chief:0) may ask.
  std::string tls_cert = {}, tls_key = {}, tls_ca = {};
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};  ///< reaching the chief
  std::chrono::milliseconds wait{std::chrono::minutes(10)};  ///< for the change to be done
};

enum class scale_status {
  done,         ///< the run goes on with that many shards and workers
  refused,      ///< the chief (or this side) refused, saying why; nothing changed
  unreachable,  ///< the chief could not be reached, or did not answer within the wait
};

struct scale_outcome {
  scale_status status = scale_status::done;
  std::string message = {};  ///< what was done, or why not
};

/// Asks the chief to go on with `opts.ps` shards and `opts.workers` workers and waits for the
/// answer. Thread-safe.
/// CAF 0.17: the actor system it talks through is left to the end of the process (end it with
/// std::_Exit), as serve_task's (actors/ps.hpp).
scale_outcome scale_job(const scale_options& opts);

} // namespace actorps
