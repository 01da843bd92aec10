// train(): a whole run in this process, the runtime owning the loop (actors/ps.hpp).
#include "actors/chief/role_id.hpp"
#include "actors/chief/tensorboard_writer.hpp"
#include "actors/data/feature_schema.hpp"
#include "actors/data/load_split.hpp"
#include "actors/node/cluster_core.hpp"
#include "actors/node/plan_run.hpp"
#include "actors/serving/export_after_run.hpp"
#include "actors/storage/checkpoint_lineage.hpp"
#include "actors/storage/checkpoint_resize.hpp"
#include "actors/storage/checkpoint_signing.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "actors/storage/run_identity.hpp"

#include <cmath>

namespace actorps {

namespace {

caf::error bad_option(const std::string& what) { return make_error(errc::invalid_spec, what); }

/// The settings in effect: the model's defaults under what `o` sets (training_defaults.hpp).
training_settings settings_of(const train_options& o, const model_plugin& model) {
  training_choices chosen;
  if (o.optimizer) {
    chosen.optimizer = o.optimizer->kind;
    if (o.optimizer->learning_rate != 0) chosen.lr = o.optimizer->learning_rate;
    if (o.optimizer->kind == optimizer_kind::momentum) chosen.momentum = o.optimizer->momentum;
  }
  chosen.batch = o.batch;
  chosen.epochs = o.epochs;
  chosen.table_lr = o.table_lr;
  chosen.admit_after = o.admit_after;
  chosen.evict_after = o.evict_after;
  chosen.max_rows = o.max_rows_per_shard;
  chosen.admission_memory = o.admission_memory;
  return resolve_training(model.spec().name, model.defaults(), chosen);
}

/// The run's spec from the options, the settings in effect and the model's plug-in, or why they
/// cannot describe a run.
caf::expected<train_spec> spec_of(const train_options& o, const training_settings& settings,
                                  const model_plugin& model) {
  if (o.ps < 1) return bad_option("ps must be at least 1");
  if (o.workers < 1) return bad_option("workers must be at least 1");
  if (o.staleness < 0) return bad_option("staleness must be 0 or more");
  cluster_options shards;  // the shards' part of the options; the rest is the chief's
  shards.ps = o.ps;
  shards.workers = o.workers;
  shards.mode = o.mode;
  shards.staleness = o.staleness;
  shards.optimizer = dense_optimizer(settings, o.optimizer.value_or(optimizer_config{}));
  shards.schedule = o.schedule;  // resolved once the run's clocks are known (train())
  shards.seed = o.seed;
  const auto admit = settings.values.admit_after;
  if (admit != -1 && (admit < 1 || admit > int64_t(UINT32_MAX)))
    return bad_option("admit_after must be at least 1 (or -1: each table's own)");
  if (!(settings.values.table_lr >= 0)) return bad_option("table_lr must be positive (or 0)");
  const auto evict = settings.values.evict_after;
  if (evict < -1 || evict > int64_t(UINT32_MAX))
    return bad_option("evict_after must be 0 (none) or a number of clocks (or -1: each "
                      "table's own)");
  if (settings.values.max_rows < -1)
    return bad_option("max_rows_per_shard must be 0 (no bound) or more (or -1: each table's own)");
  if (settings.values.admission_memory < -1)
    return bad_option("admission_memory must be 0 (exact counters) or a number of bytes (or -1: "
                      "each table's own)");
  auto tensors = model.spec();
  try {
    apply_table_settings(settings, tensors);
  } catch (const std::invalid_argument& e) {
    return bad_option(e.what());
  }
  return detail::shards_spec(tensors, shards);
}

/// The --model plug-in (shaped by a log's schema, as the command's flags shape it), or the error
/// naming why it cannot be built.
caf::expected<std::unique_ptr<model_plugin>> plugin_of(const train_options& o) {
  try {
    auto model = make_model(o.model);
    if (o.source.what == data_source::kind::logs && !o.source.schema_path.empty()) {
      const auto schema = load_feature_schema(o.source.schema_path);
      if (auto shaped = model->for_schema(schema)) model = std::move(shaped);
      if (auto why = model->check_schema(schema); !why.empty())
        return bad_option("model " + o.model + " does not fit schema " + o.source.schema_path
                          + ": " + why);
    }
    return model;
  } catch (const std::exception& e) {
    return bad_option(e.what());
  }
}

/// The checkpoints of a run from train_options: where and how often, and the checkpoint it
/// resumes from (which must be this run's and not at its end), as `--resume DIR` has them.
caf::error plan_checkpoints(const train_options& o, chief_config& c) {
  auto& ck = c.checkpoints;
  ck.dir = o.checkpoint_dir;
  ck.every = o.checkpoint_every;
  if (o.checkpoint_every < 0) return bad_option("checkpoint_every must be 0 or more");
  if (o.full_checkpoint_every < 1) return bad_option("full_checkpoint_every must be at least 1");
  ck.full_every = o.full_checkpoint_every;
  // the clocks at which the shards keep their state for a checkpoint
  c.spec.checkpoint_every = ck.dir.empty() ? 0 : (ck.every > 0 ? ck.every : c.steps);
  ck.dataset = o.train ? "in-memory" : o.source.train_path.empty() ? o.source.dir
                                                                   : o.source.train_path;
  if (!o.checkpoint_key.empty()) {
    try {
      ck.key = read_checkpoint_key(o.checkpoint_key);
    } catch (const checkpoint_error& e) {
      return bad_option(std::string("checkpoint_key: ") + e.what());
    }
  }
  if (o.resume.empty()) {
    ck.run_id = new_run_id();
    return {};
  }
  loaded_checkpoint saved;
  try {
    saved = load_newest_checkpoint(o.resume, {}, c.bounds.max_parameter, ck.key);
  } catch (const checkpoint_error& e) {
    return bad_option(std::string("resume: ") + e.what());
  }
  auto run = decode_run_checkpoint(saved.run_bytes);
  if (!run) return run.error();
  const run_identity current{c.spec, c.batch, ck.dataset, c.train_rows, {}};
  if (auto why = identity_difference(*run, current); !why.empty())
    return bad_option("resume: " + saved.dir + " cannot continue this run: " + why);
  if (saved.clock >= c.steps)
    return bad_option("resume: " + saved.dir + " is at clock " + std::to_string(saved.clock)
                      + " and this run ends at clock " + std::to_string(c.steps));
  ck.run_id = run->run_id;
  try {
    c.spec.bucket_shards = resumed_placement(run->spec, c.spec.shards);
  } catch (const std::invalid_argument& e) {
    return bad_option(std::string("ps: ") + e.what());
  }
  ck.resume = std::move(saved);
  return {};
}

/// The planned kills of train_options, checked as --kill checks them.
caf::error plan_kills(const train_options& o, chief_config& c) {
  for (const auto& k : o.kills) {
    auto kind = role_kind_named(k.role);
    auto what = "kill " + k.role + ":" + std::to_string(k.index) + "@clock="
                + std::to_string(k.at_clock);
    if (!kind) return bad_option(what + ": the role is one of worker, ps, evaluator");
    int limit = *kind == role_kind::worker ? o.workers : *kind == role_kind::ps ? o.ps : 1;
    if (k.index < 0 || k.index >= limit)
      return bad_option(what + ": the index is 0.." + std::to_string(limit - 1));
    if (k.at_clock < 0) return bad_option(what + ": the clock is 0 or more");
    planned_kill planned;
    planned.target = *kind;
    planned.index = k.index;
    planned.at_clock = k.at_clock;
    c.kills.push_back(planned);
  }
  return {};
}

/// The exports of a run from train_options, checked as --export-dir, --export-every and
/// --full-export-every are: the request of the export after the run (no directory: none), with
/// the chief set up for it and for the versions while training.
caf::expected<export_request> plan_exports(const train_options& o, chief_config& c) {
  if (o.export_every < 0) return bad_option("export_every must be 0 (none) or more");
  if (o.full_export_every < 1) return bad_option("full_export_every must be at least 1");
  if (o.export_every > 0 && o.export_dir.empty())
    return bad_option("export_every needs export_dir");
  // A version while training is scored on the test split its writer reads from the source.
  if (o.export_every > 0 && o.test)
    return bad_option("export_every: the versions while training read the test split from "
                      "source; name it there rather than in memory (test)");
  export_request request;
  request.dir = o.export_dir;
  request.source = "train";
  request.spec = c.spec;
  request.data = o.source;
  request.batch = c.batch;
  try {
    prepare_export(request, o.export_every, o.full_export_every, c, "export_dir");
  } catch (const std::invalid_argument& e) {
    return bad_option(e.what());
  }
  return request;
}

} // namespace

namespace detail {

caf::expected<simulation_options> plan_run(const train_options& o, int64_t train_rows, int cols,
                                           int classes) {
  auto model = plugin_of(o);
  if (!model) return model.error();
  const auto settings = settings_of(o, **model);
  auto spec = spec_of(o, settings, **model);
  if (!spec) return spec.error();
  if (auto why = (*model)->check_source(o.source.what); !why.empty())
    return bad_option(o.model + " does not fit the data: " + why);
  if (auto why = (*model)->check_data(cols, classes); !why.empty())
    return bad_option(o.model + " does not fit the data: " + why);
  const int batch = settings.values.batch;
  const double epochs = settings.values.epochs;
  if (batch < 1) return bad_option("batch must be at least 1");
  // Epochs count the rows really there: each worker's shard in whole batches.
  const int64_t per_epoch = data_shard::rows_of(train_rows, 0, o.workers) / batch;
  if (per_epoch < 1) return bad_option("batch is larger than a worker's shard of the data");
  if (o.steps < 0 || !(epochs > 0) || !std::isfinite(epochs))
    return bad_option("epochs must be positive (or steps > 0)");
  simulation_options sim;
  auto& c = sim.chief;
  c.spec = *spec;
  c.settings = settings;
  c.batch = batch;
  c.steps = o.steps > 0 ? o.steps
                        : std::max<int64_t>(1, std::llround(epochs * double(per_epoch)));
  c.spec.total_clocks = c.steps;
  c.spec.schedule = schedule_or_default(o.schedule, c.steps);
  c.eval_every = o.eval_every;
  c.train_rows = train_rows;
  c.progress = o.progress;
  try {
    c.metrics = std::make_shared<metrics_file>(o.metrics, !o.resume.empty());
  } catch (const std::exception& e) {
    return bad_option(std::string("metrics: ") + e.what());
  }
  try {
    if (!o.tensorboard_dir.empty())
      c.metrics->add_observer(std::make_shared<tensorboard_writer>(o.tensorboard_dir));
  } catch (const std::exception& e) {
    return bad_option(std::string("tensorboard_dir: ") + e.what());
  }
  sim.scheduler_threads = o.threads;
  return sim;
}

} // namespace detail

caf::expected<run_summary> train(const train_options& o) {
  if (!o.slice_auc.empty()) {  // the field named becomes the source's slice field
    auto resolved = o;
    try {
      resolved.source.slice_field = key_field_index(o.source, o.slice_auc);
    } catch (const std::invalid_argument& e) {
      return bad_option(std::string("slice_auc: ") + e.what());
    }
    if (o.test)
      return bad_option("slice_auc: " + o.slice_auc + " cuts a test split read from `source`, "
                        "not one given in memory");
    resolved.slice_auc.clear();
    return train(resolved);
  }
  std::shared_ptr<const dataset> train_split = o.train, test_split = o.test;
  try {
    if (!train_split) train_split = load_split(o.source, true);
    if (!test_split) test_split = load_split(o.source, false);
  } catch (const std::exception& e) {
    return bad_option(e.what());
  }
  if (train_split->rows < 1 || test_split->rows < 1) return bad_option("a data split has no rows");
  if (test_split->cols != train_split->cols)
    return bad_option("train and test have different widths");
  auto sim = detail::plan_run(o, train_split->rows, train_split->cols,
                              std::max(train_split->classes, test_split->classes));
  if (!sim) return sim.error();
  sim->chief.train = std::move(train_split);
  sim->chief.test = std::move(test_split);
  sim->chief.source = o.source;
  if (auto err = plan_checkpoints(o, sim->chief)) return err;
  if (auto err = plan_kills(o, sim->chief)) return err;
  if (o.replicas != 0 && o.replicas != 1) return bad_option("replicas must be 0 or 1");
  sim->chief.replicas = o.replicas;
  auto exporting = plan_exports(o, sim->chief);
  if (!exporting) return exporting.error();
  for (const auto& r : o.resizes) sim->chief.resizes.push_back({r.ps, r.at_clock, r.workers});
  if (auto why = resize_refusal(sim->chief); !why.empty()) return bad_option("resizes: " + why);
  const auto test = sim->chief.test;
  auto summary = simulate(std::move(*sim));
  // A run that lost every worker did not train to its end: nothing to export (as the command).
  if (!summary || exporting->dir.empty() || summary->workers_lost) return summary;
  try {
    export_final(*exporting, *summary, test);
  } catch (const std::exception& e) {
    return make_error(errc::checkpoint_failed, "export_dir: the run succeeded but exporting it "
                                               "to " + exporting->dir + " failed: " + e.what());
  }
  return summary;
}

caf::expected<std::vector<float>> final_parameters(const run_summary& summary,
                                                   const train_options& opts) {
  auto model = plugin_of(opts);
  if (!model) return model.error();
  auto spec = spec_of(opts, settings_of(opts, **model), **model);
  if (!spec) return spec.error();
  block_layout layout(spec_at_end(*spec, summary));  // a --resize changes the shards' cut
  std::vector<float> flat(layout.total_floats(), 0.0f);
  if (summary.final_parameters.size() != static_cast<std::size_t>(layout.shards()))
    return make_error(errc::missing_block, "the summary holds "
                                             + std::to_string(summary.final_parameters.size())
                                             + " shard snapshots");
  for (const auto& snap : summary.final_parameters)
    if (auto ok = scatter_shard_parameters(snap, layout, flat.data()); !ok) return ok.error();
  return flat;
}

} // namespace actorps
