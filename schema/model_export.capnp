@0xfddbdefe5d2a9da7;
# An exported model: model.capnp in an export directory (export/<version>/). Self-contained: a
# reader needs neither actorps' block layout nor its wire schema. The tensors are whole, named
# and shaped.
#
# Format 1, an MLP: the network is fixed by `layers`: dense layers, `hiddenActivation` after
# every one but the last, `outputActivation` after the last.
# Format 2, a click-through-rate model on Criteo logs (`ctr`): lr, dlrm, wdl or deepfm, its dense
# tensors in `tensors` and every row of its sparse tables in `sparseTables`. Fields 0-5 keep their
# format 1 meaning and stay unset (layers, inputDivisor 0) in format 2, so that a format 1 reader
# refuses the file by its version.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("actorps::exported");

enum Activation {
  relu @0;
  softmax @1;
}

# One parameter tensor.
struct Tensor {
  name @0 :Text;               # dense<l>/kernel or dense<l>/bias
  shape @1 :List(UInt32);      # kernel [in, out], row-major (z = x · kernel + bias); bias [out]
  values @2 :Data;             # little-endian float32, the product of `shape` values
}

struct ExportedModel {
  formatVersion @0 :UInt32;    # 1: an MLP; 2: a CTR model; 3: tensors and rows only (a model
                               # without a network actorps serves: a PyTorch module's, ...)
  layers @1 :List(UInt32);     # widths, input first: 784, 256, 128, 10
  hiddenActivation @2 :Activation;  # relu
  outputActivation @3 :Activation;  # softmax: the output is the class probabilities
  inputDivisor @4 :Float32;    # the model's input = raw value / inputDivisor (255: uint8 pixels
                               # to [0, 1], as in training on Fashion-MNIST; 1: used as is)
  tensors @5 :List(Tensor);    # dense0/kernel, dense0/bias, dense1/kernel, ... in this order;
                               # format 2: the CTR model's dense tensors (CtrModel); format 3:
                               # the spec's tensors by name, in model order
  model @6 :Text;              # formats 2, 3: the model string trained, "dlrm:16:64-32:64-32"
  ctr @7 :CtrModel;            # format 2
  sparseTables @8 :List(SparseTable);  # formats 2, 3: every row of each sparse table
}

# A click-through-rate model on lines of Criteo's layout: a 0/1 label, 13 integer features
# I1-I13 and 26 categorical ones C1-C26, TAB-separated. Integer x enters as log(1 + max(x, 0))
# (missing: 0); categorical value v of field f (0-based) is the key
# (f << 56) | (hash of v in 56 bits), actorps' actors/ps/criteo_keys.hpp.
#   lr:   p = sigmoid(bias + dense/kernel · x + sum over fields of the weight of the field's key)
#         tensors "dense/kernel" [13], "bias" [1]; table "wide", rows of 1 float
#   dlrm: x0 = bottom MLP(x) (ReLU after every layer, width dim), v = (x0, e_C1, ..., e_C26),
#         the 351 dot products v_i · v_j for i > j in the order (1,0), (2,0), (2,1), (3,0), ...,
#         z = top MLP(x0, dots) (ReLU between layers, none after the last), p = sigmoid(z)
#         tensors bottom<l>/kernel [in, out], bottom<l>/bias [out], then top<l>/...; table
#         "embeddings", rows of dim floats
#   wdl:  z = sum over fields of w_f + linear/kernel · x + deep MLP(e_C1, ..., e_C26, x) (ReLU
#         between layers, none after the last), p = sigmoid(z)
#         tensors "linear/kernel" [13, 1], deep<l>/kernel [in, out], deep<l>/bias [out]; tables
#         "embeddings" (rows of dim floats, e_f) then "wide" (rows of 1 float, w_f)
#   deepfm: wdl's z plus the factorization machine's 0.5 · sum over dim of
#         ((sum of e_f)^2 - sum of e_f^2)
# A key with no row in a table has a row of zeros there.
struct CtrModel {
  enum Kind {
    lr @0;
    dlrm @1;
    wdl @2;
    deepfm @3;
  }
  kind @0 :Kind;
  layout @1 :Text;             # the input lines: "criteo" (label, I1-I13, C1-C26)
  denseFeatures @2 :UInt32;    # 13
  fields @3 :UInt32;           # 26
  dim @4 :UInt32;              # floats per row of the first table: 1 (lr), the embedding width
  bottom @5 :List(UInt32);     # dlrm: the bottom MLP's hidden widths (13 → bottom… → dim)
  top @6 :List(UInt32);        # dlrm: the top MLP's hidden widths (dim + 351 → top… → 1)
  # layout "schema": a model on a log a feature schema describes (actors/data/SCHEMA_FORMAT.md),
  # denseFeatures and fields the schema's dense width and key fields; a key's top byte is its
  # table's number, which fields may share, and a multi-hot field's row is the pool of its bag's.
  schema @7 :Text;             # the schema as JSON, vocabularies inline
  delimiter @8 :Text;          # "\t" (tsv:) or "," (csv:): how the lines are cut
  fieldTables @9 :List(UInt8); # per key field: its table (the keys' top byte)
  meanPooling @10 :List(Bool); # per key field: its bag pools by the mean (else the sum)
  hidden @11 :List(UInt32);    # wdl, deepfm: the deep MLP's hidden widths (26·dim + 13 → … → 1)
}

# One sparse table's rows: every key that has one, ascending, its field in the top byte.
struct SparseTable {
  name @0 :Text;               # "wide" or "embeddings"
  dim @1 :UInt32;
  keys @2 :Data;               # little-endian uint64, strictly ascending
  values @3 :Data;             # keys x dim little-endian float32, in key order
}

# delta.capnp of a delta version in an export chain (actors/serving/EXPORT_FORMAT.md): what changed
# since the version before it. `model` is format 2 with every dense tensor whole and, in its
# table, only the rows added or changed since; `removedKeys` the keys whose rows are gone since.
struct ExportDelta {
  model @0 :ExportedModel;
  removedKeys @1 :Data;        # little-endian uint64, strictly ascending (of the first table)
  removedWideKeys @2 :Data;    # wdl, deepfm: the same for the table "wide"
}
