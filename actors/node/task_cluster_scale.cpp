// task_cluster::scale (actors/ps.hpp): a loop of the user's own, one process per task, changes
// its numbers of shards and workers. Every worker task in the job asks ps:0 at the same point of
// its loop with no call in flight (ps_task.cpp's scale_rendezvous); once all have, worker 0
// reaches the spare ps tasks the change takes in, takes the shards' states at one clock, cuts
// them for the new size as local_cluster::scale does (cluster_scale.cpp) and hands each shard
// its part, then tells ps:0 how it went, which tells the others and the spare worker tasks the
// change takes in (waiting there in worker(): await_joining). Each worker then talks to the
// shards of the new size (reaching the spares itself) and tells the ps tasks the change removed
// that it is done: once every worker has, their serve() returns 0. A worker beyond the new
// number is out of the job: its loop calls finish() and ends.
#include "actors/node/task_cluster_impl.hpp"

#include "actors/guard/connect.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <stdexcept>

namespace actorps {

namespace detail {

namespace {

/// ps:from .. ps:to-1, the spares a growth takes in, each with its data link.
caf::expected<std::vector<remote_shard>> reach_spares(task_cluster::impl& im, int from, int to) {
  auto reached = connect_ps_tasks(im, from, to);
  if (!reached)
    return caf::make_error(caf::sec::cannot_connect_to_node,
                           "scale: a spare ps task (" + describe(reached.error()) + ")");
  return reached;
}

/// Worker 0's part, once every worker waits: the state at one clock, cut for `ps` shards and
/// `workers` workers and handed to the shards of that size (`joining`: those beyond the ones in
/// use); the clock.
caf::expected<int64_t> move_state(task_cluster::impl& im, int ps, int workers,
                                  const std::vector<remote_shard>& joining) {
  auto& core = *im.core;
  auto cut = cut_states(core, ps, workers);
  if (!cut) return cut.error();
  std::vector<ps_shard_actor> shards;
  for (int s = 0; s < ps; ++s)
    shards.push_back(s < static_cast<int>(im.remote.size())
                       ? core.shards[static_cast<std::size_t>(s)]
                       : joining[static_cast<std::size_t>(s) - im.remote.size()].handle);
  if (auto err = restore_cut(core, shards, *cut)) return err;
  return cut->clock;
}

/// Every worker once the state has moved at `clock`: the shards of the new size from its next
/// call on, done said to the ps tasks beyond it, and out of the job when beyond `workers`.
caf::error go_on(task_cluster::impl& im, int ps, int workers, int64_t clock,
                 std::vector<remote_shard> joining) {
  auto& core = *im.core;
  train_spec after;
  try {
    after = spec_after(core.spec, ps, workers, clock);
  } catch (const std::invalid_argument& e) {
    return refused(e.what());
  }
  im.in_job = im.task.index < workers;
  caf::scoped_actor self{*core.sys};
  caf::error failed;
  auto remote = std::move(im.remote);
  for (auto s = static_cast<std::size_t>(ps); s < remote.size(); ++s) {
    if (auto err = tell_done(im, self, remote[s].task); err && !failed) failed = std::move(err);
    remote[s].close();
    im.told_done.insert(static_cast<int32_t>(s));
  }
  remote.resize(std::min(remote.size(), static_cast<std::size_t>(ps)));
  for (auto& r : joining) {
    im.told_done.erase(static_cast<int32_t>(remote.size()));
    remote.push_back(std::move(r));
  }
  use_shards(im, std::move(remote));
  adopt_spec(core, std::move(after));
  return failed;
}

} // namespace

caf::error await_joining(task_cluster::impl& im) {
  auto& core = *im.core;
  auto first = connect_to<ps_task_actor>(*core.sys, im.cluster.address({"ps", 0}),
                                         core.opts.timeout);
  if (!first) return first.error();
  caf::scoped_actor self{*core.sys};
  std::vector<int64_t> changes;
  caf::error failed;
  // No timeout: a spare waits as long as the job trains without it.
  self->request(*first, caf::infinite, join_atom::value, static_cast<int32_t>(im.task.index))
    .receive([&](std::vector<int64_t>& c) { changes = std::move(c); },
             [&](caf::error& err) { failed = std::move(err); });
  if (failed) {
    // Every ps task hears this worker is done (with no shards in use, all are beyond them), so
    // that every serve() returns; the wait's error is the one to say.
    tell_spares_done(im);
    return failed;
  }
  auto spec = core.spec;
  try {
    for (std::size_t i = 0; i + 2 < changes.size(); i += 3)
      spec = spec_after(spec, static_cast<int>(changes[i]), static_cast<int>(changes[i + 1]),
                        changes[i + 2]);
  } catch (const std::invalid_argument& e) {
    return refused(e.what());
  }
  im.joined_at = changes.size() >= 3 ? changes.back() : 0;
  im.in_job = true;
  adopt_spec(core, std::move(spec));
  return {};
}

caf::error tell_spares_done(task_cluster::impl& im) {
  auto& core = *im.core;
  caf::scoped_actor self{*core.sys};
  for (int s = static_cast<int>(im.remote.size()); s < im.cluster.count("ps"); ++s) {
    if (im.told_done.count(s)) continue;
    auto task = connect_to<ps_task_actor>(*core.sys, im.cluster.address({"ps", s}),
                                          core.opts.timeout);
    if (!task) return task.error();
    if (auto err = tell_done(im, self, *task)) return err;
    im.told_done.insert(s);
  }
  return {};
}

} // namespace detail

caf::expected<int64_t> task_cluster::scale(int ps, int workers) {
  auto& im = *impl_;
  if (is_ps()) throw std::logic_error("scale() is for a worker task; this is " + im.task.text());
  if (im.remote.empty())
    return caf::make_error(caf::sec::runtime_error, "not connected: call worker() first");
  if (!im.in_job) return detail::refused(im.task.text() + " is not in the job");
  auto& core = *im.core;
  if (ps == 0) ps = static_cast<int>(im.remote.size());
  if (workers == 0) workers = core.spec.workers;
  const int listed = im.cluster.count("ps");
  if (ps > listed)
    return detail::refused("TF_CONFIG lists " + std::to_string(listed) + " ps task(s), not "
                           + std::to_string(ps));
  const int listed_workers = im.cluster.count("worker");
  if (workers > listed_workers)
    return detail::refused("TF_CONFIG lists " + std::to_string(listed_workers)
                           + " worker task(s), not " + std::to_string(workers));
  if (auto err = detail::check_scale(core, ps, workers)) return err;
  const auto worker = static_cast<int32_t>(im.task.index);
  caf::scoped_actor self{*core.sys};
  // Every worker waits here until all have asked (they train meanwhile): no timeout.
  int64_t clock = 0;
  caf::error failed;
  self->request(im.remote[0].task, caf::infinite, scale_atom::value, worker,
                static_cast<int32_t>(ps), static_cast<int32_t>(workers))
    .receive([&](int64_t c) { clock = c; }, [&](caf::error& err) { failed = std::move(err); });
  if (failed) return failed;
  const int before = static_cast<int>(im.remote.size());
  std::vector<remote_shard> joining;
  if (worker == 0) {  // every worker waits: worker 0 moves the state, and says how it went
    auto moved = [&]() -> caf::expected<int64_t> {
      auto reached = detail::reach_spares(im, before, ps);
      if (!reached) return reached.error();
      joining = std::move(*reached);
      return detail::move_state(im, ps, workers, joining);
    }();
    const std::string why = moved ? "" : describe(moved.error());
    self->request(im.remote[0].task, core.opts.timeout, scale_atom::value, done_atom::value,
                  static_cast<int32_t>(ps), static_cast<int32_t>(workers),
                  moved ? *moved : int64_t{-1}, why)
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
    if (!moved) {
      for (auto& r : joining) r.close();
      return moved.error();
    }
    clock = *moved;
    if (failed) {  // the shards have moved: this worker goes on with them all the same
      detail::go_on(im, ps, workers, clock, std::move(joining));  // its error second to that one
      return failed;
    }
  } else {
    auto reached = detail::reach_spares(im, before, ps);
    if (!reached) return reached.error();
    joining = std::move(*reached);
  }
  if (auto err = detail::go_on(im, ps, workers, clock, std::move(joining))) return err;
  return clock;
}

} // namespace actorps
