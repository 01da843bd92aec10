// The parts of the Python module `actorps._core`, each adding its classes to the module.
#pragma once

#include <pybind11/pybind11.h>

namespace actorps::python {

namespace py = pybind11;

void bind_errors(py::module_& m);        // actorps.Error, bytes_copied()
void bind_model_spec(py::module_& m);    // actorps.ModelSpec, actorps.SparseTable
void bind_worker_client(py::module_& m); // actorps.WorkerClient
void bind_clusters(py::module_& m);      // actorps.LocalCluster, actorps.TaskCluster
void bind_train(py::module_& m);         // actorps.train (a Python model plug-in)
void bind_feature_key(py::module_& m);   // actorps.feature_key
void bind_export(py::module_& m);        // actorps.read_export
void bind_scale(py::module_& m);         // actorps.scale

} // namespace actorps::python
