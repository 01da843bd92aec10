"""actorps from Python: the parameter shards of a loop of your own, NumPy and PyTorch buffers
used in place.

    import numpy as np, actorps
    spec = actorps.ModelSpec([("w", [784, 10], "uniform", 0.05), ("b", [10])])
    ps = actorps.LocalCluster(spec, ps=2, workers=1, mode="sync", optimizer="sgd", lr=0.1)
    w = ps.worker(0)
    params = np.empty(spec.total_floats, np.float32)
    w.wait(w.pull(0, params))
    grad = np.zeros_like(params)          # ... your gradient of clock 0
    w.wait(w.push_pull(0, grad, params))  # params now hold clock 1's parameters

actorps.torch adapts a torch.nn.Module (import it explicitly: it imports torch).
actorps.train(model, train, test, ...) lets the runtime own the loop around a model plug-in
written in Python (checkpoints, resume, the evaluator hook, metrics JSONL, the progress line).
"""
import os as _os
import sys as _sys

from ._core import (Error, LocalCluster, ModelSpec, SparseTable, TaskCluster, WorkerClient,
                    bytes_copied, feature_key, read_export, scale, train)

__all__ = ["Error", "LocalCluster", "ModelSpec", "SparseTable", "TaskCluster", "WorkerClient",
           "bytes_copied", "exit_task", "feature_key", "read_export", "scale", "train"]


def exit_task(status):
    """Ends a TaskCluster process at once with `status` after flushing stdout and stderr: CAF
    0.17 may wait forever for peers that have gone when the process ends normally."""
    _sys.stdout.flush()
    _sys.stderr.flush()
    _os._exit(status)
