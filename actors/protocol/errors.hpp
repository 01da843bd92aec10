// The category actorps' error codes carry as caf::error values (atom "actorps"), registered on
// every actor system (messages.cpp); the codes and make_error are public (actors/ps/errors.hpp).
#pragma once

#include "actors/ps/errors.hpp"

#include <caf/atom.hpp>
#include <caf/make_message.hpp>

namespace actorps {

inline constexpr caf::atom_value error_category = caf::atom("actorps");

} // namespace actorps
