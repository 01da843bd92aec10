// actorps.scale: asks the chief of a running distributed run to go on with another number of
// shards or workers (actors/ps/scale.hpp, as `actorps scale`), from a Python program that
// drives its cluster (an orchestrator's hook, a notebook). Blocks without the GIL.
#include "actors/ps/scale.hpp"
#include "apps/python/binding.hpp"
#include "apps/python/errors.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <optional>
#include <string>

namespace actorps::python {

namespace {

std::chrono::milliseconds seconds_of(const char* name, double s) {
  if (!(s > 0)) throw py::value_error(std::string(name) + ": must be > 0 seconds");
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

int32_t count_of(const char* name, std::optional<int> n) {
  if (n && *n < 1) throw py::value_error(std::string(name) + ": must be 1 or more");
  return n.value_or(0);  // 0: as many as now
}

} // namespace

void bind_scale(py::module_& m) {
  m.def(
    "scale",
    [](const std::string& chief, std::optional<int> ps, std::optional<int> workers,
       const std::string& tls_cert, const std::string& tls_key, const std::string& tls_ca,
       double connect_timeout, double timeout) {
      scale_options o;
      o.chief = chief;
      o.ps = count_of("ps", ps);
      o.workers = count_of("workers", workers);
      if (!ps && !workers) throw py::value_error("scale: ps, workers or both are required");
      o.tls_cert = tls_cert;
      o.tls_key = tls_key;
      o.tls_ca = tls_ca;
      o.connect_timeout = seconds_of("connect_timeout", connect_timeout);
      o.wait = seconds_of("timeout", timeout);
      scale_outcome out;
      {
        py::gil_scoped_release release;
        out = scale_job(o);
      }
      switch (out.status) {
        case scale_status::done: return out.message;
        case scale_status::refused: raise_error("refused", out.message);
        case scale_status::unreachable: raise_error("unreachable", out.message);
      }
      raise_error("unreachable", out.message);
    },
    py::arg("chief"), py::kw_only(), py::arg("ps") = py::none(), py::arg("workers") = py::none(),
    py::arg("tls_cert") = "", py::arg("tls_key") = "", py::arg("tls_ca") = "",
    py::arg("connect_timeout") = 60.0, py::arg("timeout") = 600.0,
    "Asks the chief at `chief` ('HOST:PORT', its cluster spec's address) to go on with `ps` "
    "shards and `workers` workers (None: as many as now), as `actorps scale` does: the change "
    "happens at a clock boundary, nothing trained lost or trained twice, a growth taking in "
    "spare ps or worker tasks that joined and wait, a shrink ending the tasks beyond the new "
    "size (they exit 0). Returns what the run goes on with once the change is done; raises "
    "actorps.Error with code 'refused' (the reason: no spare task, a change under way, a "
    "certificate that may not ask, ...; nothing changed) or 'unreachable' (no chief there, or "
    "no answer within `timeout` seconds), ValueError for a bad argument. With TLS: the three "
    "PEM files of an admin:0 (or chief:0) certificate of the cluster's CA. The process holds "
    "a connection to the chief afterwards: end it with actorps.exit_task, as a TaskCluster's.");
}

} // namespace actorps::python
