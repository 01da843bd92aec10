// The shard's clock table alone: min over live workers, leaving, rejoining, the staleness rule.
#include "actors/roles/clock_table.hpp"

#include <doctest/doctest.h>

using namespace actorps;

TEST_CASE("clock table: min is the smallest finished clock over live workers only") {
  clock_table t(3, 0, 0);
  CHECK(t.min() == 0);
  CHECK(t.finish(0, 0) == 0);
  CHECK(t.finish(1, 0) == 0);
  CHECK(t.min() == 0);  // worker 2 is still at 0
  CHECK(t.finished(0) == 1);
  CHECK(t.live_count() == 3);
  t.leave(2);
  CHECK(t.min() == 1);
  CHECK(t.finish(1, 1) == 1);  // worker 1 at 2, worker 0 at 1, worker 2 gone at 0
  CHECK(t.min() == 1);
  CHECK_FALSE(t.live(2));
  CHECK_FALSE(t.live(3));   // unknown workers are never live
  CHECK_FALSE(t.live(-1));
}

TEST_CASE("clock table: a leave raises min and reports the progress before it") {
  clock_table t(2, 5, 0);
  t.finish(0, 5);
  t.finish(0, 6);
  CHECK(t.min() == 5);
  CHECK(t.leave(1) == 5);  // the laggard goes
  CHECK(t.min() == 7);
  CHECK(t.progress() == 7);
}

TEST_CASE("clock table: a rejoined worker holds min at the progress clock until admitted") {
  clock_table t(2, 0, 0, {0, 3});
  CHECK(t.incarnation(1) == 3);
  t.finish(0, 0);
  t.finish(1, 0);
  t.leave(1);
  t.finish(0, 1);
  CHECK(t.min() == 2);
  CHECK(t.rejoin(1) == 2);   // live at the progress clock
  CHECK(t.live(1));
  CHECK(t.finished(1) == 2);
  t.finish(0, 2);
  CHECK(t.min() == 2);       // held by the replacement
  CHECK_FALSE(t.allowed(3));  // worker 0's pull for clock 3
  CHECK(t.admit(1, 4, 7) == 2);
  CHECK(t.min() == 3);       // now worker 0 is the laggard
  CHECK(t.incarnation(1) == 7);
  CHECK(t.finished(1) == 4);
  CHECK(t.pushed(1) == 1);   // rejoin and admit moved where it counts as finished, not this
  t.finish(1, 4);
  CHECK(t.pushed(1) == 5);
}

TEST_CASE("clock table: a replacement whose predecessor's push waits for its clock's mean is live after it") {
  clock_table t(3, 0, 0);
  t.finish(0, 0);  // worker 0 pushed clock 0, then left; 1 pushed it, 2 not yet
  t.finish(1, 0);
  t.leave(0);
  CHECK(t.min() == 0);
  CHECK(t.rejoin(0, true) == 1);  // after the push kept for clock 0's mean
  CHECK(t.finished(0) == 1);
  CHECK(t.min() == 0);            // worker 2 still owes clock 0
  t.leave(0);
  CHECK(t.rejoin(0, false) == 0);  // no push kept: at min
  CHECK(t.pushed(0) == 1);
}

TEST_CASE("clock table: sync (bound 0) allows a pull only up to min") {
  clock_table t(2, 0, 0);
  t.finish(0, 0);
  CHECK(t.allowed(0));
  CHECK_FALSE(t.allowed(1));  // worker 1 has not finished clock 0
  t.finish(1, 0);
  CHECK(t.allowed(1));
  CHECK_FALSE(t.allowed(2));
}

TEST_CASE("clock table: ssp with bound s allows pulls up to min + s") {
  clock_table t(2, 10, 2);
  CHECK(t.allowed(12));
  CHECK_FALSE(t.allowed(13));
  t.finish(0, 10);
  t.finish(1, 10);
  CHECK(t.allowed(13));
  CHECK_FALSE(t.allowed(14));
}

TEST_CASE("clock table: async (bound -1) never holds a pull") {
  clock_table t(2, 0, -1);
  for (int64_t c = 0; c < 5; ++c) t.finish(0, c);
  CHECK(t.min() == 0);
  CHECK(t.allowed(5));
  CHECK(t.allowed(1000000));
}

TEST_CASE("clock table: with no live worker progress is the furthest any worker got") {
  clock_table t(3, 0, 0);
  t.finish(0, 0);
  t.finish(1, 0);
  t.finish(1, 1);
  t.leave(2);
  CHECK(t.leave(0) == 1);
  CHECK(t.progress() == 2);
  CHECK(t.leave(1) == 2);
  CHECK(t.min() == clock_table::no_live_workers);
  CHECK(t.progress() == 2);  // worker 1 got furthest
  CHECK(t.allowed(100));     // nobody left to wait for
  CHECK(t.rejoin(0) == 2);   // a replacement enters where the run is
  CHECK(t.min() == 2);
  CHECK(clock_table().progress() == 0);  // an empty table
}
