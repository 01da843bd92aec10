// data_plan: the minibatches no worker has trained yet, shared out when the number of workers
// changes, are each handed to exactly one worker of the new number, in balanced contiguous
// shares; and the learning rate follows the minibatches, not the clocks, after such a change.
#include "actors/protocol/data_plan.hpp"
#include "actors/protocol/model_spec.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace actorps {
namespace {

/// Every minibatch a set of plans holds, counted: (parts, part, batch) -> times.
std::map<std::tuple<int, int, int64_t>, int> census(const std::vector<data_plan>& plans) {
  std::map<std::tuple<int, int, int64_t>, int> out;
  for (const auto& p : plans)
    for (int64_t i = 0; i < plan_batches(p); ++i) {
      const auto at = locate(p, i);
      const auto& s = p[at.segment];
      ++out[{s.parts, s.part, at.batch}];
    }
  return out;
}

TEST_CASE("a plan locates its minibatches in order and starts anywhere") {
  const data_plan p = {{2, 1, 40, 3}, {2, 0, 7, 2}};
  CHECK(plan_batches(p) == 5);
  CHECK(locate(p, 0).segment == 0);
  CHECK(locate(p, 2).batch == 42);
  CHECK(locate(p, 3).segment == 1);
  CHECK(locate(p, 3).batch == 7);
  CHECK(locate(p, 4).batch == 8);
  CHECK_THROWS_AS(locate(p, 5), std::out_of_range);
  CHECK_THROWS_AS(locate(p, -1), std::out_of_range);
  CHECK(plan_from(p, 0) == p);
  CHECK(plan_from(p, 2) == data_plan{{2, 1, 42, 1}, {2, 0, 7, 2}});
  CHECK(plan_from(p, 3) == data_plan{{2, 0, 7, 2}});
  CHECK(plan_from(p, 9).empty());
}

TEST_CASE("sharing out hands every untrained minibatch to one worker, shares within one") {
  // Two workers of 100 minibatches each at clock 30 (worker 1 replaced, 5 behind): 4 workers.
  const std::vector<data_plan> rest = {plan_from(own_part(0, 2, 100), 30),
                                       plan_from(own_part(1, 2, 100), 25)};
  const auto four = share_out(rest, 4);
  REQUIRE(four.size() == 4);
  CHECK(census(four) == census(rest));
  for (const auto& p : four) CHECK(census({p}).size() == static_cast<std::size_t>(plan_batches(p)));
  // 145 minibatches: 37, 36, 36, 36, the larger first, contiguous
  CHECK(plan_batches(four[0]) == 37);
  CHECK(plan_batches(four[3]) == 36);
  CHECK(four[0] == data_plan{{2, 0, 30, 37}});
  CHECK(four[1] == data_plan{{2, 0, 67, 33}, {2, 1, 25, 3}});
  // and again, from those plans part-way, down to 3: still every minibatch once
  std::vector<data_plan> later;
  for (const auto& p : four) later.push_back(plan_from(p, 10));
  const auto three = share_out(later, 3);
  CHECK(census(three) == census(later));
  CHECK(plan_batches(three[0]) - plan_batches(three[2]) <= 1);
  // adjoining stretches of one part join again: one worker takes everything back
  const auto one = share_out(four, 1);
  CHECK(one[0] == data_plan{{2, 0, 30, 70}, {2, 1, 25, 75}});
}

TEST_CASE("more workers than minibatches: the rest get empty plans") {
  const auto shares = share_out({{{1, 0, 5, 2}}}, 3);
  CHECK(shares == std::vector<data_plan>{{{1, 0, 5, 1}}, {{1, 0, 6, 1}}, {}});
  CHECK_THROWS_AS(share_out({}, 0), std::invalid_argument);
}

} // namespace
} // namespace actorps

namespace actorps {
namespace {

TEST_CASE("after a change of workers the schedule counts minibatches, the rate per one stays") {
  train_spec spec;
  spec.workers = 2;
  CHECK(schedule_clock(spec, 17) == 17);  // never changed: the clock
  CHECK(rate_divisor(spec, 2) == 2.0f);
  CHECK(rate_divisor(spec, 1) == 1.0f);   // a worker lost: the other's pushes count double
  // 2 workers to 4 at clock 10 (20 minibatches trained): each clock now trains 4
  spec.workers = 4;
  spec.lr_workers = 2;
  spec.schedule_from = 10;
  spec.schedule_batches = 20;
  CHECK(schedule_clock(spec, 10) == 10);
  CHECK(schedule_clock(spec, 14) == 18);  // (20 + 4 x 4) / 2
  CHECK(rate_divisor(spec, 4) == 2.0f);   // per push: the rate over 2, as before
  CHECK(rate_divisor(spec, 3) == 1.5f);   // one of the 4 lost
}

} // namespace
} // namespace actorps
