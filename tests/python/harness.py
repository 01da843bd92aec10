"""What every Python test shares: skipping (exit 77, which CTest reports as skipped, never as
passed) when a package the test needs is missing, and a small model for the front door."""
import importlib
import os
import sys
import threading

SKIP = 77


def require(*modules):
    """Imports each module or exits 77 naming the one missing (and the interpreter)."""
    loaded = []
    for name in modules:
        try:
            loaded.append(importlib.import_module(name))
        except ImportError as e:
            print(f"SKIPPED: {name} cannot be imported by {sys.executable} ({e}); "
                  "scripts/setup.sh installs python3-numpy, python3-torch and python3-onnx",
                  flush=True)
            sys.exit(SKIP)
    return loaded[0] if len(loaded) == 1 else loaded


def actorps_binary(what):
    """The actorps binary CTest names in ACTORPS_BINARY; raises AssertionError (a failure, never
    a skip) naming `what` the test needs it for when it is not there."""
    path = os.environ.get("ACTORPS_BINARY", "")
    if not os.access(path, os.X_OK):
        raise AssertionError(f"ACTORPS_BINARY ('{path}') must name the actorps binary, which "
                             f"{what} (CTest sets it)")
    return path


def small_spec(actorps):
    """Two tensors, 70 floats: cut into blocks of 16, they spread over every shard."""
    return actorps.ModelSpec([("w", [6, 10], "uniform", 0.5), ("b", [10])])


def run_workers(body, workers):
    """Runs body(w) for each worker on its own thread (a worker client per thread) and
    returns the exceptions they raised, as (w, exception)."""
    errors = []

    def run(w):
        try:
            body(w)
        except Exception as e:  # the caller asserts there is none
            errors.append((w, e))

    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
