// Python arrays as the front door's buffers, in place: a NumPy array (anything with the buffer
// protocol) or a PyTorch CPU tensor (its data_ptr), checked for dtype, contiguity and length.
// Nothing is copied; a view keeps its object — and a NumPy buffer export, which stops the
// array from being resized — alive until the runtime is done with the memory.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace actorps::python {

namespace py = pybind11;

/// What a buffer must hold: float32 values, or 64-bit keys (uint64, or int64 read as the same
/// bits: PyTorch has no uint64 tensors).
enum class element { float32, key64 };

struct held_buffer {
  void* data = nullptr;
  std::size_t count = 0;                  ///< elements
  py::object owner;                       ///< the array or tensor
  std::unique_ptr<py::buffer_info> view;  ///< the buffer export (NumPy); released with the GIL

  float* floats() const { return static_cast<float*>(data); }
  const uint64_t* keys() const { return static_cast<const uint64_t*>(data); }
};

/// `obj` as `count` elements of `kind` (any count when `count` is 0), writable when the
/// runtime writes into it. Raises ValueError naming `arg` and what was expected when the
/// dtype, layout, device or length does not fit; `what` says what the size is
/// ("the model's total_floats").
held_buffer view_of(py::handle obj, const std::string& arg, element kind, std::size_t count,
                    const std::string& what, bool writable);

/// Bytes the binding has copied between Python's arrays and the runtime (none: buffers are
/// used in place; a test holds it at 0).
uint64_t bytes_copied();

} // namespace actorps::python
