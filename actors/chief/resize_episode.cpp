// A resize episode (resize_episode.hpp): every old shard has handed over, at the clock of the
// change, its dense blocks and sketches, and the rows of its buckets that go to another shard
// split by that shard (keeping them all until it moves), and no worker runs; the chief spawns
// this actor and asks it (resize). Its steps:
//
//   asked --(resize)--> decoding --(all read)--> cutting --(a part per shard)--> moving
//                          |                        |                               |
//                          | (a hand-over unreadable)  (they do not make a run)     |
//                          v                        v                               |
//                        failed <-------------------+--------(a shard refused)------+
//   moving --(every shard ok)--> done
//
//   decoding    every dense hand-over read, each by an actor of its own (the workers are
//               stopped: every core may read)
//   cutting     the dense hand-overs cut for the new size (checkpoint_resize.hpp, part_for):
//               every shard of the new size gets the dense blocks of its new layout that another
//               old shard held (a shard that stays keeps its own in place) and the sketches of
//               the old shards that held its buckets, nothing lost or doubled; each part cut by
//               an actor of its own. The rows are not read here: each old shard split them by
//               destination already.
//   moving      every shard of the new size takes its part and the rows handed to it under the
//               new spec (move_in: the rows of the buckets it keeps stay where they are, those it
//               gives away go), with every worker's new incarnation (a push of the stopped
//               workers still on its way is refused); the shards that leave are the chief's to
//               stop. A shard the resize spawned that is lost is spawned again by the chief,
//               which names the replacement (resize, s, replacement): its part goes there, after
//               the rows copied ahead to it (resize_plan::copied), which it does not hold.
//   done        the answer: the bytes that changed shard, the time to read and cut the dense
//               hand-overs and the time the shards took to take their parts; then it quits
//   failed      the answer is the error
//
// The chief lost: the episode quits (it monitors it).
#include "actors/chief/resize_episode.hpp"

#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/fan_out.hpp"
#include "actors/protocol/log.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/storage/checkpoint_resize.hpp"
#include "kernels/optimizer.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>

namespace actorps {

namespace {

using clock_type = std::chrono::steady_clock;

struct resize_state {
  static inline const char* name = "resize";
  resize_plan plan;
  caf::typed_response_promise<uint64_t, double, double> answer;
  clock_type::time_point asked;
  double cut_ms = 0;
  // moving: each shard's part, whether it took it, and how many have not
  std::vector<wire_buffer> parts;
  std::vector<bool> moved;
  std::size_t waiting = 0;
  uint64_t moved_bytes = 0;
  clock_type::time_point moving_from;
};

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

using episode = resize_episode_actor::stateful_pointer<resize_state>;
using behavior = resize_episode_actor::behavior_type;

void fail(episode self, caf::error err) {
  self->state.answer.deliver(std::move(err));
  self->quit();
}

auto busy() {
  return [](resize_atom) -> caf::result<uint64_t, double, double> {
    return caf::make_error(caf::sec::runtime_error, "the resize is under way already");
  };
}

void send_part(episode self, std::size_t s);

/// (resize, s, replacement): shard s (one the resize spawned) lost and spawned again; before
/// the parts are cut it is only remembered, after they are it gets its part.
auto replaced(episode self) {
  return [=](resize_atom, int32_t s, ps_shard_actor& replacement) {
    auto& st = self->state;
    if (s < 0 || static_cast<std::size_t>(s) >= st.plan.shards.size()) return;
    st.plan.shards[static_cast<std::size_t>(s)] = std::move(replacement);
    if (static_cast<std::size_t>(s) < st.plan.copy_again.size())
      st.plan.copy_again[static_cast<std::size_t>(s)] = true;  // it holds no copies
    if (st.parts.empty()) return;  // not cut yet: sent when they are
    if (st.moved[static_cast<std::size_t>(s)]) {  // it had taken its part: take it again
      st.moved[static_cast<std::size_t>(s)] = false;
      ++st.waiting;
    }
    send_part(self, static_cast<std::size_t>(s));
  };
}

void send_part_now(episode self, std::size_t s);

/// Shard s's part, after the rows copied ahead to it where it holds none of them (a shard
/// spawned since the copy).
void send_part(episode self, std::size_t s) {
  auto& st = self->state;
  const bool again = s < st.plan.copy_again.size() && st.plan.copy_again[s]
                     && !st.plan.copied[s].empty();
  if (!again) return send_part_now(self, s);
  const auto shard = st.plan.shards[s];
  auto left = std::make_shared<std::size_t>(st.plan.copied[s].size());
  for (const auto& copy : st.plan.copied[s])
    self->request(shard, st.plan.request_timeout, resize_atom::value, copy_atom::value, copy)
      .then(
        [=](caf::ok_atom) {
          if (self->state.plan.shards[s] != shard) return;  // replaced since: given again
          if (--*left == 0) send_part_now(self, s);
        },
        [=](caf::error& err) {
          if (err == caf::sec::request_receiver_down) return;  // replaced: given again
          if (self->state.plan.shards[s] != shard) return;
          fail(self, std::move(err));
        });
}

void send_part_now(episode self, std::size_t s) {
  auto& st = self->state;
  const auto shard = st.plan.shards[s];
  self->request(shard, st.plan.request_timeout, restore_atom::value, resize_atom::value,
                st.parts[s], st.plan.rows[s], st.plan.incarnations)
    .then(
      [=](caf::ok_atom) {
        auto& st = self->state;
        if (st.plan.shards[s] != shard || st.moved[s]) return;  // a replaced one's late answer
        st.moved[s] = true;
        if (--st.waiting > 0) return;
        st.answer.deliver(st.moved_bytes, st.cut_ms, ms_since(st.moving_from));
        self->quit();
      },
      [=](caf::error& err) {
        // A shard that went down: the chief gives a replacement (a shard the resize spawned)
        // or ends the resize (a rollback: the rows it kept are gone).
        if (err == caf::sec::request_receiver_down) return;
        if (self->state.plan.shards[s] != shard) return;
        fail(self, std::move(err));
      });
}

behavior moving(episode self, std::vector<wire_buffer> parts, uint64_t moved) {
  auto& st = self->state;
  st.cut_ms = ms_since(st.asked);
  st.moving_from = clock_type::now();
  st.parts = std::move(parts);
  st.moved.assign(st.parts.size(), false);
  st.waiting = st.parts.size();
  st.moved_bytes = moved;
  for (const auto* parts : {&st.plan.rows, &st.plan.copied})
    for (const auto& rows : *parts)
      for (const auto& part : rows) st.moved_bytes += shard_checkpoint_row_bytes(part);
  for (std::size_t s = 0; s < st.parts.size(); ++s) send_part(self, s);
  return {busy(), replaced(self)};
}

behavior cutting(episode self, std::vector<shard_checkpoint_view> decoded) {
  auto& plan = self->state.plan;
  std::shared_ptr<const shard_cut> cut;
  try {
    // each old shard handed over only the dense blocks that leave it
    cut = std::make_shared<const shard_cut>(std::move(plan.states), std::move(decoded),
                                            plan.after, shard_cut::dense_files::leaving_only);
  } catch (const std::invalid_argument& e) {
    fail(self, make_error(errc::checkpoint_failed, std::string("cutting the shards' states: ")
                                                     + e.what()));
    return {busy(), replaced(self)};
  }
  plan.states.clear();  // read: the cut holds them
  if (static_cast<std::size_t>(plan.after.shards) != plan.shards.size()
      || plan.rows.size() != plan.shards.size()) {
    fail(self, make_error(errc::wrong_shard, std::to_string(plan.after.shards) + " states for "
                                               + std::to_string(plan.shards.size()) + " shards"));
    return {busy(), replaced(self)};
  }
  // Each new shard's file by a cutter of its own: the workers are stopped, every core may cut.
  ask_each<wire_buffer>(
    plan.shards.size(),
    [&](std::size_t s) {
      auto cutter = self->spawn([cut](caf::event_based_actor* me) -> caf::behavior {
        return {[=](int32_t s) -> caf::result<wire_buffer> {
          me->quit();  // one file, then gone (the answer still leaves)
          try {
            return cut->part_for(s);
          } catch (const std::invalid_argument& e) {
            return make_error(errc::checkpoint_failed,
                              std::string("cutting the shards' states: ") + e.what());
          }
        }};
      });
      return self->request(cutter, caf::infinite, static_cast<int32_t>(s));
    },
    [=](std::vector<wire_buffer> files) {
      self->become(moving(self, std::move(files), cut->moving_bytes()));
    },
    [=](caf::error& err) { fail(self, std::move(err)); });
  return {busy(), replaced(self)};
}

behavior decoding(episode self) {
  auto& plan = self->state.plan;
  auto decoded = std::make_shared<std::vector<shard_checkpoint_view>>(plan.states.size());
  // Each old state read by a reader of its own; each writes only its own element, and the
  // answers are read only once every reader has answered.
  ask_each<caf::ok_atom>(
    plan.states.size(),
    [&](std::size_t o) {
      auto reader = self->spawn([decoded, o, file = plan.states[o]](
                                  caf::event_based_actor* me) -> caf::behavior {
        return {[=](int32_t) -> caf::result<caf::ok_atom> {
          me->quit();  // one state, then gone (the answer still leaves)
          auto view = decode_shard_checkpoint(file);
          if (!view)
            return make_error(errc::checkpoint_failed,
                              "cutting the shards' states: shard " + std::to_string(o) + ": "
                                + describe(view.error()));
          (*decoded)[o] = std::move(*view);
          return caf::ok_atom::value;
        }};
      });
      return self->request(reader, caf::infinite, static_cast<int32_t>(o));
    },
    [=](std::vector<caf::ok_atom>) { self->become(cutting(self, std::move(*decoded))); },
    [=](caf::error& err) { fail(self, std::move(err)); });
  return {busy(), replaced(self)};
}

behavior resize_episode(episode self, caf::actor parent, resize_plan plan) {
  self->state.plan = std::move(plan);
  self->monitor(parent);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (dm.source == parent.address()) self->quit();
  });
  return {
    [=](resize_atom) -> caf::result<uint64_t, double, double> {
      self->state.answer = self->make_response_promise<uint64_t, double, double>();
      self->state.asked = clock_type::now();
      self->become(decoding(self));
      return self->state.answer;
    },
    replaced(self),
  };
}

} // namespace

resize_episode_actor spawn_resize_episode(caf::actor_system& sys, caf::actor parent,
                                          resize_plan plan) {
  return sys.spawn(resize_episode, std::move(parent), std::move(plan));
}

} // namespace actorps
