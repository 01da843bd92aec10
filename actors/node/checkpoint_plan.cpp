#include "actors/node/checkpoint_plan.hpp"

#include "actors/ps/lr_schedule.hpp"
#include "actors/storage/checkpoint_lineage.hpp"
#include "actors/storage/checkpoint_resize.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "actors/storage/checkpoint_workers.hpp"
#include "actors/storage/run_identity.hpp"

#include <cstdio>
#include <filesystem>
#include <optional>

namespace fs = std::filesystem;

namespace actorps {

namespace {

run_checkpoint run_of(const loaded_checkpoint& ckpt, const std::string& flag) {
  auto run = decode_run_checkpoint(ckpt.run_bytes);  // verified when it was loaded
  if (!run) throw usage_error(flag + ": " + ckpt.dir + ": " + describe(run.error()));
  return *run;
}

void say_skipped(const loaded_checkpoint& ckpt) {
  for (const auto& why : ckpt.skipped) std::fprintf(stderr, "resume: skipping %s\n", why.c_str());
}

/// --resume [DIR]: the newest valid checkpoint there, which must be this run's.
loaded_checkpoint named_checkpoint(const std::string& path, const run_identity& current,
                                   float max_parameter, const std::string& key) {
  if (path.empty()) throw usage_error("--resume needs a directory (or --checkpoint-dir)");
  loaded_checkpoint ckpt;
  try {
    ckpt = load_newest_checkpoint(path, {}, max_parameter, key);
  } catch (const checkpoint_error& e) {
    throw usage_error(std::string("--resume: ") + e.what());
  }
  say_skipped(ckpt);
  auto why = identity_difference(run_of(ckpt, "--resume"), current);
  if (!why.empty()) throw usage_error("--resume: " + ckpt.dir + " cannot continue this run: " + why);
  return ckpt;
}

/// --resume auto: the newest valid checkpoint of this run in --checkpoint-dir, if any.
std::optional<loaded_checkpoint> own_checkpoint(const std::string& dir, const run_identity& current,
                                                float max_parameter, const std::string& key) {
  if (dir.empty()) throw usage_error("--resume auto needs --checkpoint-dir");
  try {
    auto ckpt = load_newest_checkpoint(dir, [&](const run_checkpoint& run) {
      auto why = identity_difference(run, current);
      return why.empty() ? why : "another run's: " + why;
    }, max_parameter, key);
    say_skipped(ckpt);
    return ckpt;
  } catch (const checkpoint_error& e) {
    std::printf("resume auto: no checkpoint of this run in %s: starting fresh\n", dir.c_str());
    std::string why = e.what();
    if (why.find("(no ckpt-* directories)") == std::string::npos)
      std::fprintf(stderr, "resume: %s\n", why.c_str());
    return std::nullopt;
  }
}

/// A checkpoint at or past the end has nothing left to train: resuming it would end at once
/// (and count a whole run's samples over no time).
void require_before_end(const loaded_checkpoint& ckpt, int64_t steps, const std::string& flag) {
  if (ckpt.clock < steps) return;
  throw usage_error(flag + ": " + ckpt.dir + " is at clock " + std::to_string(ckpt.clock)
                    + " and this run ends at clock " + std::to_string(steps)
                    + ": nothing is left to train (a larger --epochs or --steps extends the run)");
}

/// The learning-rate schedule decays over the run's length: a resume that changes the length
/// changes the rate from the checkpoint's clock on, which is said here.
void describe_new_length(const run_checkpoint& saved, const train_spec& spec, int64_t steps) {
  if (saved.steps == steps) return;
  std::printf("resume: the run is now %lld clocks long (it was %lld)",
              static_cast<long long>(steps), static_cast<long long>(saved.steps));
  if (spec.schedule == lr_schedule::constant) {
    std::printf("; the learning rate is constant\n");
    return;
  }
  auto before = scheduled_learning_rate(saved.spec.schedule, saved.spec.optimizer.learning_rate,
                                        saved.clock, saved.steps);
  auto now = scheduled_learning_rate(spec.schedule, spec.optimizer.learning_rate, saved.clock,
                                     steps);
  std::printf("; the %s learning-rate schedule is re-evaluated over the new length, so at clock "
              "%lld the rate is %.6g (the saved run's was %.6g) and it decays from there to %g %% "
              "at clock %lld\n",
              to_string(spec.schedule), static_cast<long long>(saved.clock), double(now),
              double(before), double(lr_final_fraction * 100), static_cast<long long>(steps));
}

/// --checkpoint-dir must hold no other run's checkpoints: this run would never prune them and
/// a later --resume could take them. --overwrite-checkpoints moves them aside.
void claim_directory(const std::string& dir, const std::string& run_id, const run_identity& current,
                     bool overwrite, const std::string& key) {
  auto others = other_runs_checkpoints(dir, run_id);
  if (others.empty()) return;
  if (overwrite) {
    try {
      auto aside = move_aside(dir, others);
      std::printf("--overwrite-checkpoints: moved %zu checkpoint(s) of another run to %s\n",
                  others.size(), aside.c_str());
    } catch (const checkpoint_error& e) {
      throw usage_error(std::string("--overwrite-checkpoints: ") + e.what());
    }
    return;
  }
  std::string whose = run_id_of(others.front());
  std::string how;
  try {
    auto run = decode_run_checkpoint(
        load_checkpoint(others.front(), default_max_parameter, key).run_bytes);
    if (run) how = identity_difference(*run, current);
  } catch (const checkpoint_error& e) {
    how = e.what();
  }
  if (how.empty()) how = "the same configuration, started separately";
  throw usage_error("--checkpoint-dir " + dir + " holds " + std::to_string(others.size())
                    + " checkpoint(s) of another run (newest " + others.front().filename().string()
                    + ", run " + (whose.empty() ? "unknown" : whose) + ": " + how
                    + "); --resume continues that run, --overwrite-checkpoints moves them to "
                    + dir + "/superseded-<time>/, or choose another --checkpoint-dir");
}

/// --init-from DIR: the newest valid checkpoint there, of a model with the same tensors, block
/// cut, shards, optimizer and sparse tables (the workers and the data may differ), its shards
/// set back to clock 0 with nothing pending: the run starts from its state, afresh.
loaded_checkpoint starting_point(const std::string& path, const train_spec& current,
                                 float max_parameter, const std::string& key) {
  loaded_checkpoint ckpt;
  try {
    ckpt = load_newest_checkpoint(path, {}, max_parameter, key);
  } catch (const checkpoint_error& e) {
    throw usage_error(std::string("--init-from: ") + e.what());
  }
  say_skipped(ckpt);
  auto saved = run_of(ckpt, "--init-from");
  auto same_workers = current;
  same_workers.workers = saved.spec.workers;
  if (auto why = incompatibility(saved.spec, same_workers); !why.empty())
    throw usage_error("--init-from: " + ckpt.dir + " cannot start this run: " + why);
  for (auto& file : ckpt.shards) {
    auto view = decode_shard_checkpoint(file);  // verified when it was loaded
    if (!view) throw usage_error("--init-from: " + ckpt.dir + ": " + describe(view.error()));
    view->clock = 0;
    view->newest_clock = -1;
    file = encode_shard_checkpoint(view->spec, *view);
  }
  std::printf("starting from the state of %s (clock %lld of run %s)\n", ckpt.dir.c_str(),
              static_cast<long long>(ckpt.clock), saved.run_id.c_str());
  ckpt.clock = 0;
  ckpt.skipped.clear();
  return ckpt;
}

/// Another number of workers than the checkpoint's, or workers that had plans: each goes on
/// with its share of what no worker had trained (checkpoint_workers.hpp), the run as long as the
/// longest share, the rate per minibatch and the schedule's place as they were
/// (train_spec::lr_workers). Whether so.
bool resume_data(const run_checkpoint& saved, chief_config& c) {
  resumed_data data;
  try {
    data = resumed_plans(saved, c.spec.workers);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("--workers: ") + e.what());
  }
  if (data.plans.empty()) return false;
  int64_t untrained = 0;
  for (const auto& plan : data.plans) untrained += plan_batches(plan);
  if (saved.spec.workers != c.spec.workers)
    std::printf("resume: the %lld minibatches the checkpoint's %d workers had not trained are "
                "shared out among %d\n",
                static_cast<long long>(untrained), saved.spec.workers, c.spec.workers);
  c.steps = saved.clock + data.longest;
  if (c.spec.checkpoint_every == c.spec.total_clocks) c.spec.checkpoint_every = c.steps;
  c.spec.total_clocks = saved.spec.total_clocks;
  c.spec.lr_workers = saved.spec.lr_workers > 0 ? saved.spec.lr_workers : saved.spec.workers;
  c.spec.schedule_from = saved.clock;
  c.spec.schedule_batches = data.batches_trained;
  c.checkpoints.resume_plans = std::move(data.plans);
  c.checkpoints.resume_batches = data.batches_trained;
  return true;
}

} // namespace

std::string dataset_identity(const data_source& d) {
  auto absolute = [](const std::string& path) { return fs::weakly_canonical(fs::absolute(path)).string(); };
  switch (d.what) {
    case data_source::kind::fashion_mnist: return "fashion-mnist:" + absolute(d.dir);
    case data_source::kind::synthetic: return "synthetic";
    case data_source::kind::csv: return "csv:" + absolute(d.train_path);
    case data_source::kind::libsvm: return "libsvm:" + absolute(d.train_path);
    case data_source::kind::criteo: return "criteo:" + absolute(d.train_path);
    case data_source::kind::logs:
      return std::string(d.delimiter == ',' ? "csv:" : "tsv:") + absolute(d.train_path)
             + " schema " + absolute(d.schema_path);
  }
  return "unknown";
}

void plan_checkpoints(const training_flags& o, training_plan& plan) {
  auto& c = plan.chief;
  auto& ck = c.checkpoints;
  if (ck.dataset.empty()) ck.dataset = dataset_identity(plan.data);  // else the library's
  const run_identity current{c.spec, c.batch, ck.dataset, c.train_rows, ck.files};
  std::optional<loaded_checkpoint> resume;
  const std::string flag = o.resume == "auto" ? "--resume auto" : "--resume";
  if (o.resume_given && o.resume == "auto")
    resume = own_checkpoint(ck.dir, current, c.bounds.max_parameter, ck.key);
  else if (o.resume_given)
    resume = named_checkpoint(o.resume.empty() ? ck.dir : o.resume, current,
                              c.bounds.max_parameter, ck.key);
  if (resume) {
    auto saved = run_of(*resume, flag);
    ck.run_id = saved.run_id;
    // Resizes planned before its clock were made before it was taken, one at its clock is made
    // by the restore (the checkpoint due at a resize's clock is written before the change): the
    // run goes on at the size they leave, so the command that was stopped resumes as it is.
    for (const auto& r : c.resizes)
      if (r.at_clock <= resume->clock) {
        if (r.shards > 0) c.spec.shards = r.shards;
        if (r.workers > 0) c.spec.workers = r.workers;
        std::printf("resume: --resize %s %s clock %lld\n", to_string(r).c_str(),
                    r.at_clock < resume->clock ? "was made before"
                                               : "is made by restoring the checkpoint of its",
                    static_cast<long long>(resume->clock));
      }
    const bool shared_out = resume_data(saved, c);
    require_before_end(*resume, c.steps, flag);
    // the checkpoint's placement goes on (at another shard count: its buckets moved the least)
    try {
      c.spec.bucket_shards = resumed_placement(saved.spec, c.spec.shards);
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string("--ps: ") + e.what());
    }
    if (saved.spec.shards != c.spec.shards)
      std::printf("resume: the checkpoint's %d shards are cut into %d\n", saved.spec.shards,
                  c.spec.shards);
    std::printf("resuming from %s (clock %lld)\n", resume->dir.c_str(),
                static_cast<long long>(resume->clock));
    if (!shared_out) describe_new_length(saved, c.spec, c.steps);
  } else {
    ck.run_id = new_run_id();
    if (!o.init_from.empty())
      ck.init_from = starting_point(o.init_from, c.spec, c.bounds.max_parameter, ck.key);
  }
  if (!ck.dir.empty())
    claim_directory(ck.dir, ck.run_id, current, o.overwrite_checkpoints, ck.key);
  ck.resume = std::move(resume);
}

} // namespace actorps
