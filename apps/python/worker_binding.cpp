#include "apps/python/worker_binding.hpp"

#include "apps/python/binding.hpp"
#include "apps/python/errors.hpp"

#include <optional>

namespace actorps::python {

python_worker::python_worker(worker_client client, std::size_t floats,
                             std::vector<uint32_t> table_dims)
  : client_(std::move(client)), floats_(floats), dims_(std::move(table_dims)) {}

python_worker::~python_worker() {
  if (held_.empty()) return;
  // Replies may still be written into these arrays: wait for them before letting go.
  std::vector<int64_t> tickets;
  for (const auto& entry : held_) tickets.push_back(entry.first);
  {
    py::gil_scoped_release release;
    for (auto t : tickets) (void)client_.wait(t);
  }
  held_.clear();
}

void python_worker::check_idle() const {
  if (waiting_)
    throw std::runtime_error("WorkerClient: in wait() on another thread; use one client per "
                             "thread (LocalCluster.worker(w) for each)");
}

uint32_t python_worker::table_of(py::handle item, const std::string& arg) const {
  auto table = item.cast<int64_t>();
  if (table < 0 || static_cast<std::size_t>(table) >= dims_.size())
    throw py::value_error(arg + ": table " + std::to_string(table) + ", the model has " +
                          std::to_string(dims_.size()) + " sparse tables");
  return static_cast<uint32_t>(table);
}

// Each (table, keys, values) of `parts`: keys uint64/int64 and values keys × dim floats, held
// for the ticket. `values_name` names the third member in errors ("rows_out", "grads").
template <class Part>
std::vector<Part> python_worker::parts_of(py::handle parts, const char* list_name,
                                          const char* values_name, bool writable,
                                          std::vector<held_buffer>& held) const {
  std::vector<Part> out;
  if (parts.is_none()) return out;
  std::size_t i = 0;
  for (auto item : py::reinterpret_borrow<py::iterable>(parts)) {
    auto arg = std::string(list_name) + "[" + std::to_string(i++) + "]";
    py::tuple part(py::reinterpret_borrow<py::object>(item));
    if (part.size() != 3)
      throw py::value_error(arg + ": expected (table, keys, " + values_name + ")");
    auto table = table_of(part[0], arg);
    auto keys = view_of(part[1], arg + " keys", element::key64, 0, "", false);
    if (keys.count == 0) continue;
    auto dim = dims_[table];
    auto values = view_of(part[2], arg + " " + values_name, element::float32, keys.count * dim,
                          std::to_string(keys.count) + " keys x dim " + std::to_string(dim),
                          writable);
    out.push_back({table, keys.keys(), keys.count, values.floats()});
    held.push_back(std::move(keys));
    held.push_back(std::move(values));
  }
  return out;
}

int64_t python_worker::pull(int64_t clock, py::handle out, py::handle rows) {
  check_idle();
  std::vector<held_buffer> held;
  held.push_back(view_of(out, "out", element::float32, floats_, "the model's total_floats", true));
  auto pulls = parts_of<sparse_pull>(rows, "rows", "rows_out", true, held);
  auto t = client_.pull(clock, held.front().floats(), pulls);
  held_.emplace(t, std::move(held));
  return t;
}

int64_t python_worker::push_pull(int64_t clock, py::handle grad, py::handle out,
                                 py::handle push, py::handle rows) {
  check_idle();
  std::vector<held_buffer> held;
  held.push_back(view_of(grad, "grad", element::float32, floats_, "the model's total_floats", false));
  held.push_back(view_of(out, "out", element::float32, floats_, "the model's total_floats", true));
  auto pushes = parts_of<sparse_push>(push, "push", "grads", false, held);
  auto pulls = parts_of<sparse_pull>(rows, "rows", "rows_out", true, held);
  auto t = client_.push_pull(clock, held[0].floats(), held[1].floats(), pushes, pulls);
  held_.emplace(t, std::move(held));
  return t;
}

void python_worker::finish() {
  caf::error err;
  {
    py::gil_scoped_release release;
    err = client_.finish();
  }
  if (err) raise_error(err);
}

int64_t python_worker::wait(int64_t ticket) {
  check_idle();
  auto entry = held_.find(ticket);
  if (entry == held_.end())
    throw py::value_error("ticket: " + std::to_string(ticket) + " is unknown or already waited");
  struct idle_again {  // also when the wait throws
    std::atomic<bool>& waiting;
    ~idle_again() { waiting = false; }
  };
  std::optional<caf::expected<int64_t>> result;
  try {
    waiting_ = true;
    idle_again idle{waiting_};
    py::gil_scoped_release release;
    result.emplace(client_.wait(ticket));
  } catch (...) {
    held_.erase(entry);  // a broken promise: nothing will write into the arrays any more
    throw;
  }
  held_.erase(entry);  // the runtime is done with the ticket's arrays
  if (!*result) raise_error(result->error());
  return **result;
}

void bind_worker_client(py::module_& m) {
  py::class_<python_worker>(
    m, "WorkerClient",
    "A worker's connection to the shards (ps-lite's KVWorker): pull and push_pull return a "
    "ticket at once; wait(ticket) blocks, without the GIL, until every shard has answered. "
    "Arrays are NumPy float32 arrays or PyTorch CPU float32 tensors, C-contiguous, used in "
    "place (no copy): out is written when wait returns; the client holds every array of a "
    "ticket until then. One client per thread.")
    .def("pull", &python_worker::pull, py::arg("clock"), py::arg("out"),
         py::arg("rows") = py::none(),
         "Pulls the parameters for `clock` into out (total_floats floats, model order) and the "
         "rows of sparse keys: rows=[(table, keys, rows_out)], keys uint64/int64, rows_out "
         "len(keys) x dim floats. Returns a ticket.")
    .def("push_pull", &python_worker::push_pull, py::arg("clock"), py::arg("grad"),
         py::arg("out"), py::arg("push") = py::none(), py::arg("rows") = py::none(),
         "Pushes the gradient of `clock` (and sparse rows: push=[(table, distinct keys, grads)]) "
         "and pulls the parameters for clock + 1 into out (and rows). Returns a ticket.")
    .def("wait", &python_worker::wait, py::arg("ticket"),
         "Blocks until the ticket's replies are in; returns the staleness of what arrived, or "
         "raises actorps.Error (a refused push, a lost shard, a timeout).")
    .def("finish", &python_worker::finish,
         "This worker is done for good: the shards stop waiting for its pushes, so that in sync "
         "mode the others go on when workers run different numbers of clocks. Wait for every "
         "ticket first; later pulls and pushes fail.")
    .def_property_readonly("newest_clock", &python_worker::newest_clock,
                           "The newest clock included in what the last waited ticket brought "
                           "(-1: none).")
    .def_property_readonly("staleness_bound", &python_worker::staleness_bound,
                           "The consistency rule's bound: S in ssp, 0 in sync, -1 (none) in "
                           "async.")
    .def("may_compute_ahead", &python_worker::may_compute_ahead, py::arg("staleness"),
         "Overlap: push_pull returns at once, so a loop may compute clock c + 1 on the "
         "parameters pulled for c while the push of c is in flight (into another array), and "
         "wait on it before pushing c + 1. Whether that stays within the bound, given the "
         "staleness wait returned for those parameters: staleness + 1 <= the bound; always in "
         "async, never in sync or ssp 0.")
    .def_property_readonly("total_floats", &python_worker::total_floats)
    .def_property_readonly("pending", &python_worker::pending, "Tickets not yet waited.");
}

} // namespace actorps::python
