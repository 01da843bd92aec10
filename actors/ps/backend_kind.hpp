// Where a worker computes: the CPU, CUDA, or CUDA when a usable device exists (the command's
// --backend). Building a backend of a kind is the kernels' (kernels/backend_factory.hpp).
#pragma once

#include <optional>
#include <string>

namespace actorps {

/// Which backend to run on; `automatic` takes CUDA when a usable device exists, else the CPU.
enum class backend_kind { cpu, cuda, automatic };

/// "cpu", "cuda" or "auto" → the kind; anything else → nullopt.
std::optional<backend_kind> parse_backend_kind(const std::string& text);

/// The spelling parse_backend_kind accepts: "cpu", "cuda" or "auto".
const char* to_string(backend_kind kind);

} // namespace actorps
