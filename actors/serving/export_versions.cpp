#include "actors/serving/export_versions.hpp"

#include "actors/data/load_split.hpp"
#include "actors/serving/export_chain.hpp"

#include <chrono>
#include <memory>

namespace actorps {

namespace {

/// The chain being written: what the next delta builds on.
class chain_writer {
public:
  chain_writer(export_request request, int full_every)
      : request_(std::move(request)), full_every_(full_every) {}

  export_written write(int64_t clock, const std::vector<wire_buffer>& shards) {
    auto params = shard_state_parameters(shards, request_.spec,
                                         "the shards' state at clock " + std::to_string(clock));
    const bool ctr = ctr_kind_of(request_.spec.model).has_value();
    if (!ctr || !previous_ || deltas_ + 1 >= full_every_) return full(clock, std::move(params));
    return delta(clock, std::move(params));
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
    deltas_ = 0;
    if (!params.tables.empty()) previous_ = std::make_unique<gathered_rows>(std::move(params.tables[0]));
    return {done.version, false, done.capnp_bytes + done.onnx_bytes + done.vocab_bytes
                                   + done.metadata_bytes};
  }

  export_written delta(int64_t clock, trained_parameters params) {
    const auto dim = request_.spec.model.sparse_tables[0].config.dim;
    auto changes = diff_rows(*previous_, params.tables[0], dim);
    const auto changed = make_ctr_model(request_.spec.model, params.dense, changes.rows);
    chain_position pos;
    pos.delta = true;
    pos.clock = clock;
    pos.base_version = base_.version;
    pos.base_clock = base_.clock;
    pos.base_sha256 = base_.sha256;
    pos.predecessor_version = predecessor_.version;
    pos.predecessor_clock = predecessor_.clock;
    pos.predecessor_sha256 = predecessor_.sha256;
    const auto done = write_delta_version(request_.dir, changed, changes.removed, pos,
                                          std::chrono::system_clock::now());
    predecessor_ = {done.version, clock, done.model_sha256};
    ++deltas_;
    *previous_ = std::move(params.tables[0]);
    return {done.version, true, done.capnp_bytes + done.metadata_bytes};
  }

  struct link {
    uint64_t version = 0;
    int64_t clock = -1;
    std::string sha256;
  };

  export_request request_;
  int full_every_;
  std::shared_ptr<const dataset> test_;
  std::unique_ptr<gathered_rows> previous_;  // the table as the newest version left it
  link base_, predecessor_;
  int deltas_ = 0;
};

} // namespace

export_config export_versions(const export_request& request, int64_t every, int full_every) {
  export_config cfg;
  cfg.every = every;
  auto writer = std::make_shared<chain_writer>(request, full_every);
  cfg.write = [writer](int64_t clock, const std::vector<wire_buffer>& shards) {
    return writer->write(clock, shards);
  };
  return cfg;
}

} // namespace actorps
