// A resize episode (resize_episode.hpp): every old shard's state at the clock of the change is
// in hand and no worker runs; the chief spawns this actor and asks it (resize). Its steps:
//
//   asked --(resize)--> decoding --(all read)--> cutting --(a state per new shard)--> restoring
//                          |                        |                                  |
//                          | (a state unreadable)   | (the states do not make a run)   |
//                          v                        v                                  |
//                        failed <-------------------+------(a shard refused, or lost)--+
//   restoring --(every shard ok)--> done
//
//   decoding    every old shard's state read, each by an actor of its own (the workers are
//               stopped: every core may read)
//   cutting     the states cut for the new size (checkpoint_resize.hpp): every block and row
//               on the shard the new placement names, nothing lost or doubled; the states read
//               once, each new shard's file cut by an actor of its own
//   restoring   every shard of the new size takes its state under the new spec, with every
//               worker's new incarnation (a push of the stopped workers still on its way is
//               refused); the shards that leave are the chief's to stop
//   done        the answer: the bytes that changed shard, the time to read and cut the states
//               and the time the shards took to restore them; then it quits
//   failed      the answer is the error (shard_lost: a shard was lost while restoring)
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

behavior restoring(episode self, std::vector<wire_buffer> files, uint64_t moved) {
  auto& plan = self->state.plan;
  self->state.cut_ms = ms_since(self->state.asked);
  const auto restore_from = clock_type::now();
  ask_each<caf::ok_atom>(
    plan.shards.size(),
    [&](std::size_t s) {
      return self->request(plan.shards[s], plan.request_timeout, restore_atom::value, files[s],
                           plan.incarnations);
    },
    [=](std::vector<caf::ok_atom>) {
      self->state.answer.deliver(moved, self->state.cut_ms, ms_since(restore_from));
      self->quit();
    },
    [=](caf::error& err) {
      if (err == caf::sec::request_receiver_down)
        err = make_error(errc::shard_lost, "a shard was lost while taking its new state");
      fail(self, std::move(err));
    });
  return {busy()};
}

behavior cutting(episode self, std::vector<shard_checkpoint_view> decoded) {
  auto& plan = self->state.plan;
  std::shared_ptr<const shard_cut> cut;
  try {
    cut = std::make_shared<const shard_cut>(std::move(plan.states), std::move(decoded),
                                            plan.after);
  } catch (const std::invalid_argument& e) {
    fail(self, make_error(errc::checkpoint_failed, std::string("cutting the shards' states: ")
                                                     + e.what()));
    return {busy()};
  }
  plan.states.clear();  // read: the cut holds them
  if (static_cast<std::size_t>(plan.after.shards) != plan.shards.size()) {
    fail(self, make_error(errc::wrong_shard, std::to_string(plan.after.shards) + " states for "
                                               + std::to_string(plan.shards.size()) + " shards"));
    return {busy()};
  }
  // Each new shard's file by a cutter of its own: the workers are stopped, every core may cut.
  ask_each<wire_buffer>(
    plan.shards.size(),
    [&](std::size_t s) {
      auto cutter = self->spawn([cut](caf::event_based_actor* me) -> caf::behavior {
        return {[=](int32_t s) -> caf::result<wire_buffer> {
          me->quit();  // one file, then gone (the answer still leaves)
          try {
            return cut->cut_for(s);
          } catch (const std::invalid_argument& e) {
            return make_error(errc::checkpoint_failed,
                              std::string("cutting the shards' states: ") + e.what());
          }
        }};
      });
      return self->request(cutter, caf::infinite, static_cast<int32_t>(s));
    },
    [=](std::vector<wire_buffer> files) {
      self->become(restoring(self, std::move(files), cut->moving_bytes()));
    },
    [=](caf::error& err) { fail(self, std::move(err)); });
  return {busy()};
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
  return {busy()};
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
  };
}

} // namespace

resize_episode_actor spawn_resize_episode(caf::actor_system& sys, caf::actor parent,
                                          resize_plan plan) {
  return sys.spawn(resize_episode, std::move(parent), std::move(plan));
}

} // namespace actorps
