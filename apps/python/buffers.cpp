#include "apps/python/buffers.hpp"

#include <atomic>
#include <cstring>

namespace actorps::python {

namespace {

// Every copy the binding would make between a Python array and the runtime adds its bytes
// here. There is none today (views only); the counter is what a test holds at 0.
std::atomic<uint64_t> copied{0};

const char* element_name(element kind) { return kind == element::float32 ? "float32" : "uint64 or int64"; }

[[noreturn]] void bad(const std::string& arg, const std::string& why) {
  throw py::value_error(arg + ": " + why);
}

void check_count(const std::string& arg, std::size_t have, std::size_t want,
                 const std::string& what) {
  if (want != 0 && have != want)
    bad(arg, "expected " + std::to_string(want) + " values (" + what + "), got " +
                 std::to_string(have));
}

// A PyTorch tensor, seen through its own methods (no link to libtorch): dtype, device,
// contiguity and data_ptr.
held_buffer tensor_view(py::handle t, const std::string& arg, element kind, std::size_t count,
                        const std::string& what) {
  auto dtype = py::str(t.attr("dtype")).cast<std::string>();
  bool fits = kind == element::float32 ? dtype == "torch.float32"
                                       : dtype == "torch.int64" || dtype == "torch.uint64";
  if (!fits) bad(arg, "dtype " + dtype + ", expected " + element_name(kind));
  auto device = py::str(t.attr("device").attr("type")).cast<std::string>();
  if (device != "cpu") bad(arg, "a tensor on " + device + ", expected a CPU tensor");
  if (!t.attr("is_contiguous")().cast<bool>())
    bad(arg, "not contiguous: pass tensor.contiguous()");
  held_buffer b;
  b.count = t.attr("numel")().cast<std::size_t>();
  check_count(arg, b.count, count, what);
  b.data = reinterpret_cast<void*>(t.attr("data_ptr")().cast<uintptr_t>());
  b.owner = py::reinterpret_borrow<py::object>(t);
  return b;
}

bool format_fits(element kind, const Py_buffer& v) {
  // NumPy writes "f", "<f" or "=f"; 64-bit integers are "l"/"L" (long) or "q"/"Q".
  std::string f = v.format ? v.format : "B";
  if (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@')) f.erase(0, 1);
  if (kind == element::float32) return f == "f" && v.itemsize == 4;
  return (f == "l" || f == "L" || f == "q" || f == "Q") && v.itemsize == 8;
}

} // namespace

held_buffer view_of(py::handle obj, const std::string& arg, element kind, std::size_t count,
                    const std::string& what, bool writable) {
  if (obj.is_none()) bad(arg, std::string("None, expected an array of ") + element_name(kind));
  if (!PyObject_CheckBuffer(obj.ptr())) {
    if (py::hasattr(obj, "data_ptr") && py::hasattr(obj, "is_contiguous"))
      return tensor_view(obj, arg, kind, count, what);
    bad(arg, std::string(Py_TYPE(obj.ptr())->tp_name) + ", expected a NumPy array or a "
             "PyTorch CPU tensor of " + element_name(kind));
  }
  auto view = std::make_unique<Py_buffer>();
  int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), view.get(), flags) != 0) {
    PyErr_Clear();
    bad(arg, writable ? "not a writable buffer (the runtime writes into it)"
                      : "its buffer could not be read");
  }
  py::buffer_info info(view.release());  // owns the export from here on
  Py_buffer* v = info.view();
  std::string format = v->format ? v->format : "B";
  if (!format_fits(kind, *v))
    bad(arg, "format '" + format + "' (" + std::to_string(v->itemsize) +
                 "-byte items), expected " + element_name(kind));
  if (!PyBuffer_IsContiguous(v, 'C'))
    bad(arg, "not C-contiguous: pass numpy.ascontiguousarray(...)");
  held_buffer b;
  b.count = static_cast<std::size_t>(v->len / v->itemsize);
  check_count(arg, b.count, count, what);
  b.data = v->buf;
  b.owner = py::reinterpret_borrow<py::object>(obj);
  b.view = std::make_unique<py::buffer_info>(std::move(info));
  return b;
}

uint64_t bytes_copied() { return copied.load(); }

} // namespace actorps::python
