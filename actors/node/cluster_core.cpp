#include "actors/node/cluster_core.hpp"

#include <caf/all.hpp>

namespace actorps::detail {

train_spec shards_spec(const model_spec& model, const cluster_options& opts) {
  train_spec spec;
  spec.model = model;
  spec.shards = opts.ps;
  spec.workers = opts.workers;
  spec.mode = opts.mode;
  spec.staleness = opts.staleness;
  spec.optimizer = opts.optimizer.value_or(optimizer_config{});  // momentum, unless set
  if (!(spec.optimizer.learning_rate > 0))
    spec.optimizer.learning_rate = default_learning_rate(spec.optimizer.kind);
  spec.schedule = schedule_or_default(opts.schedule, opts.total_clocks);
  spec.total_clocks = opts.total_clocks;
  spec.seed = opts.seed;
  spec.block_floats = opts.block_floats;
  place_buckets(spec);
  return spec;
}

caf::error init_shards(cluster_core& core) {
  auto initial = initial_values(core.spec.model, core.spec.seed);
  caf::scoped_actor self{*core.sys};
  for (int s = 0; s < static_cast<int>(core.shards.size()); ++s) {
    std::vector<float> part(core.layout->shard_floats(s));
    core.layout->gather(s, initial.data(), part.data());
    caf::error failed;
    self->request(core.shards[s], core.opts.timeout, init_atom::value,
                  encode_shard_init(core.spec, s, *core.layout, part.data()))
      .receive([](caf::ok_atom) {}, [&](caf::error& err) { failed = std::move(err); });
    if (failed)
      return caf::make_error(caf::sec::runtime_error, "shard " + std::to_string(s)
                                                         + " refused its init: " + describe(failed));
  }
  return {};
}

caf::expected<std::vector<float>> snapshot_shards(cluster_core& core) {
  std::vector<float> flat(core.layout->total_floats(), 0.0f);
  caf::scoped_actor self{*core.sys};
  caf::error failed;
  for (auto& shard : core.shards)
    self->request(shard, core.opts.timeout, snapshot_atom::value)
      .receive(
        [&](const wire_buffer& snap) {
          if (auto ok = scatter_shard_parameters(snap, *core.layout, flat.data()); !ok)
            failed = ok.error();
        },
        [&](caf::error& err) { failed = std::move(err); });
  if (failed) return failed;
  return flat;
}

} // namespace actorps::detail
