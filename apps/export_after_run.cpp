#include "apps/export_after_run.hpp"

#include "apps/export/model_export.hpp"
#include "apps/export/versioned_dir.hpp"
#include "actors/data/load_split.hpp"
#include "kernels/optimizer.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace actorps {

namespace {

/// The flat parameters (mlp layout) from one ShardParameters snapshot per shard.
std::vector<float> gather_parameters(const train_spec& spec, const run_summary& summary) {
  const block_layout layout(spec);
  if (summary.final_parameters.size() != static_cast<std::size_t>(layout.shards()))
    throw std::runtime_error("the run returned " + std::to_string(summary.final_parameters.size())
                             + " parameter snapshots for " + std::to_string(layout.shards())
                             + " shards");
  std::vector<float> params(layout.total_floats(), std::nanf(""));
  for (const auto& snapshot : summary.final_parameters)
    if (auto ok = scatter_shard_parameters(snapshot, layout, params.data()); !ok)
      throw std::runtime_error("a final parameter snapshot is malformed: " + describe(ok.error()));
  if (!all_finite(params.data(), params.size()))  // NaN left: a shard's snapshot came twice
    throw std::runtime_error("the final snapshots do not cover every parameter with finite values");
  return params;
}

} // namespace

void print_export(const export_result& done) {
  std::printf("  exported to %s (model.capnp %zu bytes, model.onnx %zu bytes, metadata.json): "
              "test accuracy %.4f, test loss %.4f on %lld rows\n",
              done.path.c_str(), done.capnp_bytes, done.onnx_bytes, done.test.accuracy,
              done.test.loss, static_cast<long long>(done.test.rows));
}

export_request plan_export(const training_plan& plan, const std::string& source) {
  export_request request;
  request.dir = plan.export_dir;
  request.source = source;
  request.spec = plan.chief.spec;
  request.data = plan.data;
  request.batch = plan.chief.batch;
  if (request.dir.empty()) return request;
  try {
    staged_version probe(request.dir);  // removed again at once: only proves we can write
  } catch (const versioned_dir_error& e) {
    throw usage_error(std::string("--export-dir cannot be written: ") + e.what());
  }
  return request;
}

int export_run(const export_request& request, const run_summary& summary,
               std::shared_ptr<const dataset> test) {
  if (request.dir.empty()) return 0;
  try {
    const auto params = gather_parameters(request.spec, summary);
    if (!test) test = load_split(request.data, false);
    run_info run;
    run.source = request.source;
    run.dataset = request.data.what == data_source::kind::fashion_mnist ? "fashion-mnist"
                                                                        : "synthetic";
    run.batch = request.batch;
    run.clocks = summary.clocks;
    run.samples = summary.samples;
    run.wall_s = summary.wall_s;
    run.backend = summary.backend;
    const auto done = export_model(request.spec, params, run, *test, request.dir);
    print_export(done);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorps %s: the run succeeded but exporting it to %s failed: %s\n",
                 request.source.c_str(), request.dir.c_str(), e.what());
    return 1;
  }
}

} // namespace actorps
