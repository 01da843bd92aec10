// actorps._core: the front door (actors/ps.hpp) for Python. actorps/__init__.py re-exports it.
#include "apps/python/binding.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "actorps: an actor-model parameter server (C++ core)";
  actorps::python::bind_errors(m);
  actorps::python::bind_model_spec(m);
  actorps::python::bind_worker_client(m);
  actorps::python::bind_clusters(m);
  actorps::python::bind_train(m);
  actorps::python::bind_feature_key(m);
  actorps::python::bind_export(m);
  actorps::python::bind_scale(m);
}
