// Where a worker wants the replies to its pulls and push_pulls to land when they come over a
// data link: its flat parameters. The worker sets it once it has them; the proxy's reader
// thread (remote_shard.cpp) then receives each such reply straight into place
// (receive_in_place.hpp) instead of into a buffer that the worker would scatter. Unset (a
// worker in the shard's process, the evaluator), replies arrive as before.
#pragma once

#include "actors/protocol/model_spec.hpp"

#include <memory>
#include <mutex>
#include <vector>

namespace actorps {

class parameter_destination {
public:
  struct target {
    std::shared_ptr<const block_layout> layout;
    std::shared_ptr<std::vector<float>> params;  ///< layout.total_floats() floats
    explicit operator bool() const { return layout && params; }
  };

  /// Set by the worker (its own thread) before it sends a request over the link. The reader
  /// keeps both alive while it writes, so a worker that stops mid-reply frees nothing in use.
  void set(std::shared_ptr<const block_layout> layout, std::shared_ptr<std::vector<float>> params) {
    std::lock_guard<std::mutex> guard{mutex_};
    target_ = target{std::move(layout), std::move(params)};
  }

  target get() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return target_;
  }

private:
  mutable std::mutex mutex_;
  target target_;
};

} // namespace actorps
