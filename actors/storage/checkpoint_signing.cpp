#include "actors/storage/checkpoint_signing.hpp"
#include "actors/protocol/input_file.hpp"
#include "actors/storage/checkpoint_store.hpp"

namespace actorps {

std::string read_checkpoint_key(const std::string& path) {
  std::string key;
  if (auto why = read_input_file(path, max_checkpoint_key_bytes, key); !why.empty())
    throw checkpoint_error(why);
  if (key.size() < min_checkpoint_key_bytes)
    throw checkpoint_error(path + ": " + std::to_string(key.size()) + " bytes, a key needs at "
                           "least " + std::to_string(min_checkpoint_key_bytes)
                           + " (e.g. openssl rand -hex 32 > " + path + ")");
  return key;
}

} // namespace actorps
