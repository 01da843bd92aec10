// A rollback episode (rollback_episode.hpp): every shard is present again (a new one spawned, or
// the lost one's process back); the chief spawns this actor and asks it (restore). Its steps:
//
//   asked --(restore)--> loading --(a checkpoint, or none)--> restoring --(every shard ok)--> done
//                           |                                     |
//                           |                                     | (a shard refused, or lost)
//                           |                                     v
//                           +--(its shard files unreadable)----> failed
//
//   loading     the newest valid checkpoint of the run's directory; none there: --resume's,
//               else --init-from's, else the seeded initial values at clock 0
//   restoring   every shard takes its part of it, with every worker's new incarnation
//   done        the answer: the checkpoint restored (without its shard files); then it quits
//   failed      the answer is the error (shard_lost: a shard was lost while restoring);
//               then it quits
//
// A failure during the episode ends it (failed); the chief tells a lost shard from any other
// error (rollback.cpp: it starts over once the shard is back, or the run fails). A shard lost
// while the episode runs, or the run's end, makes the chief abort it (kill it, and ignore an
// answer already on its way): the rollback that starts over is the state that holds. The
// chief lost: the episode quits (it monitors it).
#include "actors/chief/rollback_episode.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/fan_out.hpp"
#include "actors/protocol/log.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/storage/checkpoint_resize.hpp"
#include "kernels/optimizer.hpp"

#include <caf/all.hpp>

namespace actorps {

namespace {

struct rollback_state {
  static inline const char* name = "rollback";
  rollback_plan plan;
  caf::typed_response_promise<loaded_checkpoint> answer;
};

using episode = rollback_episode_actor::stateful_pointer<rollback_state>;
using behavior = rollback_episode_actor::behavior_type;
using checkpoint_ptr = std::shared_ptr<const loaded_checkpoint>;

void fail(episode self, caf::error err) {
  self->state.answer.deliver(std::move(err));
  self->quit();
}

auto busy() {
  return [](restore_atom) -> caf::result<loaded_checkpoint> {
    return caf::make_error(caf::sec::runtime_error, "the rollback is under way already");
  };
}

behavior restoring(episode self, checkpoint_ptr ckpt) {
  auto& plan = self->state.plan;
  int64_t clock = ckpt ? ckpt->clock : 0;
  if (ckpt)
    for (const auto& why : ckpt->skipped) log_line("chief", "skipping checkpoint " + why);
  log_line("chief", "restoring every shard to "
                      + (ckpt ? ckpt->dir : std::string("the initial values")) + " (clock "
                      + std::to_string(clock) + "; clocks " + std::to_string(clock) + ".."
                      + std::to_string(plan.failed_at) + " are lost)"
                      + (ckpt && !ckpt->chain.empty()
                           ? ", a chain of " + std::to_string(ckpt->chain.size()) + " from "
                               + ckpt->chain.front()
                           : ""));
  auto files = shard_restore_files(plan.spec, ckpt.get());
  if (!files) {
    fail(self, files.error());
    return {busy()};
  }
  ask_each<caf::ok_atom>(
    plan.shards.size(),
    [&](std::size_t s) {
      return self->request(plan.shards[s], plan.request_timeout, restore_atom::value,
                           (*files)[s], plan.incarnations);
    },
    [=](std::vector<caf::ok_atom>) {
      loaded_checkpoint restored;  // what it was, without its shards' bytes
      if (ckpt) {
        restored.dir = ckpt->dir;
        restored.clock = ckpt->clock;
        restored.run_bytes = ckpt->run_bytes;  // its spec: whether it was cut for this one
        restored.manifest_sha256 = ckpt->manifest_sha256;
        restored.link = ckpt->link;
        restored.chain = ckpt->chain;
      }
      self->state.answer.deliver(std::move(restored));
      self->quit();
    },
    [=](caf::error& err) {
      // told apart from this episode's own loss, which the chief sees as request_receiver_down
      if (err == caf::sec::request_receiver_down)
        err = make_error(errc::shard_lost, "a shard was lost while restoring");
      fail(self, std::move(err));
    });
  return {busy()};
}

behavior loading(episode self) {
  auto& plan = self->state.plan;
  auto restore = [=](checkpoint_ptr ckpt) { self->become(restoring(self, std::move(ckpt))); };
  self->request(plan.io, caf::infinite, load_atom::value, plan.dir)
    .then(
      [=](loaded_checkpoint& ckpt) {
        restore(std::make_shared<const loaded_checkpoint>(std::move(ckpt)));
      },
      [=](caf::error& err) {
        // a run resumed from elsewhere has written none of its own yet: it goes back to the
        // checkpoint it began from, not to the initial values
        const auto& plan = self->state.plan;
        if (const auto& resumed = plan.resumed) {
          log_line("chief", "no checkpoint of this run written yet: back to " + resumed->dir);
          return restore(resumed);
        }
        if (const auto& start = plan.init_from) {  // --init-from's
          log_line("chief", "no checkpoint of this run written yet: back to " + start->dir);
          return restore(start);
        }
        log_line("chief", "no checkpoint to restore (" + describe(err) + ")");
        restore(nullptr);
      });
  return {busy()};
}

behavior rollback_episode(episode self, caf::actor parent, rollback_plan plan) {
  self->state.plan = std::move(plan);
  self->monitor(parent);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (dm.source == parent.address()) self->quit();
  });
  return {
    [=](restore_atom) -> caf::result<loaded_checkpoint> {
      self->state.answer = self->make_response_promise<loaded_checkpoint>();
      self->become(loading(self));
      return self->state.answer;
    },
  };
}

} // namespace

rollback_episode_actor spawn_rollback_episode(caf::actor_system& sys, caf::actor parent,
                                              rollback_plan plan) {
  return sys.spawn(rollback_episode, std::move(parent), std::move(plan));
}

caf::expected<std::vector<wire_buffer>> shard_restore_files(const train_spec& spec,
                                                            const loaded_checkpoint* ckpt) {
  std::vector<wire_buffer> files;
  if (ckpt) {
    auto run = decode_run_checkpoint(ckpt->run_bytes);  // verified when it was loaded
    if (!run) return run.error();
    if (needs_resize(run->spec, spec)) {  // taken under another shard count or placement
      try {
        return resize_shard_files(ckpt->shards, spec);
      } catch (const std::invalid_argument& e) {
        return make_error(errc::checkpoint_failed, e.what());
      }
    }
    for (const auto& saved : ckpt->shards) {
      auto view = decode_shard_checkpoint(saved);  // verified when it was loaded
      if (!view) return view.error();
      files.push_back(encode_shard_checkpoint(spec, *view));  // under this run's spec
    }
    return files;
  }
  // no checkpoint yet: back to the seeded initial values at clock 0
  block_layout layout(spec);
  auto initial = initial_values(spec.model, spec.seed);
  auto slots = optimizer_state_slots(spec.optimizer.kind);
  for (int32_t s = 0; s < spec.shards; ++s) {
    std::vector<float> part(layout.shard_floats(s)), state(slots * part.size());
    layout.gather(s, initial.data(), part.data());
    std::vector<sparse_table_rows> empty_tables(spec.model.sparse_tables.size());
    files.push_back(encode_shard_checkpoint(spec, s, 0, 0, -1, layout, part.data(),
                                            state.data(), slots, empty_tables));
  }
  return files;
}

} // namespace actorps
