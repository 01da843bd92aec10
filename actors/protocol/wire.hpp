// The wire's whole vocabulary, one header per message family: the buffer that travels
// (wire_buffer.hpp), the worker–shard exchange (push_codec.hpp), a shard's start
// (shard_init_codec.hpp) and checkpoints (checkpoint_codec.hpp). New code includes the family it
// speaks. A process's role (RoleSetup) is the chief's to tell: chief/role_setup_codec.hpp.
#pragma once

#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/protocol/push_codec.hpp"
#include "actors/protocol/shard_init_codec.hpp"
#include "actors/protocol/wire_buffer.hpp"
