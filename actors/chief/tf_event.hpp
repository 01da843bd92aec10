// The protocol-buffer bytes of TensorBoard's Event messages, the few fields a scalar plot
// needs, written by hand (tensorflow/core/util/event.proto, framework/summary.proto):
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// One point of one plot.
struct tf_scalar {
  std::string tag;  ///< the plot's name, e.g. "test/accuracy" (the part before '/' groups plots)
  float value = 0;
};

/// The event that opens every file: its wall time and file_version "brain.Event:2".
std::string encode_file_version_event(double wall_time);

/// An event holding `values` at `step`, written at `wall_time` (seconds since the epoch).
std::string encode_scalars_event(double wall_time, int64_t step,
                                 const std::vector<tf_scalar>& values);

} // namespace actorps
