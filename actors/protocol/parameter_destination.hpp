// Where a worker wants the replies to its pulls and push_pulls to land when they come over a
// data link: its flat parameters. The worker sets it once it has them; the proxy's reader
// thread (remote_shard.cpp) then receives each such reply straight into place
// (receive_in_place.hpp) instead of into a buffer that the worker would scatter. Unset (a
// worker in the shard's process, the evaluator), replies arrive as before.
//
// The library loop (worker_client, actors/ps.hpp) has no buffer of its own: each call brings
// its output. Its client actor queues each call's buffer (expect) just before it sends the
// request, and the proxy takes it (take) as it sends that request: CAF delivers one sender's
// messages to one receiver in order, so the n-th buffer queued by a requester goes with its
// n-th pull or push_pull. The caller's buffer is borrowed: the caller may free it once its call
// ended, even with an error while the reply is still on its way, so it is closed first
// (borrowed_output::close) and a reply for a closed buffer lands elsewhere.
#pragma once

#include "actors/protocol/model_spec.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace actorps {

/// A caller's flat parameter buffer (layout.total_floats() floats) that a reply may be received
/// into while it is open. The reader writes while holding it (write); close, from the caller's
/// thread, waits for a write in progress and then keeps every later one out.
class borrowed_output {
public:
  explicit borrowed_output(float* flat) : flat_(flat) {}

  /// Runs f(flat) while the buffer is open and returns true; false (f not run) once closed.
  template <class F>
  bool write(F&& f) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!flat_) return false;
    f(flat_);
    return true;
  }

  void close() {
    std::lock_guard<std::mutex> guard{mutex_};
    flat_ = nullptr;
  }

private:
  std::mutex mutex_;
  float* flat_;
};

class parameter_destination {
public:
  /// Where one reply lands: the worker's own parameters (params), or a caller's borrowed
  /// buffer (output); neither: received into a buffer of its own, as without a destination.
  struct target {
    std::shared_ptr<const block_layout> layout;
    std::shared_ptr<std::vector<float>> params;  ///< layout.total_floats() floats
    std::shared_ptr<borrowed_output> output;
    explicit operator bool() const { return layout && (params || output); }
  };

  /// Set by the worker (its own thread) before it sends a request over the link. The reader
  /// keeps both alive while it writes, so a worker that stops mid-reply frees nothing in use.
  void set(std::shared_ptr<const block_layout> layout, std::shared_ptr<std::vector<float>> params) {
    std::lock_guard<std::mutex> guard{mutex_};
    target_ = target{std::move(layout), std::move(params), nullptr};
  }

  target get() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return target_;
  }

  /// Queues where the reply to the next pull or push_pull that actor `requester` sends through
  /// the proxy lands (an empty target: not in place). One for each such request, in send order.
  void expect(uint64_t requester, target where) {
    std::lock_guard<std::mutex> guard{mutex_};
    queued_[requester].push_back(std::move(where));
  }

  /// The proxy, sending a pull or push_pull of `requester`: the target it queued first, else
  /// the one set.
  target take(uint64_t requester) {
    std::lock_guard<std::mutex> guard{mutex_};
    auto i = queued_.find(requester);
    if (i == queued_.end()) return target_;
    auto out = std::move(i->second.front());
    i->second.pop_front();
    if (i->second.empty()) queued_.erase(i);
    return out;
  }

  /// Drops what `requester` queued and never sent (it stopped).
  void forget(uint64_t requester) {
    std::lock_guard<std::mutex> guard{mutex_};
    queued_.erase(requester);
  }

private:
  mutable std::mutex mutex_;
  target target_;
  std::map<uint64_t, std::deque<target>> queued_;
};

} // namespace actorps
