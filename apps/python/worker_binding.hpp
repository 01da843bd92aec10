// actorps.WorkerClient: worker_client (actors/ps.hpp) for Python. The runtime reads and writes
// the caller's arrays in place; each ticket holds its arrays until wait(ticket) returns, so
// dropping them early cannot free memory the shards' replies are written into.
#pragma once

#include "actors/ps.hpp"
#include "apps/python/buffers.hpp"

#include <atomic>
#include <map>
#include <vector>

namespace actorps::python {

class python_worker {
public:
  python_worker(worker_client client, std::size_t floats, std::vector<uint32_t> table_dims);
  ~python_worker();  ///< waits for tickets not yet waited (their arrays are still in use)
  python_worker(const python_worker&) = delete;
  python_worker& operator=(const python_worker&) = delete;

  int64_t pull(int64_t clock, py::handle out, py::handle rows);
  int64_t push_pull(int64_t clock, py::handle grad, py::handle out, py::handle push,
                    py::handle rows);
  int64_t wait(int64_t ticket);  ///< releases the GIL while it blocks
  void finish();                 ///< worker_client::finish, without the GIL
  int64_t newest_clock() const { return client_.newest_clock(); }
  int staleness_bound() const { return client_.staleness_bound(); }
  bool may_compute_ahead(int64_t staleness) const { return client_.may_compute_ahead(staleness); }
  std::size_t total_floats() const { return floats_; }
  std::size_t pending() const { return held_.size(); }

private:
  template <class Part>
  std::vector<Part> parts_of(py::handle parts, const char* list_name, const char* values_name,
                             bool writable, std::vector<held_buffer>& held) const;
  uint32_t table_of(py::handle item, const std::string& arg) const;
  void check_idle() const;

  worker_client client_;
  std::size_t floats_;
  std::vector<uint32_t> dims_;  // each sparse table's row width
  std::map<int64_t, std::vector<held_buffer>> held_;  // per ticket; touched with the GIL held
  std::atomic<bool> waiting_{false};
};

} // namespace actorps::python
