#include "actors/roles/shard_conversation.hpp"

namespace actorps {

conversation_rounds::conversation_rounds(std::string who,
                                         std::shared_ptr<const block_layout> layout,
                                         std::size_t shards, bool standbys,
                                         std::chrono::milliseconds timeout)
    : who_(std::move(who)),
      layout_(std::move(layout)),
      shards_(shards),
      standbys_(standbys),
      timeout_(timeout) {}

uint64_t conversation_rounds::begin(round_target target, done_fn done, failed_fn failed) {
  auto r = ++last_round_;
  auto& rd = rounds_[r];
  rd.target = target;
  rd.awaiting = shards_;
  rd.outcome.staleness = 0;
  rd.outcome.newest_clock = std::numeric_limits<int64_t>::max();
  rd.in_flight.assign(shards_, {});
  rd.done = std::move(done);
  rd.failed = std::move(failed);
  if (shards_ == 0) {  // (no shard to ask: nothing to wait for)
    auto finished = std::move(rd);
    rounds_.erase(r);
    finished.outcome.newest_clock = -1;
    finished.done(finished.outcome);
  }
  return r;
}

void conversation_rounds::sent(uint64_t r, std::size_t s, uint64_t id, bool push,
                               std::function<void()> resend) {
  auto i = rounds_.find(r);
  if (i == rounds_.end()) return;
  i->second.in_flight[s] = {id, push, std::move(resend), std::chrono::steady_clock::now()};
}

void conversation_rounds::take_reply(uint64_t r, std::size_t s, uint64_t id,
                                     const wire_buffer& reply) {
  auto i = rounds_.find(r);
  if (i == rounds_.end() || i->second.in_flight[s].id != id) return;  // sent again: that counts
  auto& rd = i->second;
  rd.in_flight[s] = {};
  auto msg = scatter_shard_parameters(reply, *layout_, rd.target.params);
  if (!msg) return fail(r, "bad parameters from a shard", msg.error());
  if (msg->shard != static_cast<int32_t>(s))
    return fail(r, "bad parameters from a shard",
                make_error(errc::wrong_shard, "shard " + std::to_string(s) + " answered as shard "
                                                + std::to_string(msg->shard)));
  if (rd.target.rows)
    if (auto err = rd.target.rows->take_rows(static_cast<int>(s), msg->sparse))
      return fail(r, "bad sparse rows from a shard", err);
  rd.outcome.staleness = std::max(rd.outcome.staleness, rd.target.clock - msg->min_clock);
  rd.outcome.newest_clock = std::min(rd.outcome.newest_clock, msg->newest_clock);
  if (--rd.awaiting > 0) return;
  auto finished = std::move(rd);
  rounds_.erase(i);
  finished.done(finished.outcome);
}

void conversation_rounds::take_failure(uint64_t r, std::size_t s, uint64_t id, caf::error err) {
  auto i = rounds_.find(r);
  if (i == rounds_.end() || i->second.in_flight[s].id != id) return;
  // (in another process the data link's loss says shard_lost, or, when the link broke in the
  // middle of a reply received in place, remote_link_unreachable)
  if ((err == caf::sec::request_receiver_down || err == errc::shard_lost
       || err == caf::exit_reason::remote_link_unreachable)
      && standbys_) {
    log_line(who_, "shard " + std::to_string(s) + " is gone; its request waits for the standby");
    return;  // reroute sends it again
  }
  // A shard that is gone is the chief's to repair (it restarts every worker from a
  // checkpoint); say so in the error, so that this is not counted as a lost worker.
  if (err == caf::sec::request_receiver_down)
    err = make_error(errc::shard_lost, "shard " + std::to_string(s) + ": " + describe(err));
  fail(r, "request to a shard failed", std::move(err));
}

void conversation_rounds::fail_overdue(std::chrono::steady_clock::time_point now) {
  for (auto& [r, rd] : rounds_)
    for (std::size_t s = 0; s < rd.in_flight.size(); ++s) {
      const auto& req = rd.in_flight[s];
      if (req.id != 0 && now - req.sent >= timeout_)
        return take_failure(r, s, req.id,
                            make_error(caf::sec::request_timeout,
                                       "shard " + std::to_string(s) + " did not answer " + who_
                                         + "'s " + (req.push ? "push_pull" : "pull")
                                         + " for the parameters of clock "
                                         + std::to_string(rd.target.clock) + " within "
                                         + std::to_string(timeout_.count()) + " ms"));
    }
}

std::vector<const conversation_rounds::request*>
conversation_rounds::in_flight_to(std::size_t s) const {
  std::vector<const request*> out;
  for (const auto& [r, rd] : rounds_)
    if (s < rd.in_flight.size() && rd.in_flight[s].resend) out.push_back(&rd.in_flight[s]);
  return out;
}

std::chrono::milliseconds conversation_rounds::watch_period() const {
  return std::clamp(timeout_ / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(10000));
}

void conversation_rounds::fail(uint64_t r, const char* what, caf::error err) {
  auto i = rounds_.find(r);
  if (i == rounds_.end()) return;
  // Its other requests' replies are dropped when they come (the round is gone).
  auto failed = std::move(i->second.failed);
  rounds_.erase(i);
  failed(what, std::move(err));
}

} // namespace actorps
