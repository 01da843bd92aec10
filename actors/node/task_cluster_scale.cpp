// task_cluster::scale (actors/ps.hpp): a loop of the user's own, one process per task, changes
// its number of shards. Every worker task asks ps:0 at the same point of its loop with no call
// in flight (ps_task.cpp's scale_rendezvous); once all have, worker 0 reaches the spare ps tasks
// the change takes in, takes the shards' states at one clock, cuts them for the new number as
// local_cluster::scale does (cluster_scale.cpp) and hands each shard its part, then tells ps:0
// how it went, which tells the others. Each worker then talks to the shards of the new size
// (reaching the spares itself) and tells the ps tasks the change removed that it is done: once
// every worker has, their serve() returns 0.
#include "actors/node/task_cluster_impl.hpp"

#include "actors/guard/connect.hpp"
#include "actors/protocol/placement_change.hpp"

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
/// handed to the shards of that size (`joining`: those beyond the ones in use); the clock.
caf::expected<int64_t> move_state(task_cluster::impl& im, int ps,
                                  const std::vector<remote_shard>& joining) {
  auto& core = *im.core;
  auto cut = cut_states(core, ps, core.spec.workers);
  if (!cut) return cut.error();
  std::vector<ps_shard_actor> shards;
  for (int s = 0; s < ps; ++s)
    shards.push_back(s < static_cast<int>(im.remote.size())
                       ? core.shards[static_cast<std::size_t>(s)]
                       : joining[static_cast<std::size_t>(s) - im.remote.size()].handle);
  if (auto err = restore_cut(core, shards, *cut)) return err;
  return cut->clock;
}

/// Every worker once the state has moved: the shards of the new size from its next call on,
/// and done said to the ps tasks beyond it.
caf::error go_on(task_cluster::impl& im, int ps, std::vector<remote_shard> joining) {
  auto& core = *im.core;
  train_spec after;
  try {
    after = resized_spec(core.spec, ps);
  } catch (const std::invalid_argument& e) {
    return refused(e.what());
  }
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

caf::expected<int64_t> task_cluster::scale(int ps) {
  auto& im = *impl_;
  if (is_ps()) throw std::logic_error("scale() is for a worker task; this is " + im.task.text());
  if (im.remote.empty())
    return caf::make_error(caf::sec::runtime_error, "not connected: call worker() first");
  auto& core = *im.core;
  const int listed = im.cluster.count("ps");
  if (ps > listed)
    return detail::refused("TF_CONFIG lists " + std::to_string(listed) + " ps task(s), not "
                           + std::to_string(ps));
  if (auto err = detail::check_scale(core, ps, core.spec.workers)) return err;
  const auto worker = static_cast<int32_t>(im.task.index);
  caf::scoped_actor self{*core.sys};
  // Every worker waits here until all have asked (they train meanwhile): no timeout.
  int64_t clock = 0;
  caf::error failed;
  self->request(im.remote[0].task, caf::infinite, scale_atom::value, worker,
                static_cast<int32_t>(ps))
    .receive([&](int64_t c) { clock = c; }, [&](caf::error& err) { failed = std::move(err); });
  if (failed) return failed;
  const int before = static_cast<int>(im.remote.size());
  std::vector<remote_shard> joining;
  if (worker == 0) {  // every worker waits: worker 0 moves the state, and says how it went
    auto moved = [&]() -> caf::expected<int64_t> {
      auto reached = detail::reach_spares(im, before, ps);
      if (!reached) return reached.error();
      joining = std::move(*reached);
      return detail::move_state(im, ps, joining);
    }();
    const std::string why = moved ? "" : describe(moved.error());
    self->request(im.remote[0].task, core.opts.timeout, scale_atom::value, done_atom::value,
                  static_cast<int32_t>(ps), moved ? *moved : int64_t{-1}, why)
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
    if (!moved) {
      for (auto& r : joining) r.close();
      return moved.error();
    }
    clock = *moved;
    if (failed) {  // the shards have moved: this worker goes on with them all the same
      detail::go_on(im, ps, std::move(joining));  // its own error second to that one
      return failed;
    }
  } else {
    auto reached = detail::reach_spares(im, before, ps);
    if (!reached) return reached.error();
    joining = std::move(*reached);
  }
  if (auto err = detail::go_on(im, ps, std::move(joining))) return err;
  return clock;
}

} // namespace actorps
