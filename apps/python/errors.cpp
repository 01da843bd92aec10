#include "apps/python/errors.hpp"

#include "actors/ps.hpp"  // errc, code_of, describe
#include "apps/python/binding.hpp"
#include "apps/python/buffers.hpp"

#include <caf/sec.hpp>

namespace actorps::python {

namespace {

// The exception type, created once by bind_errors; the module keeps it for the process' life.
PyObject* error_type = nullptr;

} // namespace

std::string code_name(const caf::error& err) {
  if (auto code = code_of(err)) return to_string(*code);
  if (err.category() == caf::atom("system")) return caf::to_string(static_cast<caf::sec>(err.code()));
  return caf::to_string(err.category()) + ":" + std::to_string(err.code());
}

void raise_error(const caf::error& err) {
  auto code = code_name(err);
  auto text = describe(err);
  if (text.compare(0, code.size(), code) != 0) text = code + ": " + text;
  raise_error(code, text);
}

void raise_error(const std::string& code, const std::string& text) {
  py::object exc = py::reinterpret_borrow<py::object>(error_type)(text);
  exc.attr("code") = code;
  PyErr_SetObject(error_type, exc.ptr());
  throw py::error_already_set();
}

void bind_errors(py::module_& m) {
  // A new reference kept for the process' life (no destructor after Python has finalised).
  error_type = PyErr_NewException("actorps.Error", PyExc_RuntimeError, nullptr);
  auto type = py::reinterpret_borrow<py::object>(error_type);
  m.add_object("Error", type);
  type.attr("__doc__") =
    "An error of the runtime: str(e) is its text, e.code the name of its code "
    "('stale_clock', 'request_timeout', 'shard_lost', ...).";
  type.attr("code") = py::none();
  m.def("bytes_copied", &bytes_copied,
        "Bytes the binding has copied between Python's arrays and the runtime's buffers. Dense "
        "and sparse calls use the arrays in place, so it stays 0.");
}

} // namespace actorps::python
