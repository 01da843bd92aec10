// A worker's conversation with the shards, the one code that asks them for parameters: the
// runtime's worker (worker.cpp) and the client of a user who owns the loop (worker_client.cpp)
// are each this plus what they do with a round's result.
//
// A round asks every shard once (a pull, or a push with the next clock's pull) and ends when
// all have answered: each reply's dense blocks land in the round's parameters (already there
// when a data link received them in place), its rows in the round's batch tables (keys
// de-duplicated and split by owner shard: batch_tables.hpp). Rounds may overlap; a shard's
// replies to one asker come in the order asked.
//
// Every request in flight is kept until answered: with hot standbys (--replicas 1) a request to
// a shard found gone waits, and reroute sends it again to the promoted standby; the reply to the
// newest request to a shard is the one that counts. Requests carry no timeout of CAF's own (one
// clock-thread registration and two wake-ups each, every millisecond or two): a watchdog looks
// at every request in flight once a period and fails the round of one older than the timeout.
#pragma once

#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"
#include "actors/protocol/messages.hpp"
#include "actors/protocol/wire.hpp"
#include "actors/roles/batch_tables.hpp"

#include <caf/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

/// Where a round's replies land.
struct round_target {
  int64_t clock = 0;              ///< the clock the parameters are for (staleness is against it)
  float* params = nullptr;        ///< the dense parameters, flat in model order
  batch_tables* rows = nullptr;   ///< the rows asked (nullptr: none); must outlive the round
};

/// What a round's replies say together.
struct round_outcome {
  int64_t staleness = 0;      ///< clock − the shards' min clock when they answered, the largest
  int64_t newest_clock = -1;  ///< the newest clock included, the smallest over shards
};

/// The bookkeeping of one round, apart from how requests are sent (shard_conversation below).
class conversation_rounds {
public:
  using done_fn = std::function<void(const round_outcome&)>;
  /// `what` says which step failed ("request to a shard failed", "bad parameters from a shard").
  using failed_fn = std::function<void(const char* what, caf::error err)>;

  /// One request to one shard, kept until answered.
  struct request {
    uint64_t id = 0;  // 0: none in flight
    bool push = false;
    std::function<void()> resend;
    std::chrono::steady_clock::time_point sent;
  };

  struct round {
    round_target target;
    std::size_t awaiting = 0;
    round_outcome outcome;
    std::vector<request> in_flight;  // per shard
    done_fn done;
    failed_fn failed;
  };

  conversation_rounds(std::string who, std::shared_ptr<const block_layout> layout,
                      std::size_t shards, bool standbys, std::chrono::milliseconds timeout);

  /// Starts a round; its id for ask.
  uint64_t begin(round_target target, done_fn done, failed_fn failed);

  /// Shard s's reply to request `id` of round `r`: dropped unless it is the newest request to s
  /// in a round still open. Ends the round with the last reply, or at the first bad one.
  void take_reply(uint64_t r, std::size_t s, uint64_t id, const wire_buffer& reply);

  /// Request `id` of round `r` to shard s failed with `err`: a shard gone waits for its standby
  /// (with standbys), anything else ends the round.
  void take_failure(uint64_t r, std::size_t s, uint64_t id, caf::error err);

  /// Ends the round of the first request in flight for longer than the timeout.
  void fail_overdue(std::chrono::steady_clock::time_point now);

  /// The requests in flight to shard s, oldest round first (to send again to its standby).
  std::vector<const request*> in_flight_to(std::size_t s) const;

  /// How often the watchdog looks: a quarter of the timeout (a request times out within 1.25
  /// times it), between 10 ms and 10 s.
  std::chrono::milliseconds watch_period() const;

  /// Records request `id` to shard s of round `r`.
  void sent(uint64_t r, std::size_t s, uint64_t id, bool push, std::function<void()> resend);

  uint64_t next_request_id() { return ++last_request_; }
  const std::string& who() const { return who_; }
  bool open(uint64_t r) const { return rounds_.count(r) != 0; }

private:
  void fail(uint64_t r, const char* what, caf::error err);

  std::string who_;
  std::shared_ptr<const block_layout> layout_;
  std::size_t shards_;
  bool standbys_;
  std::chrono::milliseconds timeout_;
  std::map<uint64_t, round> rounds_;  // open rounds, oldest first
  uint64_t last_round_ = 0;
  uint64_t last_request_ = 0;
};

/// The conversation of actor `Self` (a pointer to it) with the shards. Lives as long as its
/// actor: the response handlers it installs point at it.
template <class Self>
class shard_conversation {
public:
  shard_conversation(Self self, std::string who, std::vector<ps_shard_actor> shards,
                     std::shared_ptr<const block_layout> layout, bool standbys,
                     std::chrono::milliseconds timeout)
      : self_(self),
        shards_(std::move(shards)),
        rounds_(std::move(who), std::move(layout), shards_.size(), standbys, timeout) {}

  std::size_t shards() const { return shards_.size(); }

  /// Starts a round (see conversation_rounds::begin); ask each shard once with its id.
  uint64_t begin(round_target target, conversation_rounds::done_fn done,
                 conversation_rounds::failed_fn failed) {
    return rounds_.begin(target, std::move(done), std::move(failed));
  }

  /// Sends round r's request to shard s (`xs`: the message; `push` when it carries a push).
  template <class... Ts>
  void ask(uint64_t r, std::size_t s, bool push, Ts... xs) {
    if (!rounds_.open(r)) return;  // ended already: a request of an earlier shard failed
    auto id = rounds_.next_request_id();
    rounds_.sent(r, s, id, push, [=] { ask(r, s, push, xs...); });
    send(r, s, id, std::move(xs)...);
  }

  /// Shard s is now `shard` (its promoted standby): sends it again every request in flight to
  /// s. 1 when one of them was a push.
  caf::result<int32_t> reroute(int32_t s, ps_shard_actor shard) {
    if (s < 0 || static_cast<std::size_t>(s) >= shards_.size() || !shard)
      return make_error(errc::wrong_shard, "reroute of shard " + std::to_string(s));
    shards_[s] = std::move(shard);
    int32_t pushed = 0;
    for (const auto* req : rounds_.in_flight_to(static_cast<std::size_t>(s))) {
      log_line(rounds_.who(), std::string("sends its ") + (req->push ? "push" : "pull")
                                + " again to the standby of shard " + std::to_string(s));
      pushed |= req->push ? 1 : 0;
      auto resend = req->resend;  // (replaces *req)
      resend();
    }
    return pushed;
  }

  /// Starts the watchdog: `watchdog_atom` to the actor once a period, which calls watch().
  void start_watchdog() { self_->delayed_send(self_, rounds_.watch_period(), watchdog_atom::value); }

  /// The watchdog's look: fails an overdue request's round, and looks again a period later.
  void watch() {
    rounds_.fail_overdue(std::chrono::steady_clock::now());
    start_watchdog();
  }

private:
  template <class... Ts>
  void send(uint64_t r, std::size_t s, uint64_t id, Ts... xs) {
    self_->request(shards_[s], caf::infinite, std::move(xs)...)
      .then([this, r, s, id](const wire_buffer& reply) { rounds_.take_reply(r, s, id, reply); },
            [this, r, s, id](caf::error& err) { rounds_.take_failure(r, s, id, std::move(err)); });
  }

  Self self_;
  std::vector<ps_shard_actor> shards_;
  conversation_rounds rounds_;
};

} // namespace actorps
