#!/usr/bin/env python3
"""A CTR export's model.onnx, exactly as exported, evaluated the way a serving team would:
inputs built from raw Criteo lines by what metadata.json says (the dense transform, the key hash
through actorps.feature_key, the vocabulary files) and the graph run by an evaluator of its
operators written from the ONNX specification (onnx_numpy.py). Its click probabilities must be
`actorps predict`'s within 1e-5 on every test line, for an lr, a dlrm, a wdl and a deepfm
export. The evaluator's
trickier operators are checked on hand-made graphs first, and it refuses an operator it does not
know."""
import json
import math
import os
import subprocess
import tempfile
import unittest

import harness

np, onnx = harness.require("numpy", "onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import actorps  # noqa: E402
import onnx_numpy  # noqa: E402

TOLERANCE = 1e-5


def one_node_graph(op, inputs, initializers, output_shape=None, **attrs):
    """A graph of one `op` node over `inputs` (name -> array) and `initializers`."""
    graph = helper.make_graph(
        [helper.make_node(op, list(inputs) + list(initializers), ["y"], **attrs)], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()])
    return helper.make_model(graph)


class Evaluator(unittest.TestCase):
    """The evaluator against values worked out by hand from the operators' specification."""

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def run_one(self, op, initializers, **attrs):
        return onnx_numpy.run(one_node_graph(op, {"x": self.x}, initializers, **attrs),
                              {"x": self.x})["y"]

    def test_reshape_copies_a_zero_and_infers_minus_one(self):
        y = self.run_one("Reshape", {"s": np.array([0, -1], np.int64)})
        self.assertEqual(y.shape, (2, 12))
        self.assertEqual(y[1, 0], 12)

    def test_slice_clamps_ends_and_counts_negative_starts_from_the_end(self):
        big = np.iinfo(np.int64).max
        y = self.run_one("Slice", {"b": np.array([-2], np.int64), "e": np.array([big], np.int64),
                                   "a": np.array([2], np.int64)})
        self.assertEqual(y.shape, (2, 3, 2))
        self.assertEqual(y[0, 0].tolist(), [2, 3])

    def test_gather_along_an_axis(self):
        y = self.run_one("Gather", {"i": np.array([2, 0], np.int64)}, axis=1)
        self.assertEqual(y.shape, (2, 2, 4))
        self.assertEqual(y[1, 0, 0], 20)

    def test_an_unknown_operator_is_refused_by_name(self):
        with self.assertRaisesRegex(NotImplementedError, "Erf"):
            self.run_one("Erf", {})


def criteo_inputs(path, export):
    """model.onnx's inputs for every line of the Criteo file `path`, built from metadata.json's
    description: dense = log(1 + max(x, 0)) (missing: 0), indices = the row of
    actorps.feature_key(field, value) in vocab/C<f>.tsv (a key not there: row 0)."""
    with open(os.path.join(export, "metadata.json")) as f:
        layout = json.load(f)["layout"]
    assert layout["dense"]["transform"].startswith("log(1 + max(x, 0))"), layout["dense"]
    fields = layout["categorical"]["fields"]
    vocab = []
    for field in fields:
        with open(os.path.join(export, field["vocabulary"])) as f:
            assert f.readline().rstrip("\n") == "key\trow"
            vocab.append({int(k): int(r) for k, r in (line.rstrip("\n").split("\t") for line in f)})
    dense, indices = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            ints = cols[1:14]
            dense.append([math.log1p(max(float(v), 0.0)) if v else 0.0 for v in ints])
            indices.append([vocab[i].get(actorps.feature_key(i, v), 0)
                            for i, v in enumerate(cols[14:40])])
    return {"dense": np.array(dense, np.float32), "indices": np.array(indices, np.int64)}


class CtrExports(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.binary = harness.actorps_binary("trains and exports the models and predicts")
        cls.tmp = tempfile.TemporaryDirectory()
        gen = subprocess.run([cls.binary, "gen-data", "criteo", "--out", cls.tmp.name, "--rows",
                              "16000", "--test-rows", "1000", "--seed", "5"],
                             capture_output=True, text=True, timeout=120)
        assert gen.returncode == 0, gen.stderr

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def export(self, model, epochs):
        out = os.path.join(self.tmp.name, "export-" + model.split(":")[0])
        run = subprocess.run(
            [self.binary, "simulate", "--no-progress", "--model", model, "--dataset",
             "criteo:" + os.path.join(self.tmp.name, "train.tsv"), "--test",
             os.path.join(self.tmp.name, "test.tsv"), "--epochs", str(epochs), "--batch", "256",
             "--optimizer", "adam", "--lr", "0.002", "--export-dir", out],
            capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stdout[-2000:] + run.stderr[-2000:])
        return os.path.join(out, "1")

    def predicted(self, export, test):
        run = subprocess.run([self.binary, "predict", "--model", export, "--input", test],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        lines = [json.loads(line) for line in run.stdout.splitlines()]
        self.assertEqual([j["index"] for j in lines], list(range(len(lines))))
        return np.array([j["probability"] for j in lines])

    def check(self, model, epochs):
        export = self.export(model, epochs)
        graph = onnx.load(os.path.join(export, "model.onnx"))
        onnx.checker.check_model(graph)
        test = os.path.join(self.tmp.name, "test.tsv")
        inputs = criteo_inputs(test, export)
        rows_found = int(np.count_nonzero(inputs["indices"]))
        # the vocabulary is used: most test values have a trained row
        self.assertGreater(rows_found, inputs["indices"].size // 2)
        theirs = onnx_numpy.run(graph, inputs)["probability"].reshape(-1)
        ours = self.predicted(export, test)
        self.assertEqual(theirs.shape, ours.shape)
        diff = np.abs(theirs.astype(np.float64) - ours)
        print(f"  {model}: {len(ours)} lines, {rows_found} of {inputs['indices'].size} values "
              f"with a row, max probability difference {diff.max():.3g} (tolerance "
              f"{TOLERANCE:.0e}); operators {sorted({n.op_type for n in graph.graph.node})}",
              flush=True)
        self.assertLessEqual(diff.max(), TOLERANCE)
        self.assertGreater(ours.std(), 0.01)  # a model that scores lines differently

    def test_lr_export(self):
        self.check("lr", 1)

    def test_dlrm_export(self):
        self.check("dlrm:8:16-8:16", 3)

    def test_wdl_export(self):
        self.check("wdl:8:16-8", 3)

    def test_deepfm_export(self):
        self.check("deepfm:8:16-8", 3)


if __name__ == "__main__":
    unittest.main(verbosity=2)
