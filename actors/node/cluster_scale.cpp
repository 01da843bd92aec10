// scale() of a loop of the user's own (actors/ps.hpp): the shards' states at one clock (as
// checkpoint() takes them), cut for the new number of shards as a live resize cuts them
// (checkpoint_resize.hpp: the fewest buckets and dense blocks change owner), and handed to the
// shards of the new size, every worker of the new number live at that clock. The worker
// clients find the new shards and layout on their next call (cluster_core::generation).
#include "actors/node/cluster_core.hpp"

#include "actors/protocol/placement_change.hpp"
#include "actors/roles/ps_shard.hpp"
#include "actors/storage/checkpoint_resize.hpp"

#include <caf/all.hpp>

#include <stdexcept>

namespace actorps::detail {

namespace {

/// The spec at `workers` workers from clock `clock` on: a minibatch teaches as much as before
/// and the schedule runs on the minibatches trained (train_spec::lr_workers), as --resize does.
void change_workers(train_spec& spec, int workers, int64_t clock) {
  if (workers == spec.workers) return;
  const int64_t trained = spec.lr_workers > 0
                            ? spec.schedule_batches + (clock - spec.schedule_from) * spec.workers
                            : clock * spec.workers;
  if (spec.lr_workers == 0) spec.lr_workers = spec.workers;
  spec.schedule_from = clock;
  spec.schedule_batches = trained;
  spec.workers = workers;
}

} // namespace

train_spec spec_after(const train_spec& spec, int ps, int workers, int64_t clock) {
  auto after = resized_spec(spec, ps);
  change_workers(after, workers, clock);
  return after;
}

caf::error refused(const std::string& why) {
  return caf::make_error(caf::sec::invalid_argument, "scale: " + why);
}

caf::error check_scale(const cluster_core& core, int ps, int workers) {
  if (ps < 1 || ps > max_shards)
    return refused("the number of shards is 1 to " + std::to_string(max_shards) + " (got "
                   + std::to_string(ps) + ")");
  if (workers < 1 || workers > max_workers)
    return refused("the number of workers is 1 to " + std::to_string(max_workers) + " (got "
                   + std::to_string(workers) + ")");
  if (!core.spec.bucket_shards.empty()
      && static_cast<std::size_t>(ps) > core.spec.bucket_shards.size())
    return refused("more shards than the " + std::to_string(core.spec.bucket_shards.size())
                   + " buckets of the sparse keys");
  return {};
}

caf::expected<scaled_states> cut_states(cluster_core& core, int ps, int workers) {
  auto states = states_now(core);
  if (!states) return states.error();
  scaled_states cut;
  cut.clock = states->clock;
  try {
    cut.after = spec_after(core.spec, ps, workers, cut.clock);
    cut.files = resize_shard_files(states->files, cut.after);
  } catch (const std::invalid_argument& e) {
    return refused(e.what());
  }
  return cut;
}

caf::error restore_cut(cluster_core& core, const std::vector<ps_shard_actor>& shards,
                       const scaled_states& cut) {
  caf::scoped_actor self{*core.sys};
  const std::vector<uint32_t> incarnations(static_cast<std::size_t>(cut.after.workers), 0);
  for (std::size_t s = 0; s < shards.size(); ++s) {
    caf::error failed;
    self->request(shards[s], core.opts.timeout, restore_atom::value, cut.files[s], incarnations)
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
    if (failed)
      return make_error(errc::checkpoint_failed,
                        "scale: shard " + std::to_string(s) + " refused its state at clock "
                          + std::to_string(cut.clock) + ": " + describe(failed));
  }
  return {};
}

void adopt_spec(cluster_core& core, train_spec after) {
  core.retired_layouts.push_back(std::move(core.layout));
  core.layout = std::make_unique<block_layout>(after);
  core.opts.ps = after.shards;
  core.opts.workers = after.workers;
  core.spec = std::move(after);
  ++core.generation;
}

caf::expected<int64_t> scale_shards(cluster_core& core, int ps, int workers) {
  if (ps == 0) ps = static_cast<int>(core.shards.size());
  if (workers == 0) workers = core.spec.workers;
  if (auto err = check_scale(core, ps, workers)) return err;
  if (core.shards_elsewhere)
    return refused("the shards live in ps tasks of their own (a job of actorps processes "
                   "changes size with actorps scale)");
  const auto before = static_cast<int>(core.shards.size());
  if (ps == before && workers == core.spec.workers) {
    auto states = states_now(core);
    if (!states) return states.error();
    return states->clock;
  }
  auto cut = cut_states(core, ps, workers);
  if (!cut) return cut.error();
  // The shards beyond the new number stop (their state is in the files); new ones start empty.
  for (int s = ps; s < before; ++s)
    caf::anon_send_exit(core.shards[static_cast<std::size_t>(s)], caf::exit_reason::user_shutdown);
  core.shards.resize(static_cast<std::size_t>(ps));
  for (int s = before; s < ps; ++s)
    core.shards[static_cast<std::size_t>(s)] = spawn_ps_shard(*core.sys, s);
  core.stop = [shards = core.shards] {
    for (auto& s : shards) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  };
  adopt_spec(core, cut->after);
  if (auto err = restore_cut(core, core.shards, *cut)) return err;
  return cut->clock;
}

} // namespace actorps::detail
