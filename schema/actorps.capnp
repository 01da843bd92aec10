@0xcc423255aa6efcb0;
# actorps wire format: every payload that crosses an actor boundary is one of these messages,
# carried in CAF as a single immutable byte buffer (actors/wire.hpp). Float data is a `Data`
# field of little-endian float32 that the receiver reads in place.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("actorps::wire");

enum Mode {
  sync @0;    # the shard averages every live worker's gradient for a clock, then applies once
  ssp @1;     # stale-synchronous: a pull for clock c waits until min clock >= c - staleness
  async @2;   # pulls are answered at once
}

enum Optimizer {
  sgd @0;
  momentum @1;
  adam @2;
  adagrad @3;
}

# The model and how it is cut into blocks. Every role derives the same tensors, blocks and
# block-to-shard assignment from this (actors/model_spec.hpp); nobody ships the table around.
struct ModelSpec {
  obsoleteLayers @0 :List(UInt32);  # unused since models are named tensors (was: MLP widths)
  blockFloats @1 :UInt32;      # a tensor is cut into blocks of at most this many floats
  numShards @2 :UInt32;
  name @3 :Text;               # the model plug-in and its arguments: "mlp:784-256-128-10"
  tensors @4 :List(TensorSpec);  # the dense tensors, in layout order
  sparseTables @5 :List(SparseTableSpec);  # tables of keyed rows
}

# A table of keyed rows (actors/ps/sparse_table_config.hpp): uint64 keys, rows of `dim` float32
# created on first push, each with its own optimizer state.
struct SparseTableSpec {
  enum Init {
    zeros @0;
    uniform @1;                # in [-scale, scale), seeded by (run seed, table, key)
    normal @2;                 # standard deviation `scale`, seeded the same way
  }
  enum Optimizer {
    sgd @0;
    adagrad @1;
    adam @2;                   # with a step count per row
    ftrl @3;                   # FTRL-proximal: learningRate is alpha
  }
  name @0 :Text;
  dim @1 :UInt32;
  init @2 :Init;
  scale @3 :Float32;
  admitAfter @4 :UInt32;       # 0 or 1: the first push creates a row; N: the N-th
  optimizer @5 :Optimizer;
  learningRate @6 :Float32;
  initialAccumulator @7 :Float32;  # adagrad
  epsilon @8 :Float32;         # adagrad, adam
  beta1 @9 :Float32;           # adam
  beta2 @10 :Float32;          # adam
  ftrlBeta @11 :Float32;
  l1 @12 :Float32;             # ftrl
  l2 @13 :Float32;             # ftrl
  evictAfter @14 :UInt32;      # 0: rows stay; C: a row not pushed for C global clocks goes
  maxRows @15 :UInt64;         # 0: no bound; N: a shard evicts the least recently pushed
                               # rows beyond N (approximately: see sparse_table::sweep)
  admissionMemory @16 :UInt64; # 0: exact pending counts; B: a count-min sketch of B bytes
}

# One named dense tensor: row-major float32 of the given shape.
struct TensorSpec {
  enum Init {
    zeros @0;
    uniform @1;                # in [-scale, scale), drawn from the run's one seeded stream
  }
  name @0 :Text;               # "dense0/kernel"
  shape @1 :List(UInt32);      # [784, 256]
  init @2 :Init;
  scale @3 :Float64;
}

# Everything a shard needs to know about the run.
struct TrainSpec {
  model @0 :ModelSpec;
  mode @1 :Mode;
  staleness @2 :Int32;         # ssp bound s; ignored by sync and async
  workers @3 :UInt32;
  optimizer @4 :Optimizer;
  learningRate @5 :Float32;
  momentum @6 :Float32;
  beta1 @7 :Float32;
  beta2 @8 :Float32;
  epsilon @9 :Float32;
  seed @10 :UInt64;
  lrSchedule @11 :LrSchedule;
  totalClocks @12 :Int64;      # clocks per worker; the schedules decay over them
  checkpointEvery @13 :Int64;  # shards keep their state at every multiple of it (and at
                               # totalClocks) for the chief's checkpoints; 0: never
  bucketShards @14 :List(UInt16);  # sparse keys: the shard of each virtual bucket
                               # (kernels/sparse/key_buckets.hpp); empty without sparse tables
  wirePrecision @15 :WirePrecision;  # how workers push their dense gradients (--wire-precision)
  blockShards @16 :List(UInt16);   # dense blocks: the shard of each block, in block-id order;
                               # empty: largest first by the shard count (model_spec.hpp)
  # Once the number of workers changed while training (a live resize): the learning rate per
  # minibatch stays that of lrWorkers workers, and the schedule's clock is the minibatches trained
  # over lrWorkers: scheduleBatches at clock scheduleFrom, `workers` more a clock since. 0: never
  # changed, the schedule's clock is the clock.
  lrWorkers @17 :UInt32;
  scheduleFrom @18 :Int64;
  scheduleBatches @19 :Int64;
}

# The precision of a Push's dense blocks: fp32 (4 bytes a value) or bf16 (2 bytes a value,
# little-endian: the upper half of the float32, rounded to nearest even).
enum WirePrecision {
  fp32 @0;
  bf16 @1;
}

enum LrSchedule {
  constant @0;
  cosine @1;
  linear @2;
}

# The values of one block: blockFloats or fewer little-endian float32.
struct Block {
  id @0 :UInt32;               # global block id, in model-spec order
  values @1 :Data;
}

# A worker's gradient for one clock, restricted to the blocks of one shard.
struct Push {
  worker @0 :Int32;
  clock @1 :Int64;             # the clock this gradient was computed at; the worker has then
                               # finished clock + 1 clocks
  shard @2 :Int32;
  blocks @3 :List(Block);      # every block of the shard exactly once
  incarnation @4 :UInt32;      # which spawn of this worker pushed it: after a replacement or a
                               # rollback, pushes still in flight from an earlier one are refused
  sparse @5 :List(SparseRows); # gradient rows of this clock, per table this shard owns keys of
  pullKeys @6 :List(SparseRows);  # the keys (no values) of the pull for clock + 1
  precision @7 :WirePrecision;  # of the blocks' values (sparse rows are always float32)
}

# Rows of one sparse table on one shard. Keys are distinct; rows follow the keys' order.
struct SparseRows {
  table @0 :UInt32;            # index in ModelSpec.sparseTables
  keys @1 :Data;               # little-endian uint64; empty in a reply (the rows come in the
                               # order of the keys asked)
  values @2 :Data;             # keys x dim little-endian float32; empty where only keys travel
}

# A pull that names sparse keys (a dense-only pull is the message (pull, worker, clock)), or,
# with worker -1, a snapshot of those keys' rows answered at once.
struct Pull {
  worker @0 :Int32;
  clock @1 :Int64;
  shard @2 :Int32;
  keys @3 :List(SparseRows);   # keys only
  allRows @4 :Bool;            # a snapshot (worker -1) of every row of every table the shard
                               # holds, keys and values; `keys` is empty then. The chief asks
                               # it once at the end of a run that exports its model.
}

# Parameters a shard serves: the reply to a pull, or a snapshot for the evaluator (the same
# message: what was served, at which min clock, including updates up to which clock).
struct ShardParameters {
  enum Kind {
    pull @0;
    snapshot @1;
  }
  obsoleteKind @0 :Kind;       # unused, never set: nothing read it (was pull or snapshot)
  shard @1 :Int32;
  minClock @2 :Int64;          # min over live workers of finished clocks, when served
  newestClock @3 :Int64;       # clock of the newest gradient these values include; -1: none
  obsoleteUpdates @4 :UInt64;  # unused, never set: nothing read it (was the update count)
  blocks @5 :List(Block);
  sparse @6 :List(SparseRows); # the rows of the keys asked, values only, in the order asked;
                               # for an allRows snapshot, one entry per table with all its
                               # keys (ascending) and their values
}

# Where a role finds its data: every host reads its own copy.
struct DataSource {
  enum Kind {
    fashionMnist @0;
    synthetic @1;
    csv @2;
    libsvm @3;                 # binary rows of hashed features, streamed by each worker
    criteo @4;                 # click logs: label, 13 integers, 26 categoricals; streamed
    logs @5;                   # a TSV or CSV log a feature schema describes; streamed
  }
  kind @0 :Kind;
  dir @1 :Text;                # fashion-mnist: the directory of the IDX files
  trainRows @2 :UInt32;        # synthetic sizes
  testRows @3 :UInt32;
  seed @4 :UInt64;
  cols @5 :UInt32;             # synthetic: features per row
  trainPath @6 :Text;          # csv, libsvm, criteo: the files, plain or gzip
  testPath @7 :Text;
  groupField @8 :Int32 = -1;   # criteo: the field grouping the test rows for GAUC; -1: none
  follow @9 :Bool;             # libsvm, criteo: trainPath is a directory followed as it grows
  schemaPath @10 :Text;        # logs: the feature schema (JSON)
  delimiter @11 :UInt8 = 9;    # logs: the column separator, tab or comma
  sliceField @12 :Int32 = -1;  # as groupField: the field cutting the test rows into slices
}

# The chief's instructions to a worker or evaluator process (distributed runs).
struct RoleSetup {
  spec @0 :TrainSpec;
  index @1 :Int32;             # worker index
  batch @2 :UInt32;
  steps @3 :Int64;             # clocks to run
  slowMs @4 :UInt32;           # straggler delay per step
  requestTimeoutMs @5 :UInt32;
  data @6 :DataSource;
  shardAddresses @7 :List(Text); # host:port of every ps task, in shard order
  backend @8 :UInt8;           # 0 cpu, 1 cuda, 2 auto (decided on the worker's host)
  device @9 :Int32;            # CUDA device index
  startClock @10 :Int64;       # the clock the worker starts at (a replacement, a rollback)
  incarnation @11 :UInt32;     # see Push.incarnation
  dataOffset @12 :Int64;       # clock c trains minibatch c - dataOffset (a replacement resumes
                               # its predecessor's data position)
  followUntil @13 :Int64 = -1; # a followed stream: the worker computes the clock of its batch b
                               # once b + 1 is below it (the chief's grant in minibatches, raised
                               # by stream messages); -1: none
  pauseAt @14 :Int64 = -1;     # computes no clock from this one on (a change of size asked at
                               # it: the chief stops the worker there); -1: none
  plan @15 :List(DataSegment); # its minibatches once the number of workers changed, in order
                               # (steps holds their count); empty: its own part of the data
}

# A stretch of one part's minibatches (data_plan.hpp): batches first .. first + count - 1 of
# part `part` of `parts`.
struct DataSegment {
  parts @0 :Int32;
  part @1 :Int32;
  first @2 :Int64;
  count @3 :Int64;
}

# The chief's first message to a shard: the run and the shard's initial values.
struct ShardInit {
  spec @0 :TrainSpec;
  shard @1 :Int32;
  blocks @2 :List(Block);
}

# One shard's state at a checkpoint (file shard-<i>.capnp): enough to continue exactly.
struct ShardCheckpoint {
  spec @0 :TrainSpec;
  shard @1 :Int32;
  clock @2 :Int64;             # the checkpoint's global clock (the shard's min clock reached it)
  optimizerStep @3 :UInt64;    # the optimizer's step count: updates applied to the shard's
                               # optimizer state so far (Adam's bias correction), part of the
                               # state like the moments; was `updates`, the same number
  newestClock @4 :Int64;
  blocks @5 :List(Block);      # parameters, the shard's blocks in id order
  state @6 :List(Block);       # optimizer state per block: slots x block size floats, same ids
  sparse @7 :List(SparseTableState);  # every sparse table, in spec order
  deltaSince @8 :Int64 = -1;   # -1: the whole state; C: a delta checkpoint's file, whose sparse
                               # tables hold only the rows pushed at clock C or later, with
                               # tombstones (storage/CHECKPOINT_FORMAT.md)
}

# One sparse table's rows on one shard (kernels/sparse/sparse_table.hpp's sparse_table_rows).
struct SparseTableState {
  table @0 :UInt32;
  keys @1 :Data;               # uint64, strictly ascending
  values @2 :Data;             # keys x dim float32
  state @3 :Data;              # keys x slots x dim float32: the row optimizer's state
  touches @4 :Data;            # uint32 per key: pushes that reached it
  steps @5 :Data;              # uint32 per key: Adam's per-row step; empty for other optimizers
  pendingKeys @6 :Data;        # uint64, strictly ascending: keys counted but not admitted yet
  pendingCounts @7 :Data;      # uint32 per pending key
  clocks @8 :Data;             # uint32 per key: the global clock of its last push; empty in
                               # checkpoints written before rows recorded it
  admission @9 :AdmissionState;  # what admission holds beyond pendingKeys and pendingCounts
  removedKeys @10 :Data;       # uint64, strictly ascending: a delta's tombstones (keys evicted
                               # since); empty in a whole table
  removedPending @11 :Data;    # uint64, strictly ascending: a delta's pending tombstones (keys
                               # counted before and dropped since); empty in a whole table
  pendingChangesOnly @12 :Bool;  # a delta's pendingKeys are those counted since deltaSince, to
                               # merge (with removedPending); false: whole (storage/
                               # CHECKPOINT_FORMAT.md); false in a whole table
}

# A sparse table's pending admission counts beyond the exact keys and counts
# (kernels/sparse/admission_sketch.hpp).
struct AdmissionState {
  pendingClocks @0 :Data;      # uint32 per pending key: its last push's global clock; empty
                               # unless the table evicts (evictAfter)
  sketchDepth @1 :UInt32;      # 0: exact counts, no sketch
  sketchDecayAt @2 :UInt64;    # the counter the next add halves
  sketchCounters @3 :Data;     # uint8, depth x width, row after row
}

# The run's part of a checkpoint (file run.capnp), written by the chief.
struct RunCheckpoint {
  spec @0 :TrainSpec;
  clock @1 :Int64;             # every worker resumes at this clock
  batch @2 :UInt32;
  steps @3 :Int64;             # clocks per worker the run was started with
  samples @4 :Int64;           # training rows processed before the checkpoint
  wallSeconds @5 :Float64;
  positions @6 :List(DataPosition);
  # The run's identity beside the spec's model, seed, shards, workers and optimizer: a resumed
  # run must have the same, and a checkpoint directory holds one lineage only.
  runId @7 :Text;              # made when a run starts fresh, kept by every resume of it
  dataset @8 :Text;            # what it trains on: "synthetic", "csv:/absolute/path", ...
  trainRows @9 :Int64;         # rows of that training set
  files @10 :List(StreamFile); # a training directory's files in name order (else empty)
  # Once the number of workers has changed: each worker's minibatches not trained by `clock`
  # (actors/protocol/data_plan.hpp), which it resumes with; empty: each has its own part.
  plans @11 :List(WorkerPlan);
}

# A worker's minibatches, stretch after stretch (data_plan.hpp).
struct WorkerPlan {
  segments @0 :List(DataSegment);
}

# One file of a training directory read as a stream, as the run saw it.
struct StreamFile {
  name @0 :Text;               # the file's name in the directory
  bytes @1 :UInt64;
  rows @2 :List(Int64);        # the rows each worker reads of it, by worker
}

# Where a worker is in its data: its minibatch order depends only on (seed, worker, epoch).
struct DataPosition {
  worker @0 :Int32;
  clock @1 :Int64;             # next clock to compute
  epoch @2 :Int64;
  batchInEpoch @3 :Int64;
  file @4 :Int32 = -1;         # a directory's file (RunCheckpoint.files) the next batch starts in
  fileRow @5 :Int64;           # the worker's rows of that file read before it
}
