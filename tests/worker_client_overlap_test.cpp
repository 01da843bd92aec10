// A loop of the user's own that overlaps its step with the push in flight (worker_client::
// may_compute_ahead): clock c + 1 computed on the parameters pulled for c, within the bound. The
// observer is the parameter itself: every push adds exactly 1 to it, so the value a step reads
// counts the pushes it includes, and ssp promises every worker's pushes of clocks < c − s.
#include "actors/ps.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace actorps {

namespace {

model_spec one_float() { return {"one", {{"w", {1}, tensor_init::zeros, 0}}, {}}; }

/// What one worker's overlapped loop saw.
struct overlap_seen {
  int64_t ahead = 0;          // clocks computed while the push before was in flight
  int64_t worst = 0;          // the largest staleness a step computed with
  int64_t short_of_bound = 0; // steps whose value lacked a push ssp promised
  bool failed = false;
};

/// Worker w runs `clocks` clocks, computing ahead whenever may_compute_ahead allows (every step
/// of a straggler takes `step` longer). Two parameter buffers: one read by the step, the other
/// written by the push_pull in flight.
overlap_seen overlapped_loop(local_cluster& ps, int w, int workers, int64_t clocks,
                             std::chrono::milliseconds step) {
  overlap_seen seen;
  auto client = ps.worker(w);
  const int bound = client.staleness_bound();
  float params[2] = {0, 0};
  float grads[2] = {-1, -1};  // held unchanged by the push in flight
  int cur = 0;
  auto first = client.wait(client.pull(0, &params[cur]));
  if (!first) return seen.failed = true, seen;
  int64_t staleness = *first, held = 0;  // params[cur] are pulled for `held`
  worker_client::ticket pending = -1;
  auto take = [&](int64_t clock) {  // the push in flight has answered: its parameters are held
    auto s = client.wait(pending);
    pending = -1;
    if (!s) return false;
    staleness = *s;
    held = clock;
    cur ^= 1;
    return true;
  };
  for (int64_t c = 0; c < clocks; ++c) {
    if (pending >= 0 && !client.may_compute_ahead(staleness) && !take(c))
      return seen.failed = true, seen;
    // The step: reads the parameters held.
    seen.ahead += held < c ? 1 : 0;
    seen.worst = std::max(seen.worst, staleness + (c - held));
    const auto promised = int64_t(workers) * std::max<int64_t>(0, c - bound);
    if (int64_t(params[cur]) < promised) ++seen.short_of_bound;
    std::this_thread::sleep_for(step);  // (a straggler's slower step, not a wait)
    if (pending >= 0 && !take(c)) return seen.failed = true, seen;
    pending = client.push_pull(c, &grads[c % 2], &params[cur ^ 1]);
  }
  // No finish: the shards would then share the rate among fewer workers (+2 a push).
  if (!take(clocks)) seen.failed = true;
  return seen;
}

cluster_options counting(consistency mode, int staleness, int workers) {
  cluster_options opts;
  opts.ps = 1;
  opts.workers = workers;
  opts.mode = mode;
  opts.staleness = staleness;
  // ssp applies lr / workers: +1 per push
  opts.optimizer = optimizer_config{optimizer_kind::sgd, float(workers)};
  opts.timeout = std::chrono::seconds(30);
  return opts;
}

} // namespace

TEST_CASE("worker_client: the staleness bound and when a loop may compute ahead") {
  for (auto [mode, s, bound] : {std::tuple{consistency::sync, 0, 0},
                                std::tuple{consistency::ssp, 0, 0},
                                std::tuple{consistency::ssp, 1, 1},
                                std::tuple{consistency::ssp, 3, 3},
                                std::tuple{consistency::async, 0, -1}}) {
    CAPTURE(to_string(mode));
    CAPTURE(s);
    local_cluster ps(one_float(), counting(mode, s, 1));
    auto client = ps.worker(0);
    CHECK(client.staleness_bound() == bound);
    CHECK(client.may_compute_ahead(0) == (bound != 0));
    CHECK(client.may_compute_ahead(1) == (bound < 0 || bound >= 2));
    CHECK(client.may_compute_ahead(bound < 0 ? 100 : bound) == (bound < 0));
  }
}

TEST_CASE("worker_client: an overlapped loop computes ahead, never past the ssp bound") {
  constexpr int workers = 2;
  constexpr int64_t clocks = 40;
  for (int s : {1, 2}) {
    CAPTURE(s);
    local_cluster ps(one_float(), counting(consistency::ssp, s, workers));
    overlap_seen fast, slow;
    std::thread straggler([&] {
      slow = overlapped_loop(ps, 1, workers, clocks, std::chrono::milliseconds(3));
    });
    fast = overlapped_loop(ps, 0, workers, clocks, std::chrono::milliseconds(0));
    straggler.join();
    REQUIRE_FALSE(fast.failed);
    REQUIRE_FALSE(slow.failed);
    MESSAGE("s " << s << ": computed ahead " << fast.ahead << " and " << slow.ahead
                 << " clocks; worst staleness " << fast.worst << " and " << slow.worst);
    // Every step's value held every push ssp promised it (the parameter counts them).
    CHECK(fast.short_of_bound == 0);
    CHECK(slow.short_of_bound == 0);
    CHECK(fast.worst <= s);
    CHECK(slow.worst <= s);
    CHECK(fast.worst == s);  // the straggler makes the bound bind
    CHECK(slow.ahead >= clocks / 2);  // never held back: it overlaps
    auto last = ps.snapshot();
    REQUIRE(last);
    CHECK((*last)[0] == float(workers * clocks));  // every push applied once
  }
}

} // namespace actorps
