#include "actors/serving/export_versions.hpp"

#include "actors/data/load_split.hpp"
#include "actors/protocol/checkpoint_codec.hpp"
#include "actors/serving/export_chain.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>

namespace actorps {

namespace {

/// The chain being written: what the next delta builds on. It keeps nothing of the table: the
/// shards send a delta version's changed rows and tombstones themselves (shard_snapshots.cpp),
/// so that a delta costs what changed, not the table.
class chain_writer {
public:
  explicit chain_writer(export_request request) : request_(std::move(request)) {}

  export_written write(int64_t clock, const std::vector<wire_buffer>& shards) {
    follow_placement(shards);
    auto states = shard_state_changes(shards, request_.spec,
                                      "the shards' state at clock " + std::to_string(clock));
    export_written done;
    uint64_t removed = 0;
    for (const auto& keys : states.removed) removed += keys.size();
    if (states.since < 0) {
      done = full(clock, std::move(states.params));
    } else {
      // Asked with the clock of the version before; anything else is not its delta (that
      // version failed, say).
      if (predecessor_.clock < 0 || states.since != predecessor_.clock)
        throw std::invalid_argument(
          "the shards' states at clock " + std::to_string(clock) + " are deltas since clock "
          + std::to_string(states.since) + ", the chain's newest version is of clock "
          + std::to_string(predecessor_.clock));
      done = delta(clock, std::move(states.params), std::move(states.removed));
    }
    done.rows = states.rows;
    done.removed = removed;
    return done;
  }

private:
  export_written full(int64_t clock, trained_parameters params) {
    if (!test_) test_ = load_split(request_.data, false);
    run_info run;
    run.source = request_.source;
    run.dataset = export_dataset_name(request_.data);
    run.test_path = request_.data.test_path;
    run.batch = request_.batch;
    run.clocks = clock;
    run.samples = clock * request_.batch * request_.spec.workers;  // every worker at `clock`
    run.backend = "unknown";  // the workers report it with the summary, after the run
    chain_position pos;
    pos.clock = clock;
    const auto done =
      export_trained_model(request_.spec, params, run, *test_, request_.dir, chain_json(pos));
    base_ = {done.version, clock, done.model_sha256};
    predecessor_ = base_;
    export_written out;
    out.version = done.version;
    out.bytes = done.capnp_bytes + done.onnx_bytes + done.vocab_bytes + done.metadata_bytes;
    return out;
  }

  export_written delta(int64_t clock, trained_parameters params,
                       std::vector<std::vector<uint64_t>> removed) {
    const auto changed = make_ctr_model(request_.spec.model, params.dense, params.tables);
    chain_position pos;
    pos.delta = true;
    pos.clock = clock;
    pos.base_version = base_.version;
    pos.base_clock = base_.clock;
    pos.base_sha256 = base_.sha256;
    pos.predecessor_version = predecessor_.version;
    pos.predecessor_clock = predecessor_.clock;
    pos.predecessor_sha256 = predecessor_.sha256;
    removed.resize(2);  // the first table's tombstones, and wdl's and deepfm's "wide"'s
    const auto done = write_delta_version(request_.dir, changed, removed[0], pos,
                                          std::chrono::system_clock::now(), removed[1]);
    predecessor_ = {done.version, clock, done.model_sha256};
    export_written out;
    out.version = done.version;
    out.delta = true;
    out.bytes = done.capnp_bytes + done.metadata_bytes;
    return out;
  }

  /// A run whose shard count changed (--resize) sends the states of its new placement, which
  /// each state's spec records: the versions cut the model as the shards now hold it. The model
  /// must be the one asked for.
  void follow_placement(const std::vector<wire_buffer>& shards) {
    // The placement changes with the shard count only: a state is decoded once after a resize.
    if (shards.empty() || static_cast<int>(shards.size()) == request_.spec.shards) return;
    auto view = decode_shard_checkpoint(shards.front());
    if (!view) return;  // shard_state_changes says what is wrong with it
    const auto& now = view->spec;
    auto& spec = request_.spec;
    if (now.shards == spec.shards && now.bucket_shards == spec.bucket_shards
        && now.block_shards == spec.block_shards)
      return;
    if (now.model.name != spec.model.name)
      throw std::invalid_argument("the shards' states are of model " + now.model.name + ", not "
                                  + spec.model.name);
    spec.shards = now.shards;
    spec.bucket_shards = now.bucket_shards;
    spec.block_shards = now.block_shards;
  }

  struct link {
    uint64_t version = 0;
    int64_t clock = -1;
    std::string sha256;
  };

  export_request request_;
  std::shared_ptr<const dataset> test_;
  link base_, predecessor_;
};

} // namespace

export_config export_versions(const export_request& request, int64_t every, int full_every) {
  export_config cfg;
  cfg.every = every;
  // only CTR models have delta versions (an MLP's parameters are all dense)
  cfg.full_every = ctr_kind_of(request.spec.model) ? full_every : 1;
  auto writer = std::make_shared<chain_writer>(request);
  cfg.write = [writer](int64_t clock, const std::vector<wire_buffer>& shards) {
    return writer->write(clock, shards);
  };
  return cfg;
}

} // namespace actorps
