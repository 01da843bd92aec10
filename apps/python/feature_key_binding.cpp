// actorps.feature_key: the key of a categorical value (actors/ps/feature_key.hpp), for a serving
// process or a data pipeline in Python that looks values up in an export's vocabulary.
#include "apps/python/binding.hpp"

#include "actors/ps/feature_key.hpp"

#include <pybind11/stl.h>

#include <string>
#include <variant>

namespace actorps::python {

namespace {

/// A field by number (0 is C1) or by name ("C1".."C26" of the Criteo layout).
int field_number(const std::variant<int, std::string>& field) {
  if (auto* n = std::get_if<int>(&field)) return *n;
  const auto& name = std::get<std::string>(field);
  std::size_t used = 0;
  int n = -1;
  if (name.size() > 1 && name[0] == 'C') try {
      n = std::stoi(name.substr(1), &used) - 1;
    } catch (const std::exception&) {
      used = 0;
    }
  if (used == 0 || used != name.size() - 1 || n < 0 || n > 25)
    throw py::value_error("field: '" + name + "' is not C1..C26 (or a number, 0 for C1)");
  return n;
}

} // namespace

void bind_feature_key(py::module_& m) {
  m.def(
    "feature_key",
    [](const std::variant<int, std::string>& field, const py::object& value) -> uint64_t {
      std::string bytes;
      if (py::isinstance<py::bytes>(value))
        bytes = value.cast<std::string>();
      else if (py::isinstance<py::str>(value))
        bytes = value.cast<std::string>();  // its UTF-8 bytes, as a data file holds them
      else
        throw py::type_error("value: a str or bytes, not " + std::string(py::str(value.get_type())));
      try {
        return feature_key(field_number(field), bytes);
      } catch (const std::invalid_argument& e) {
        throw py::value_error(e.what());
      }
    },
    py::arg("field"), py::arg("value"),
    "The 64-bit key of categorical `field` (0 or 'C1' for the first) holding `value` (str: its "
    "UTF-8 bytes; '' is a missing value): the key the Criteo reader trains on and an export's "
    "vocab/C<n>.tsv lists. metadata.json of an export spells the hash out.");
}

} // namespace actorps::python
