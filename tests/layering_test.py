#!/usr/bin/env python3
"""scripts/check_layers.py can fail: run on small trees laid out like the project, under the
project's own graph (the layer and public lines of scripts/layers.txt, with debts of each case's
own), it names each include that runs upward, sideways, past a forbidden edge or behind the
front door, a front-door header that includes what is behind it, each such DEPENDS, each stale
debt, and passes what the graph allows.

usage: tests/layering_test.py
"""
import os
import subprocess
import sys
import tempfile

project = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
checker = os.path.join(project, "scripts", "check_layers.py")
with open(os.path.join(project, "scripts", "layers.txt"), encoding="utf-8") as f:
    graph = "".join(line for line in f if not line.startswith("debt "))

# A tree within the graph: each layer includes one below it, the example only the front door.
base = {
    "kernels/math.hpp": "",
    "actors/protocol/errors.hpp": '#include "kernels/math.hpp"\n',
    "actors/data/dataset.hpp": '#include "actors/protocol/errors.hpp"\n',
    "actors/storage/store.hpp": '#include "actors/protocol/errors.hpp"\n',
    "actors/link/link_socket.hpp": "#include <string>\n",
    "actors/model/plugin.hpp": '#include "actors/data/dataset.hpp"\n#include "actors/storage/store.hpp"\n',
    "actors/roles/shard.hpp": '#include "actors/model/plugin.hpp"\n#include "kernels/math.hpp"\n',
    "actors/roles/shard.cpp": '#include "shard.hpp"\n',
    "actors/roles/CMakeLists.txt": "actorps_layer(roles\n  SOURCES shard.cpp\n"
                                   "  DEPENDS actorps_model actorps_protocol CAF::core)\n",
    "actors/chief/state.hpp": '#include "actors/roles/shard.hpp"\n',
    "actors/guard/connect.hpp": '#include "actors/protocol/errors.hpp"\n',
    "actors/deploy/task.hpp": '#include "actors/chief/state.hpp"\n#include "actors/link/link_socket.hpp"\n'
                              '#include "actors/guard/connect.hpp"\n',
    "actors/ps.hpp": '#include "actors/ps/options.hpp"\n#include <caf/expected.hpp>\n',
    "actors/ps/options.hpp": "#include <string>\n",
    "actors/ps/train.cpp": '#include "actors/ps.hpp"\n#include "actors/chief/state.hpp"\n',
    "apps/examples/loop.cpp": '#include "actors/ps.hpp"\n',
    "apps/bench/bench.cpp": '#include "actors/link/link_socket.hpp"\n',
    "tests/shard_test.cpp": '#include "actors/roles/shard.hpp"\n#include "apps/bench/bench.cpp"\n',
}

failures = []


def run(name, changes=None, debts="", layers=None, expect_rc=1, expect=()):
    """Checks the base tree with `changes` (path -> text, None removes) and `debts`: the exit
    status and that each expected line is printed (and, when expect_rc is 1, nothing else)."""
    files = dict(base)
    files.update(changes or {})
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            if text is None:
                continue
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        os.makedirs(os.path.join(root, "scripts"))
        with open(os.path.join(root, "scripts", "layers.txt"), "w", encoding="utf-8") as f:
            f.write(layers if layers is not None else graph + debts)
        done = subprocess.run([sys.executable, checker, "--root", root],
                              capture_output=True, text=True)
    out = done.stdout.splitlines()
    problems = [l for l in out if not l.startswith("layering: ")]
    wrong = []
    if done.returncode != expect_rc:
        wrong.append(f"exit {done.returncode}, expected {expect_rc}")
    wrong += [f"missing line: {e}" for e in expect if e not in out + done.stderr.splitlines()]
    if expect_rc == 1:
        wrong += [f"unexpected line: {p}" for p in problems if p not in expect]
    if wrong:
        failures.append(name)
        print(f"FAIL {name}:\n  " + "\n  ".join(wrong))
        print("  output:\n    " + "\n    ".join(out + done.stderr.splitlines()))
    else:
        print(f"ok   {name}")


# 20 includes and the roles' 2 DEPENDS on layers
run("a tree within the graph passes", expect_rc=0,
    expect=["layering: 22 includes and link dependencies within the graph, "
            "0 more excused by 0 debts"])

run("upward: protocol includes chief",
    {"actors/protocol/x.hpp": '#pragma once\n#include "actors/chief/state.hpp"\n'},
    expect=["actors/protocol/x.hpp:2: protocol includes actors/chief/state.hpp (chief): "
            "not allowed (upward)"])
run("upward through a relative path",
    {"actors/protocol/y.cpp": '#include "../chief/state.hpp"\n'},
    expect=["actors/protocol/y.cpp:1: protocol includes actors/chief/state.hpp (chief): "
            "not allowed (upward)"])
run("kernels include nothing from actors/",
    {"kernels/math.hpp": '#include "actors/protocol/errors.hpp"\n'},
    expect=["kernels/math.hpp:1: kernels includes actors/protocol/errors.hpp (protocol): "
            "not allowed (upward)"])
run("sideways: data includes storage",
    {"actors/data/dataset.hpp": '#include "actors/storage/store.hpp"\n'},
    expect=["actors/data/dataset.hpp:1: data includes actors/storage/store.hpp (storage): "
            "not allowed (storage is not below data)"])
run("roles includes nothing from the transport",
    {"actors/roles/shard.cpp": '#include "shard.hpp"\n#include "actors/link/link_socket.hpp"\n'},
    expect=["actors/roles/shard.cpp:2: roles includes actors/link/link_socket.hpp (link): "
            "not allowed (link is not below roles)"])
run("the run's lifecycle includes nothing from the transport",
    {"actors/chief/state.hpp": '#include "actors/guard/connect.hpp"\n'},
    expect=["actors/chief/state.hpp:1: chief includes actors/guard/connect.hpp (guard): "
            "not allowed (guard is not below chief)"])
run("the two wings of the transport are side by side",
    {"actors/link/link_socket.hpp": '#include "actors/guard/connect.hpp"\n'},
    expect=["actors/link/link_socket.hpp:1: link includes actors/guard/connect.hpp (guard): "
            "not allowed (guard is not below link)"])
run("nothing but tests includes tests",
    {"apps/bench/bench.cpp": '#include "tests/shard_test.cpp"\n'},
    expect=["apps/bench/bench.cpp:1: bench includes tests/shard_test.cpp (tests): "
            "not allowed (upward)"])
run("apps include the front door only",
    {"apps/examples/loop.cpp": '#include "actors/ps.hpp"\n#include "actors/protocol/errors.hpp"\n'
                               '#include "kernels/math.hpp"\n'},
    expect=["apps/examples/loop.cpp:2: apps includes actors/protocol/errors.hpp (protocol): "
            "not allowed (apps includes only public headers)",
            "apps/examples/loop.cpp:3: apps includes kernels/math.hpp (kernels): "
            "not allowed (apps includes only public headers)"])
run("the front door's headers include only each other",
    {"actors/ps/options.hpp": '#include <string>\n#include "actors/protocol/errors.hpp"\n'},
    expect=["actors/ps/options.hpp:2: node includes actors/protocol/errors.hpp (protocol): "
            "not allowed (the front door's headers include only each other)"])
run("a DEPENDS outside the graph",
    {"actors/roles/CMakeLists.txt": "actorps_layer(roles\n  SOURCES shard.cpp\n"
                                    "  DEPENDS actorps_model\n          actorps_link)\n"},
    expect=["actors/roles/CMakeLists.txt:4: roles links actorps_link (link): "
            "not allowed (link is not below roles)"])
run("an include of no file of the project",
    {"actors/roles/shard.cpp": '#include "shard.hpp"\n#include "missing.hpp"\n'},
    expect=['actors/roles/shard.cpp:2: includes "missing.hpp", no file of the project '
            "(a library's header goes in <>)"])
run("a file in no layer",
    {"actors/stray.hpp": "\n"},
    expect=["actors/stray.hpp: in no layer of scripts/layers.txt"])
run("a debt excuses its include",
    {"actors/protocol/x.hpp": '#pragma once\n#include "actors/chief/state.hpp"\n'},
    debts="debt actors/protocol/x.hpp -> actors/chief/state.hpp : a reason\n", expect_rc=0,
    expect=["layering: 22 includes and link dependencies within the graph, "
            "1 more excused by 1 debts"])
debt_line = graph.count("\n") + 1
run("a debt that excuses nothing is stale", debts="debt actors/protocol/x.hpp -> chief : gone\n",
    expect=[f"scripts/layers.txt:{debt_line}: stale debt: actors/protocol/x.hpp -> chief "
            "excuses nothing any more: delete it"])
run("each layer of a debt must still be needed",
    {"apps/examples/loop.cpp": '#include "actors/ps.hpp"\n#include "actors/protocol/errors.hpp"\n'},
    debts="debt apps/examples/loop.cpp -> protocol, kernels : the front door as the spine\n",
    expect=[f"scripts/layers.txt:{debt_line}: stale debt: apps/examples/loop.cpp -> kernels "
            "excuses nothing any more: delete it"])
run("a layer above one declared after it is refused", layers="layer a above b in a/\n",
    expect_rc=2, expect=["scripts/layers.txt:1: a sits above b, which is not declared before it"])

if failures:
    print(f"{len(failures)} case(s) failed: {', '.join(failures)}")
    sys.exit(1)
print("all cases as expected")
