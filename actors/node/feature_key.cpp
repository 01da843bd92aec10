#include "actors/ps/feature_key.hpp"

#include "actors/ps/criteo_keys.hpp"

#include <stdexcept>
#include <string>

namespace actorps {

uint64_t feature_key(int field, std::string_view value) {
  if (field < 0 || field > 255)
    throw std::invalid_argument("field: " + std::to_string(field)
                                + " is not a field of a key (0..255; C1 is 0)");
  return criteo_key(field, value);
}

} // namespace actorps
