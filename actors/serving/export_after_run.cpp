#include "actors/serving/export_after_run.hpp"

#include "actors/model/mlp_plugin.hpp"
#include "actors/serving/ctr_model.hpp"
#include "actors/serving/model_export.hpp"
#include "actors/serving/versioned_dir.hpp"
#include "actors/serving/export_versions.hpp"
#include "actors/data/load_split.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "kernels/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace actorps {

namespace {

/// The dense parameters (flat, model order) and every sparse row from one ShardParameters
/// snapshot per shard; the rows are there when the chief was asked for them (final_rows).
trained_parameters gather_parameters(const train_spec& planned, const run_summary& summary) {
  const auto spec = spec_at_end(planned, summary);  // a --resize changes the shards' cut
  const block_layout layout(spec);
  if (summary.final_parameters.size() != static_cast<std::size_t>(layout.shards()))
    throw std::runtime_error("the run returned " + std::to_string(summary.final_parameters.size())
                             + " parameter snapshots for " + std::to_string(layout.shards())
                             + " shards");
  const auto& tables = spec.model.sparse_tables;
  trained_parameters out;
  out.dense.assign(layout.total_floats(), std::nanf(""));
  std::vector<std::vector<gathered_rows>> parts(tables.size());
  for (const auto& bytes : summary.final_parameters) {
    const wire_buffer snapshot{bytes};  // shares the summary's bytes, which the view points into
    auto view = scatter_shard_parameters(snapshot, layout, out.dense.data());
    if (!view)
      throw std::runtime_error("a final parameter snapshot is malformed: "
                               + describe(view.error()));
    if (view->sparse.size() != tables.size())
      throw std::runtime_error("a final snapshot carries rows of "
                               + std::to_string(view->sparse.size()) + " sparse tables, the model "
                               "has " + std::to_string(tables.size()));
    for (const auto& rows : view->sparse) {
      if (rows.table >= tables.size())
        throw std::runtime_error("a final snapshot carries rows of an unknown table");
      parts[rows.table].push_back({{rows.keys, rows.keys + rows.key_count},
                                   {rows.values, rows.values + rows.value_count}});
    }
  }
  if (!all_finite(out.dense.data(), out.dense.size()))  // NaN left: a shard's snapshot came twice
    throw std::runtime_error("the final snapshots do not cover every parameter with finite values");
  for (std::size_t t = 0; t < tables.size(); ++t)
    out.tables.push_back(merge_rows(parts[t], tables[t].config.dim));
  return out;
}

} // namespace

shard_states shard_state_changes(const std::vector<wire_buffer>& shards, const train_spec& spec,
                                 const std::string& origin) {
  const block_layout layout(spec);
  if (shards.size() != static_cast<std::size_t>(layout.shards()))
    throw std::invalid_argument(origin + " holds " + std::to_string(shards.size())
                                + " shard files for " + std::to_string(layout.shards())
                                + " shards");
  const auto& tables = spec.model.sparse_tables;
  shard_states out;
  out.params.dense.assign(layout.total_floats(), std::nanf(""));
  out.removed.resize(tables.size());
  std::vector<std::vector<gathered_rows>> parts(tables.size());
  for (int32_t s = 0; s < layout.shards(); ++s) {
    const auto file = origin + "/" + shard_file_name(s);
    auto view = decode_shard_checkpoint(shards[s]);
    if (!view) throw std::invalid_argument(file + ": " + describe(view.error()));
    if (auto err = check_shard_checkpoint(*view, layout, s))
      throw std::invalid_argument(file + ": " + describe(err));
    if (s == 0) out.since = view->delta_since;
    if (view->delta_since != out.since)  // a shard restored since the version before, say
      throw std::invalid_argument(
        file + ": " + (view->delta_since < 0 ? std::string("the whole state")
                                             : "a delta since clock "
                                                 + std::to_string(view->delta_since))
        + ", " + origin + "/" + shard_file_name(0) + ": "
        + (out.since < 0 ? std::string("the whole state")
                         : "a delta since clock " + std::to_string(out.since)));
    for (const auto& b : view->blocks)  // ids and sizes are the layout's (checked above)
      std::copy_n(b.values, b.count, out.params.dense.begin() + layout.blocks()[b.id].offset);
    if (view->sparse.size() != tables.size())
      throw std::invalid_argument(file + ": rows of " + std::to_string(view->sparse.size())
                                  + " sparse tables, the model has "
                                  + std::to_string(tables.size()));
    for (std::size_t t = 0; t < tables.size(); ++t) {
      auto& rows = view->sparse[t];
      out.rows += rows.keys.size();
      out.removed[t].insert(out.removed[t].end(), rows.removed_keys.begin(),
                            rows.removed_keys.end());
      parts[t].push_back({std::move(rows.keys), std::move(rows.values)});
    }
  }
  if (!all_finite(out.params.dense.data(), out.params.dense.size()))  // a block no file holds
    throw std::invalid_argument(origin + ": its shard files do not cover every parameter with "
                                "finite values");
  for (std::size_t t = 0; t < tables.size(); ++t) {
    std::sort(out.removed[t].begin(), out.removed[t].end());  // shards own disjoint keys
    try {
      out.params.tables.push_back(merge_rows(parts[t], tables[t].config.dim));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(origin + ": table " + tables[t].name + ": " + e.what());
    }
  }
  return out;
}

trained_parameters shard_state_parameters(const std::vector<wire_buffer>& shards,
                                          const train_spec& spec, const std::string& origin) {
  return shard_state_changes(shards, spec, origin).params;
}

std::string export_dataset_name(const data_source& data) {
  switch (data.what) {
    case data_source::kind::fashion_mnist: return "fashion-mnist";
    case data_source::kind::synthetic: return "synthetic";
    case data_source::kind::csv: return "csv";
    case data_source::kind::libsvm: return "libsvm";
    case data_source::kind::criteo: return "criteo";
    case data_source::kind::logs: return data.delimiter == ',' ? "csv+schema" : "tsv+schema";
  }
  return "unknown";
}

void print_export(const export_result& done) {
  if (done.onnx_bytes == 0 && done.test.auc >= 0) {  // a schema's CTR model: no model.onnx
    std::printf("  exported to %s in %.2f s (model.capnp %zu bytes with its schema, vocab/ %zu "
                "bytes, metadata.json; no model.onnx): test AUC %.4f, test logloss %.4f on %lld "
                "rows\n",
                done.path.c_str(), done.seconds, done.capnp_bytes, done.vocab_bytes,
                done.test.auc, done.test.loss, static_cast<long long>(done.test.rows));
    return;
  }
  if (done.onnx_bytes == 0) {  // a program's model (format 3): no network, not evaluated here
    std::printf("  exported to %s in %.2f s (model.capnp %zu bytes, metadata.json): tensors and "
                "rows, for the program that trained it\n",
                done.path.c_str(), done.seconds, done.capnp_bytes);
    return;
  }
  if (done.test.auc >= 0) {
    std::printf("  exported to %s in %.2f s (model.capnp %zu bytes, model.onnx %zu bytes, vocab/ "
                "%zu bytes, metadata.json): test AUC %.4f, test logloss %.4f on %lld rows\n",
                done.path.c_str(), done.seconds, done.capnp_bytes, done.onnx_bytes,
                done.vocab_bytes, done.test.auc, done.test.loss,
                static_cast<long long>(done.test.rows));
    return;
  }
  std::printf("  exported to %s (model.capnp %zu bytes, model.onnx %zu bytes, metadata.json): "
              "test accuracy %.4f, test loss %.4f on %lld rows\n",
              done.path.c_str(), done.capnp_bytes, done.onnx_bytes, done.test.accuracy,
              done.test.loss, static_cast<long long>(done.test.rows));
}

void prepare_export(const export_request& request, int64_t every, int full_every,
                    chief_config& chief, const std::string& option) {
  if (request.dir.empty()) return;
  // Any model exports after its run (one actorps has no network for: its tensors and rows,
  // format 3); versions while training are served as they come, so only by known networks.
  if (every > 0 && !mlp_layers(request.spec.model) && !ctr_kind_of(request.spec.model))
    throw std::invalid_argument(option + ": the model " + request.spec.model.name + " has no "
                                "network actorps serves; export versions while training are "
                                "for MLPs and CTR models (the export after the run takes any)");
  if (every > 0 && schema_shaped(request.spec.model))  // a version's writer has no schema
    throw std::invalid_argument(option + ": versions while training serve Criteo's layout; "
                                + request.spec.model.name + " reads a log's schema and exports "
                                "after its run only");
  chief.final_rows = true;  // the export needs every sparse row, not only the dense values
  try {
    staged_version probe(request.dir);  // removed again at once: only proves we can write
  } catch (const versioned_dir_error& e) {
    throw std::invalid_argument(option + " cannot be written: " + e.what());
  }
  if (every > 0) chief.exports = export_versions(request, every, full_every);
}

export_result export_final(const export_request& request, const run_summary& summary,
                           std::shared_ptr<const dataset> test) {
  const auto params = gather_parameters(request.spec, summary);
  if (!test) test = load_split(request.data, false);
  run_info run;
  run.source = request.source;
  run.dataset = export_dataset_name(request.data);
  run.test_path = request.data.test_path;
  run.schema_path = request.data.schema_path;
  run.delimiter = request.data.delimiter;
  run.batch = request.batch;
  run.clocks = summary.clocks;
  run.samples = summary.samples;
  run.wall_s = summary.wall_s;
  run.backend = summary.backend;
  return export_trained_model(request.spec, params, run, *test, request.dir);
}

int export_run(const export_request& request, const run_summary& summary,
               std::shared_ptr<const dataset> test) {
  if (request.dir.empty()) return 0;
  try {
    print_export(export_final(request, summary, std::move(test)));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorps %s: the run succeeded but exporting it to %s failed: %s\n",
                 request.source.c_str(), request.dir.c_str(), e.what());
    return 1;
  }
}

} // namespace actorps
