// actorps.read_export: a program's exported model (actors/ps/serving.hpp's program_export) as
// NumPy arrays, for the program that trained it to load (actorps.torch.load_export).
#include "apps/python/binding.hpp"

#include "actors/ps/serving.hpp"

#include <pybind11/numpy.h>

#include <string>

namespace actorps::python {

void bind_export(py::module_& m) {
  m.def(
    "read_export",
    [](const std::string& path) {
      program_export model;
      {
        py::gil_scoped_release release;
        model = read_program_export(path);
      }
      py::dict tensors, tables;
      for (auto& t : model.tensors) {
        std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
        py::array_t<float> values(shape);
        std::copy(t.values.begin(), t.values.end(), values.mutable_data());
        tensors[py::str(t.name)] = values;
      }
      for (auto& t : model.tables) {
        py::array_t<uint64_t> keys(py::ssize_t(t.keys.size()));
        std::copy(t.keys.begin(), t.keys.end(), keys.mutable_data());
        py::array_t<float> values({py::ssize_t(t.keys.size()), py::ssize_t(t.dim)});
        std::copy(t.values.begin(), t.values.end(), values.mutable_data());
        tables[py::str(t.name)] = py::make_tuple(keys, values);
      }
      py::dict out;
      out["name"] = model.name;
      out["tensors"] = tensors;
      out["tables"] = tables;
      return out;
    },
    py::arg("path"),
    "The model a program of its own exported (actorps.torch.train with export_dir; format 3): "
    "{'name', 'tensors': {name: float32 array of its shape}, 'tables': {name: (keys uint64 "
    "ascending, values float32 rows x dim)}}. path: a version DIR/<v>, or the export directory "
    "(its newest version). model.capnp is checked against metadata.json's SHA-256; raises "
    "RuntimeError naming what is missing or wrong.");
}

} // namespace actorps::python
