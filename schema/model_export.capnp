@0xfddbdefe5d2a9da7;
# An exported model: model.capnp in an export directory (export/<version>/). Self-contained: a
# reader needs neither actorps' block layout nor its wire schema. The tensors are whole, named
# and shaped, and the network is fixed by `layers`: dense layers, `hiddenActivation` after every
# one but the last, `outputActivation` after the last.

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
  formatVersion @0 :UInt32;    # 1
  layers @1 :List(UInt32);     # widths, input first: 784, 256, 128, 10
  hiddenActivation @2 :Activation;  # relu
  outputActivation @3 :Activation;  # softmax: the output is the class probabilities
  inputDivisor @4 :Float32;    # the model's input = raw value / inputDivisor (255: uint8 pixels
                               # to [0, 1], as in training on Fashion-MNIST; 1: used as is)
  tensors @5 :List(Tensor);    # dense0/kernel, dense0/bias, dense1/kernel, ... in this order
}
