// Runtime errors as Python exceptions: actorps.Error (a RuntimeError) carrying the runtime's
// text and its code's name in `.code` ("stale_clock", "request_timeout", ...).
#pragma once

#include <caf/error.hpp>

#include <string>

namespace actorps::python {

/// The name of an error's code: actorps' own (errors.hpp) or CAF's (caf::sec).
std::string code_name(const caf::error& err);

/// Raises actorps.Error for `err` (a pending Python exception, thrown as error_already_set).
[[noreturn]] void raise_error(const caf::error& err);

/// Raises actorps.Error with `text` and the code name `code`.
[[noreturn]] void raise_error(const std::string& code, const std::string& text);

} // namespace actorps::python
