// checkpoint() and restore() of a loop of the user's own (actors/ps.hpp): the shards' states, as
// the chief's checkpoints hold them and in the same files (checkpoint_store.hpp). The shards
// answer (checkpoint, snapshot, clock, -1) with their whole state at `clock`, as they do for an
// export version; this side writes the files, run.capnp and the manifest itself. A restore
// loads and checks the newest valid checkpoint and hands each shard its file under this
// cluster's spec, as a run's rollback does (rollback_episode.hpp).
#include "actors/node/cluster_core.hpp"

#include "actors/chief/rollback_episode.hpp"
#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/roles/clock_table.hpp"
#include "actors/storage/checkpoint_lineage.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include <caf/all.hpp>

#include <algorithm>

namespace actorps::detail {

namespace {

caf::error failed_checkpoint(const std::string& why) {
  return make_error(errc::checkpoint_failed, why);
}

/// The largest of the shards' min clocks: where the shards are, or just got (a push of another
/// worker still on its way to some), and where a shard behind soon is.
caf::expected<int64_t> newest_min_clock(cluster_core& core, caf::scoped_actor& self) {
  int64_t clock = -1;
  caf::error failed;
  for (auto& shard : core.shards)
    self->request(shard, core.opts.timeout, stats_atom::value)
      .receive(
        [&](const shard_stats& s) {
          if (s.min_clock != clock_table::no_live_workers) clock = std::max(clock, s.min_clock);
        },
        [&](caf::error& err) { failed = std::move(err); });
  if (failed) return failed;
  if (clock < 0)
    return failed_checkpoint("no worker is live (every one has finished): checkpoint before "
                             "finish()");
  return clock;
}

/// Every shard's whole state at `clock`: asked of all at once, so that none passes the clock
/// while another is answering.
caf::expected<std::vector<wire_buffer>> states_at(cluster_core& core, caf::scoped_actor& self,
                                                  int64_t clock) {
  using handle = decltype(self->request(core.shards[0], core.opts.timeout,
                                        checkpoint_atom::value, snapshot_atom::value, clock,
                                        int64_t{-1}));
  std::vector<handle> asked;
  for (auto& shard : core.shards)
    asked.push_back(self->request(shard, core.opts.timeout, checkpoint_atom::value,
                                  snapshot_atom::value, clock, int64_t{-1}));
  std::vector<wire_buffer> files(asked.size());
  caf::error failed;
  for (std::size_t s = 0; s < asked.size(); ++s)
    asked[s].receive([&](wire_buffer& bytes) { files[s] = std::move(bytes); },
                     [&](caf::error& err) {
                       if (!failed) failed = std::move(err);
                     });
  if (failed) return failed;
  return files;
}

/// run.capnp of a loop of the user's own: the spec and the clock, every worker at it. The
/// data positions are the loop's own business (batch 1, no rows counted).
wire_buffer run_file(const cluster_core& core, int64_t clock, const std::string& run_id) {
  run_checkpoint run;
  run.spec = core.spec;
  run.clock = clock;
  run.batch = 1;
  run.steps = core.spec.total_clocks;
  for (int32_t w = 0; w < core.spec.workers; ++w) run.positions.push_back({w, clock, 0, 0});
  run.run_id = run_id;
  return encode_run_checkpoint(run);
}

} // namespace

caf::expected<shard_states> states_now(cluster_core& core) {
  caf::scoped_actor self{*core.sys};
  // A shard that passed the clock before it was asked (training went on meanwhile) refuses it:
  // asked again at the clock they are at then.
  for (int attempt = 0;; ++attempt) {
    auto at = newest_min_clock(core, self);
    if (!at) return at.error();
    auto states = states_at(core, self, *at);
    if (states) return shard_states{*at, std::move(*states)};
    if (attempt == 2 || !is_error(states.error(), errc::checkpoint_clock_passed))
      return states.error();
  }
}

caf::expected<cluster_checkpoint> checkpoint_shards(cluster_core& core, const std::string& root) {
  auto states = states_now(core);
  if (!states) return states.error();
  auto& files = states->files;
  const auto clock = states->clock;
  try {
    const auto run_id = new_run_id();
    auto dir = prepare_checkpoint_dir(root, clock, run_id);
    cluster_checkpoint out;
    std::vector<file_record> records;
    for (std::size_t s = 0; s < files.size(); ++s) {
      if (files[s].is_gathered()) files[s] = files[s].flat();  // one piece, to write at once
      const auto& bytes = files[s];
      records.push_back(write_file_durably(dir / shard_file_name(static_cast<int32_t>(s)),
                                           bytes.bytes(), bytes.size_bytes()));
      out.bytes += bytes.size_bytes();
    }
    commit_checkpoint(dir, clock, std::move(records), run_file(core, clock, run_id), 0);
    out.dir = dir.string();
    out.clock = clock;
    return out;
  } catch (const std::exception& e) {  // checkpoint_error, a filesystem_error
    return failed_checkpoint(e.what());
  }
}

caf::expected<int64_t> restore_shards(cluster_core& core, const std::string& path) {
  const auto& spec = core.spec;
  auto fits = [&](const run_checkpoint& run) {
    auto why = incompatibility(run.spec, spec);
    if (why.empty() && run.spec.shards != spec.shards)
      why = "the checkpoint was written by " + std::to_string(run.spec.shards)
            + " shards, this cluster has " + std::to_string(spec.shards);
    return why;
  };
  loaded_checkpoint saved;
  try {
    saved = load_newest_checkpoint(path, fits);
  } catch (const std::exception& e) {
    return failed_checkpoint(e.what());
  }
  auto files = shard_restore_files(spec, &saved);
  if (!files) return files.error();
  caf::scoped_actor self{*core.sys};
  const std::vector<uint32_t> incarnations(static_cast<std::size_t>(spec.workers), 0);
  for (std::size_t s = 0; s < core.shards.size(); ++s) {
    caf::error failed;
    self->request(core.shards[s], core.opts.timeout, restore_atom::value, (*files)[s],
                  incarnations)
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
    if (failed)
      return make_error(errc::checkpoint_failed, "shard " + std::to_string(s)
                                                   + " refused the restore: " + describe(failed));
  }
  return saved.clock;
}

} // namespace actorps::detail
