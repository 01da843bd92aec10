// Python's string arguments for the runtime's enums ("sync", "sgd", "uniform", ...): the
// runtime's own parser, or ValueError naming the argument and the choices.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

namespace actorps::python {

template <class Parse>
auto parse_choice(const std::string& arg, const std::string& value, Parse parse,
                  const char* choices) {
  auto parsed = parse(value);
  if (!parsed)
    throw pybind11::value_error(arg + ": '" + value + "' is not one of " + choices);
  return *parsed;
}

} // namespace actorps::python
