#include "apps/training_flags.hpp"

#include "apps/log_level_flag.hpp"
#include "apps/value_bound_flags.hpp"

namespace po = boost::program_options;

namespace actorps {

const char* const prometheus_port_help =
  "serve this process's figures at http://HOST:PORT/metrics for Prometheus (unauthenticated; "
  "HOST: the task's listening address, --bind's when given; simulate: 127.0.0.1)";

namespace {

/// The flags whose being typed matters (training_flags::given): those whose default is the
/// model's (model_plugin::defaults: a typed one overrides its field alone), and --export-every,
/// whose typed 0 is refused.
constexpr const char* typed_flags_noted[] = {
  "optimizer", "lr", "momentum", "batch", "epochs",
  "table-optimizer", "table-lr", "admit-after", "evict-after", "max-rows-per-shard",
  "admission-memory", "export-every"};

[[noreturn]] void refuse(const char* flag, const std::string& value, const std::string& what) {
  throw usage_error(std::string("--") + flag + " " + what + " (got " + value + ")");
}

/// A flag's value into an optional field of the run's options (unset until typed).
template <class T>
po::typed_value<T>* into(std::optional<T>& field) {
  return po::value<T>()->notifier([&field](const T& x) { field = x; });
}

/// The optimizer the flags set, made when the first of --optimizer, --lr, --momentum is read
/// (which of them were typed: note_given_flags).
optimizer_config& optimizer_of(training_flags& o) {
  return o.optimizer ? *o.optimizer : o.optimizer.emplace();
}

} // namespace

void add_training_options(po::options_description& desc, training_flags& o) {
  desc.add_options()
    ("ps", po::value(&o.ps)->default_value(o.ps), "number of parameter shards")
    ("workers", po::value(&o.workers)->default_value(o.workers), "number of workers")
    ("model", po::value(&o.model)->default_value("784-256-128-10"),
     "MLP layer widths, input first (the input must match the data: 784 for fashion-mnist); "
     "or sparse-lr[:ftrl|:adagrad], logistic regression over the sparse features of --dataset "
     "libsvm:PATH; or, on --dataset criteo:PATH, lr (one weight per categorical value and per "
     "integer feature) or dlrm[:DIM[:BOTTOM[:TOP]]] (embeddings of DIM floats, MLP widths like "
     "64-32)")
    ("dataset", po::value(&o.dataset)->default_value(o.dataset),
     "fashion-mnist | synthetic (a seeded 10-class problem that trains in seconds) | csv:PATH "
     "(a label column first, then numeric features; header optional; plain or gzip) | "
     "libsvm:PATH (label 0/1 or -1/+1, then index:value pairs; plain or gzip; each worker "
     "streams its part; for --model sparse-lr) | criteo:PATH (Criteo's click-log TSV: label, "
     "I1-I13, C1-C26; plain or gzip; each worker streams its part; for --model lr, dlrm, wdl or "
     "deepfm) | "
     "tsv:PATH or csv:PATH with --schema (your own log, streamed as criteo:). "
     "A PATH that is a directory is read as one stream: its files in name order (hidden ones "
     "left out), each worker its part of each file")
    ("test", po::value(&o.test)->default_value(o.test),
     "the test file of --dataset csv:PATH, libsvm:PATH or criteo:PATH (the same format as the "
     "training file; a directory: its files in name order)")
    ("schema", po::value(&o.schema)->default_value(o.schema),
     "the feature schema (JSON) of --dataset tsv:PATH or csv:PATH: each column's type and "
     "transform (actors/data/SCHEMA_FORMAT.md)")
    ("gauc-group", po::value(&o.gauc_group)->default_value(o.gauc_group),
     "a categorical field of --dataset criteo:PATH (C1..C26), or a key field of --schema, whose "
     "value groups the test rows: the evaluations add GAUC, the AUC within each group averaged "
     "by rows")
    ("slice-auc", po::value(&o.slice_auc)->default_value(o.slice_auc),
     "a field as --gauc-group takes, whose value cuts the test rows into slices: the "
     "evaluations add the AUC of the 10 slices holding most rows (and the rows of the rest)")
    ("data-dir", po::value(&o.data_dir)->default_value(o.data_dir),
     "directory holding the Fashion-MNIST IDX files (Debian's dataset-fashion-mnist)")
    ("synthetic-rows", po::value(&o.synthetic_rows)->default_value(o.synthetic_rows),
     "training rows of the synthetic dataset")
    ("synthetic-test-rows", po::value(&o.synthetic_test_rows)->default_value(o.synthetic_test_rows),
     "test rows of the synthetic dataset")
    ("epochs", into(o.epochs),
     "passes over the training set (each worker runs its shard this many times); default: the "
     "model's (5; dlrm 1)")
    ("steps", po::value(&o.steps)->default_value(o.steps),
     "clocks per worker; overrides --epochs when > 0")
    ("batch", into(o.batch),
     "minibatch rows per worker and clock; default: the model's (64; dlrm 256)")
    ("optimizer", po::value<std::string>()->notifier([&o](const std::string& name) {
       auto kind = parse_optimizer_kind(name);
       if (!kind) refuse("optimizer", name, "must be " + optimizer_names());
       optimizer_of(o).kind = *kind;
     }),
     "sgd | momentum | adam | adagrad (applied by the shards); default: the model's "
     "(momentum; dlrm adam)")
    ("lr", po::value<double>()->notifier([&o](double lr) {
       optimizer_of(o).learning_rate = static_cast<float>(lr);
     }),
     "learning rate; default: the model's for its optimizer (dlrm: adam at 0.003), else, and "
     "with 0, the optimizer's default (sgd 0.1, momentum 0.05, adam 0.001, adagrad 0.05). "
     "ssp/async apply each push with lr / workers")
    ("lr-schedule", po::value<std::string>()->default_value("cosine")->notifier(
       [&o](const std::string& name) {
         o.schedule = parse_lr_schedule(name);
         if (!o.schedule) refuse("lr-schedule", name, "must be constant, cosine or linear");
       }),
     "constant | cosine | linear: decay from --lr to 5 % of it over the run, evaluated at the "
     "shards from the global clock")
    ("momentum", po::value<double>()->notifier([&o](double m) {
       optimizer_of(o).momentum = static_cast<float>(m);
     }), "momentum coefficient; default: the model's (0.9)")
    ("mode", po::value<std::string>()->default_value(to_string(o.mode))->notifier(
       [&o](const std::string& name) {
         auto mode = parse_consistency(name);
         if (!mode) refuse("mode", name, "must be sync, ssp or async");
         o.mode = *mode;
       }),
     "consistency: sync (average all workers, apply once per clock) | ssp (stale-synchronous, "
     "bounded by --staleness) | async")
    ("staleness", po::value(&o.staleness)->default_value(o.staleness),
     "ssp bound S: a worker at clock c gets parameters once every live worker finished c - S "
     "(only with --mode ssp: sync and async refuse it)")
    ("block-floats", po::value(&o.block_floats)->default_value(o.block_floats),
     "tensors are cut into blocks of at most this many floats, balanced over the shards")
    ("wire-precision", po::value(&o.wire_precision)->default_value(o.wire_precision),
     "fp32 | bf16: the precision workers push their dense gradients in (bf16 rounds each to "
     "the nearest bfloat16 and halves the push's bytes; parameters and sparse rows stay fp32)")
    ("eval-every", po::value(&o.eval_every)->default_value(100),
     "evaluate on the test set every N global clocks (0: only at the end)")
    ("metrics", po::value(&o.metrics),
     "write one JSON object per event to this file (JSONL; with --resume appended to, so "
     "restarts leave one history)")
    ("tensorboard", po::value(&o.tensorboard_dir),
     "write the run's figures as TensorBoard scalars to a new events.out.tfevents.* file in "
     "this directory (created if missing; a resumed run adds another): tensorboard --logdir DIR")
    ("prometheus-port", po::value(&o.prometheus_port), prometheus_port_help)
    ("seed", po::value(&o.seed)->default_value(o.seed), "seed for parameters, data order, synthetic data")
    ("table-optimizer", po::value(&o.table_optimizer),
     "sgd | adagrad | adam | ftrl: the row optimizer of every sparse table, with that "
     "optimizer's defaults (without it each table keeps the model's: FTRL for sparse-lr)")
    ("table-lr", into(o.table_lr),
     "learning rate of every sparse table's rows (FTRL: alpha); without it the model's (dlrm "
     "0.1) or the --table-optimizer's default")
    ("admit-after", into(o.admit_after),
     "N >= 1: a key of a sparse table gets its row on its N-th push, the pushes before only "
     "counted (1: the first push creates it); default: the model's (dlrm 20)")
    ("evict-after", into(o.evict_after),
     "CLOCKS: a sparse table's row not pushed for that many global clocks is evicted (its key "
     "reads as never seen again, and starts anew); 0: rows stay (the default)")
    ("max-rows-per-shard", into(o.max_rows_per_shard),
     "N: each sparse table keeps about N rows per shard at most, evicting the least recently "
     "pushed (approximately, by a sweep between requests); 0: no bound (the default)")
    ("admission-memory", into(o.admission_memory),
     "BYTES: each sparse table's keys awaiting admission (--admit-after 2..255) are counted in a "
     "count-min sketch of at most BYTES per shard, which may admit a key early and forgets by "
     "halving; 0: an exact counter per key (the default), dropped after --evict-after quiet "
     "clocks")
    ("threads", po::value(&o.threads)->default_value(o.threads),
     "CAF scheduler threads (0: one per core); workers and the evaluator have their own")
    ("slow", po::value(&o.slow)->composing(),
     "worker:I=MS adds MS milliseconds to every step of worker I (repeatable): a straggler")
    ("request-timeout", po::value(&o.request_timeout)->default_value(o.request_timeout),
     "seconds any request between actors may take before it fails")
    ("no-progress", po::bool_switch()->notifier([&o](bool off) { o.progress = !off; }),
     "do not draw the progress line")
    ("backend", po::value(&o.backend)->default_value(o.backend),
     "auto | cpu | cuda: where workers run forward/backward (auto: CUDA when a usable GPU "
     "exists, else the CPU)")
    ("gpus", po::value(&o.gpus)->default_value(o.gpus),
     "comma-separated CUDA device ids; workers are assigned round-robin")
    ("checkpoint-dir", po::value(&o.checkpoint_dir),
     "write checkpoints under this directory (ckpt-<clock>/: one Cap'n Proto file per shard, "
     "run.capnp, MANIFEST.json with sizes and CRC-32s, written last); a lost shard sends the "
     "run back to the newest one")
    ("checkpoint-every", po::value(&o.checkpoint_every)->default_value(o.checkpoint_every),
     "global clocks between checkpoints (0: only at the end of training)")
    ("full-checkpoint-every", po::value(&o.full_checkpoint_every)
       ->default_value(o.full_checkpoint_every),
     "every N-th checkpoint is full; those between hold only the sparse rows changed since the "
     "previous one (a chain: actors/storage/CHECKPOINT_FORMAT.md); 1: every one full")
    ("keep", po::value(&o.keep)->default_value(o.keep),
     "complete checkpoints of this run to keep; older ones are removed once a newer one is "
     "complete (another run's are never touched)")
    ("resume", po::value(&o.resume)->implicit_value(""),
     "continue from the newest valid checkpoint in DIR (a ckpt-* directory or a directory "
     "holding them; default: --checkpoint-dir); a corrupt newest one is reported and skipped. "
     "It must be of the same run (model, dataset and its size, seed, shards, workers, batch, "
     "optimizer, sparse tables) and before the run's end (a larger --epochs extends a run). "
     "auto: the newest valid checkpoint of this run in --checkpoint-dir, or a fresh start when "
     "there is none, so that one command serves the first start and every restart")
    ("init-from", po::value(&o.init_from),
     "start from the parameters, sparse tables and optimizer state of another run's newest "
     "valid checkpoint in DIR (yesterday's model for today's data): the model and its tables "
     "must match; clock, data position and schedule start fresh (a checkpoint of this run "
     "that --resume finds wins)")
    ("checkpoint-writer", po::value(&o.writer)->default_value(o.writer),
     "shards: each shard writes its own file into --checkpoint-dir, which must then be one "
     "filesystem shared by the chief and every ps task (one host, NFS, a shared volume); chief: "
     "the shards send their files to the chief, which writes the whole checkpoint (only the "
     "chief's host needs the directory; every checkpoint's bytes cross the network)")
    ("checkpoint-key", po::value(&o.checkpoint_key),
     "a file holding the cluster's secret key (16-4096 bytes, e.g. openssl rand -hex 32): "
     "every checkpoint's manifest lists its files' SHA-256 and is signed with HMAC-SHA256, "
     "and a checkpoint not signed with this key is refused (--resume, rollbacks)")
    ("overwrite-checkpoints", po::bool_switch(&o.overwrite_checkpoints),
     "a --checkpoint-dir holding another run's checkpoints is refused; with this flag they are "
     "moved to DIR/superseded-<time>/ (nothing is deleted) and the run starts")
    ("max-replacements", po::value(&o.max_replacements)->default_value(o.max_replacements),
     "times a lost worker (or the evaluator) is replaced before the run goes on without it")
    ("export-dir", po::value(&o.export_dir),
     "after a successful run, export the model to DIR/<version>/ (model.capnp, model.onnx, "
     "metadata.json; version = the largest existing + 1, never overwritten)")
    ("export-every", po::value(&o.export_every),
     "also write an export version into --export-dir every CLOCKS global clocks while "
     "training: a full one, then deltas of it (the rows changed since the version before, the "
     "keys removed, the dense tensors) for serving to apply (actors/serving/EXPORT_FORMAT.md)")
    ("full-export-every", po::value(&o.full_export_every)->default_value(o.full_export_every),
     "with --export-every: every N-th version full, the ones between deltas (1: all full)");
  add_value_bound_options(desc, o.bounds);
  add_log_level_option(desc, o.log_level);
}

void note_given_flags(const po::variables_map& vm, training_flags& flags) {
  flags.given.clear();
  for (const char* name : typed_flags_noted)
    if (vm.count(name) > 0 && !vm[name].defaulted()) flags.given.insert(name);
  flags.resume_given = vm.count("resume") > 0;
  flags.staleness_given = vm.count("staleness") > 0 && !vm["staleness"].defaulted();
}

void add_fault_options(po::options_description& desc, training_flags& o) {
  desc.add_options()
    ("kill", po::value(&o.kill)->composing(),
     "fault injection (repeatable, or several joined by ','): ROLE:I@clock=C kills that actor with exit_reason::kill once "
     "the global clock reaches C, ROLE:I@seconds=T that long after training began (ROLE: "
     "worker, ps, evaluator); ps:I@resize=K kills shard I as the K-th --resize moves the "
     "shards' rows (a shard it spawned gets its part again; an older one: back to a "
     "checkpoint; ps:I@clock=C with I beyond the shards then, the shard a growth spawned "
     "for its rows copied ahead); process@checkpoint=C SIGKILLs this process once the first shard "
     "file of the checkpoint at clock C is on disk (a crash between shard files); "
     "disk@checkpoint=C makes writing the checkpoint at clock C fail as a full disk would")
    ("resize", po::value(&o.resize)->composing(),
     "change the number of parameter shards or workers while training (repeatable, in clock "
     "order): ps=N@clock=C goes on from clock C on N shards, the fewest sparse buckets and dense "
     "blocks changing shard; workers=N@clock=C on N workers, every minibatch not trained yet "
     "shared out among them (each still trained once); ps=N,workers=M@clock=C both; every "
     "worker pauses before C, so each push is applied once in every mode; with --replicas 1 "
     "the new shards get standbys; export versions go on (one process)");
  add_copy_ahead_option(desc, o);
  add_replica_options(desc, o);
}

void add_copy_ahead_option(po::options_description& desc, training_flags& o) {
  desc.add_options()
    ("copy-ahead", po::value(&o.copy_ahead)->default_value(o.copy_ahead),
     "how a change of shards (--resize, actorps scale) moves the sparse rows: always copies "
     "them to their new shard (across processes: the spare ps task's) while training goes "
     "on, the change set that far ahead (the stop at the clock takes only what changed "
     "since), never moves them at the clock, auto copies ahead in one process when a core is "
     "left beyond the workers and shards (on busy cores the copy slows training more than it "
     "shortens the stop)");
}

void add_stream_options(po::options_description& desc, training_flags& o) {
  desc.add_options()
    ("follow", po::bool_switch(&o.follow),
     "with --dataset libsvm:DIR or criteo:DIR: after the directory's last file, go on into the "
     "files that appear in it later (names after the last one read; a visible name is a "
     "complete file: write under a hidden .NAME and rename it into place) until SIGTERM, "
     "SIGINT or --stop-file; the run then ends as at its last clock (final checkpoint, "
     "evaluation, summary, exit 0). The stream is read once: no --epochs")
    ("stop-file", po::value(&o.stop_file),
     "with --follow: once this file exists the workers train what they were given (at most 64 "
     "clocks more) and the run ends as at its last clock");
}

void add_replica_options(po::options_description& desc, training_flags& o) {
  desc.add_options()
    ("replicas", po::value(&o.replicas)->default_value(o.replicas),
     "hot standbys per parameter shard: 0 (a lost shard sends the run back to the newest "
     "checkpoint) or 1 (each shard has a standby holding every acknowledged push; a lost "
     "primary's standby takes over and nothing is lost, then a new standby is built; one "
     "process per task: ps:i's standby runs in ps:(i+1) mod P, so it needs 2 ps tasks or more)");
}

} // namespace actorps
