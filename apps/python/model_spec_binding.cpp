// actorps.ModelSpec and actorps.SparseTable: the model's dense tensors (name, shape, how they
// start) and sparse tables, as model_spec.hpp has them.
#include "actors/ps.hpp"
#include "apps/python/binding.hpp"
#include "apps/python/choices.hpp"

#include <pybind11/stl.h>

#include <optional>

namespace actorps::python {

namespace {

tensor_spec tensor_from(py::handle item, std::size_t i) {
  auto arg = "tensors[" + std::to_string(i) + "]";
  py::tuple t(py::reinterpret_borrow<py::object>(item));  // a list or tuple
  if (t.size() != 2 && t.size() != 4)
    throw py::value_error(arg + ": expected (name, shape) or (name, shape, init, scale)");
  tensor_spec spec;
  spec.name = t[0].cast<std::string>();
  spec.shape = t[1].cast<std::vector<uint32_t>>();
  if (t.size() == 4) {
    spec.init = parse_choice(
      arg + " init", t[2].cast<std::string>(),
      [](const std::string& s) -> std::optional<tensor_init> {
        if (s == "zeros") return tensor_init::zeros;
        if (s == "uniform") return tensor_init::uniform;
        return std::nullopt;
      },
      "zeros, uniform");
    spec.scale = t[3].cast<double>();
  }
  return spec;
}

model_spec make_model(const std::vector<py::object>& tensors,
                      const std::vector<sparse_table_spec>& tables, const std::string& name) {
  model_spec model;
  model.name = name;
  for (std::size_t i = 0; i < tensors.size(); ++i) model.tensors.push_back(tensor_from(tensors[i], i));
  model.sparse_tables = tables;
  if (auto why = invalid_model(model); !why.empty()) throw py::value_error("ModelSpec: " + why);
  return model;
}

sparse_table_spec make_table(const std::string& name, uint32_t dim, const std::string& init,
                             float scale, const std::string& optimizer, std::optional<float> lr,
                             uint32_t admit_after, std::optional<float> initial_accumulator,
                             uint32_t evict_after, uint64_t max_rows_per_shard,
                             uint64_t admission_memory) {
  sparse_table_spec t;
  t.name = name;
  t.config.dim = dim;
  t.config.init = parse_choice("init", init, parse_row_init, "zeros, uniform, normal");
  t.config.scale = scale;
  t.config.optimizer.kind =
    parse_choice("optimizer", optimizer, parse_row_optimizer_kind, row_optimizer_names());
  t.config.optimizer.learning_rate = lr ? learning_rate_of(lr)
                                        : default_row_learning_rate(t.config.optimizer.kind);
  if (initial_accumulator) t.config.optimizer.initial_accumulator = *initial_accumulator;
  t.config.admit_after = admit_after;
  t.config.evict_after = evict_after;
  t.config.max_rows = max_rows_per_shard;
  t.config.admission_memory = admission_memory;
  if (auto why = invalid_table_config(t.config); !why.empty())
    throw py::value_error("SparseTable " + name + ": " + why);
  return t;
}

} // namespace

void bind_model_spec(py::module_& m) {
  py::class_<sparse_table_spec>(m, "SparseTable",
                                "A table of uint64 keys, each a row of `dim` floats created on "
                                "its first push, with its own optimizer (initial_accumulator: "
                                "Adagrad's, None: its default; evict_after: a row not pushed for "
                                "that many global clocks goes, 0: never; max_rows_per_shard: "
                                "about that many rows per shard at most, the least recently "
                                "pushed evicted, 0: no bound; admission_memory: bytes per shard "
                                "of a count-min sketch counting keys awaiting admission, 0: "
                                "exact counters).")
    .def(py::init(&make_table), py::arg("name"), py::arg("dim"), py::arg("init") = "zeros",
         py::arg("scale") = 0.0f, py::arg("optimizer") = "adagrad", py::arg("lr") = py::none(),
         py::arg("admit_after") = 0, py::arg("initial_accumulator") = py::none(),
         py::arg("evict_after") = 0, py::arg("max_rows_per_shard") = 0,
         py::arg("admission_memory") = 0)
    .def_property_readonly("name", [](const sparse_table_spec& t) { return t.name; })
    .def_property_readonly("dim", [](const sparse_table_spec& t) { return t.config.dim; });

  py::class_<model_spec>(m, "ModelSpec",
                         "The model's dense tensors, in order: (name, shape) or (name, shape, "
                         "'zeros'|'uniform', scale), and its sparse tables. Parameters and "
                         "gradients travel flat, tensor after tensor (row-major).")
    .def(py::init(&make_model), py::arg("tensors"),
         py::arg("sparse_tables") = std::vector<sparse_table_spec>{},
         py::arg("name") = "python")
    .def_property_readonly("total_floats", &model_spec::total_floats)
    .def_property_readonly("name", [](const model_spec& s) { return s.name; })
    .def_property_readonly("tensors",
                           [](const model_spec& s) {
                             py::list out;
                             for (const auto& t : s.tensors)
                               out.append(py::make_tuple(t.name, t.shape));
                             return out;
                           })
    .def_property_readonly("sparse_tables",
                           [](const model_spec& s) { return s.sparse_tables; })
    .def("__repr__", [](const model_spec& s) {
      return "ModelSpec(" + std::to_string(s.tensors.size()) + " tensors, " +
             std::to_string(s.sparse_tables.size()) + " sparse tables, " +
             std::to_string(s.total_floats()) + " floats)";
    });
}

} // namespace actorps::python
