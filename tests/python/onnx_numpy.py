"""A small ONNX evaluator written with NumPy from the operators' specification
(onnx.ai/onnx/operators), independent of actorps' exporter and of any ONNX runtime: it reads a
graph with the onnx package (protobuf only) and runs its nodes in order. It knows the operators
actorps' exports use and refuses any other by name, so a new operator in an export fails the
check instead of being guessed at. Arithmetic is float32, as a runtime's would be."""
import numpy as np
import onnx
from onnx import numpy_helper


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _gather(x, attrs):
    data, indices = x
    return np.take(data, indices, axis=attrs.get("axis", 0))


def _reshape(x, attrs):
    data, shape = x
    shape = [int(s) for s in shape]
    if not attrs.get("allowzero", 0):  # 0 copies the input's dimension there
        shape = [data.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return data.reshape(shape)


def _slice(x, attrs):
    data, starts, ends = x[0], x[1], x[2]
    axes = x[3] if len(x) > 3 and x[3] is not None else range(len(starts))
    steps = x[4] if len(x) > 4 and x[4] is not None else [1] * len(starts)
    cut = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = int(axis) % data.ndim
        dim = data.shape[axis]
        # ends beyond the dimension (INT64_MAX by convention) clamp to it, as Python's do
        cut[axis] = slice(int(np.clip(start, -dim - 1, dim)), int(np.clip(end, -dim - 1, dim)),
                          int(step))
    return data[tuple(cut)]


def _transpose(x, attrs):
    perm = attrs.get("perm")
    return np.transpose(x[0], perm if perm else None)


def _sigmoid(x, attrs):
    v = x[0].astype(np.float32)
    return (np.float32(1) / (np.float32(1) + np.exp(-v))).astype(np.float32)


def _softmax(x, attrs):
    axis = attrs.get("axis", -1)
    v = x[0] - np.max(x[0], axis=axis, keepdims=True)
    e = np.exp(v)
    return e / np.sum(e, axis=axis, keepdims=True)


def _gemm(x, attrs):
    a, b = x[0], x[1]
    if attrs.get("transA", 0):
        a = a.T
    if attrs.get("transB", 0):
        b = b.T
    y = np.float32(attrs.get("alpha", 1.0)) * (a @ b)
    if len(x) > 2 and x[2] is not None:
        y = y + np.float32(attrs.get("beta", 1.0)) * x[2]
    return y


def _flatten(x, attrs):
    axis = attrs.get("axis", 1)
    shape = x[0].shape
    return x[0].reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1)


OPERATORS = {
    "Gather": _gather,
    "MatMul": lambda x, a: np.matmul(x[0], x[1]),
    "Gemm": _gemm,
    "Add": lambda x, a: x[0] + x[1],
    "Sub": lambda x, a: x[0] - x[1],
    "Mul": lambda x, a: x[0] * x[1],
    "Sum": lambda x, a: np.sum(np.stack(np.broadcast_arrays(*x)), axis=0, dtype=x[0].dtype),
    "Relu": lambda x, a: np.maximum(x[0], np.zeros((), x[0].dtype)),
    "Sigmoid": _sigmoid,
    "Softmax": _softmax,
    "Concat": lambda x, a: np.concatenate(x, axis=a["axis"]),
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Slice": _slice,
    "Identity": lambda x, a: x[0],
}


def run(model, inputs):
    """The graph's outputs, by name, for `inputs` (a dict of NumPy arrays by input name)."""
    graph = model.graph
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for i in graph.input:
        if i.name in values:
            continue
        if i.name not in inputs:
            raise KeyError(f"the graph's input '{i.name}' was not given")
        values[i.name] = inputs[i.name]
    for node in graph.node:
        op = OPERATORS.get(node.op_type)
        if op is None or node.domain not in ("", "ai.onnx"):
            raise NotImplementedError(f"operator {node.domain or 'ai.onnx'}.{node.op_type} "
                                      f"(node '{node.name}') is not one this evaluator knows")
        args = [values[n] if n else None for n in node.input]
        result = op(args, _attrs(node))
        if len(node.output) != 1:
            raise NotImplementedError(f"node '{node.name}' has {len(node.output)} outputs")
        values[node.output[0]] = np.asarray(result)
    return {o.name: values[o.name] for o in graph.output}
