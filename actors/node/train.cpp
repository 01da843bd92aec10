// train(): a whole run in this process, the runtime owning the loop (actors/ps.hpp), planned
// by the command's planner (training_plan.hpp) from train_options as flags.
#include "actors/data/load_split.hpp"
#include "actors/node/training_plan.hpp"
#include "actors/deploy/simulation.hpp"
#include "actors/serving/export_after_run.hpp"

namespace actorps {

namespace {

caf::error bad_option(const std::string& what) { return make_error(errc::invalid_spec, what); }

/// What train() checks beyond the command's flags: its own encodings, and the data given in
/// memory where the planner reads `source`.
caf::error library_refusal(const train_options& o) {
  if (o.export_every < 0) return bad_option("export_every must be 0 (none) or more");
  // A version while training is scored on the test split its writer reads from the source.
  if (o.export_every > 0 && o.test)
    return bad_option("export_every: the versions while training read the test split from "
                      "source; name it there rather than in memory (test)");
  if (!o.slice_auc.empty() && o.test)
    return bad_option("slice_auc: " + o.slice_auc + " cuts a test split read from `source`, "
                      "not one given in memory");
  return {};
}

/// The export after the run and the versions while training, as the command's chief sets
/// them up (plan_export), or the refusal naming the option.
export_request plan_exports(training_plan& plan) {
  export_request request;
  request.dir = plan.export_dir;
  request.source = "train";
  request.spec = plan.chief.spec;
  request.data = plan.data;
  request.batch = plan.chief.batch;
  try {
    prepare_export(request, plan.export_every, plan.full_export_every, plan.chief, "--export-dir");
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  return request;
}

} // namespace

caf::expected<run_summary> train(const train_options& o) {
  if (auto err = library_refusal(o)) return err;
  auto source = o.source;  // the slice field cuts the test split as it is read
  std::shared_ptr<const dataset> train_split = o.train, test_split = o.test;
  try {
    if (!o.slice_auc.empty()) set_slice_field(source, o.slice_auc);
    if (!train_split) train_split = load_split(source, true);
    if (!test_split) test_split = load_split(source, false);
  } catch (const std::exception& e) {
    return bad_option(e.what());
  }
  if (train_split->rows < 1 || test_split->rows < 1) return bad_option("a data split has no rows");
  if (test_split->cols != train_split->cols)
    return bad_option("train and test have different widths");
  known_data data;
  data.source = source;
  data.train_rows = train_split->rows;
  data.cols = train_split->cols;
  data.classes = std::max(train_split->classes, test_split->classes);
  if (o.train) data.identity = "in-memory";
  simulation_options sim;
  export_request exporting;
  try {
    auto plan = plan_library_run(o, data);
    exporting = plan_exports(plan);
    sim.chief = std::move(plan.chief);
    sim.scheduler_threads = plan.scheduler_threads;
    sim.chief.source = plan.data;
  } catch (const std::exception& e) {  // usage_error: the flag the option is typed as
    return bad_option(e.what());
  }
  sim.chief.train = std::move(train_split);
  sim.chief.test = std::move(test_split);
  const auto test = sim.chief.test;
  auto summary = simulate(std::move(sim));
  // A run that lost every worker did not train to its end: nothing to export (as the command).
  if (!summary || exporting.dir.empty() || summary->workers_lost) return summary;
  try {
    export_final(exporting, *summary, test);
  } catch (const std::exception& e) {
    return make_error(errc::checkpoint_failed, "export_dir: the run succeeded but exporting it "
                                               "to " + exporting.dir + " failed: " + e.what());
  }
  return summary;
}

caf::expected<std::vector<float>> final_parameters(const run_summary& summary,
                                                   const train_options& opts) {
  train_spec spec;
  try {  // the spec as planned; the data's shape plays no part in it
    known_data data;
    data.source = opts.source;
    const auto flags = flags_of(opts);
    spec = build_training_plan(flags, check_training_flags(flags, &data)).chief.spec;
  } catch (const std::exception& e) {
    return bad_option(e.what());
  }
  block_layout layout(spec_at_end(spec, summary));  // a --resize changes the shards' cut
  std::vector<float> flat(layout.total_floats(), 0.0f);
  if (summary.final_parameters.size() != static_cast<std::size_t>(layout.shards()))
    return make_error(errc::missing_block, "the summary holds "
                                             + std::to_string(summary.final_parameters.size())
                                             + " shard snapshots");
  for (const auto& snap : summary.final_parameters)
    if (auto ok = scatter_shard_parameters(wire_buffer{snap}, layout, flat.data()); !ok)
      return ok.error();
  return flat;
}

} // namespace actorps
