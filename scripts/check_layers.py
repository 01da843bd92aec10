#!/usr/bin/env python3
"""The layering, checked: every include runs down the graph that scripts/layers.txt declares.

Reads every `#include` of the hand-written sources under actors/, kernels/, apps/, schema/,
tests/ and scripts/bench/, resolves it to a file of the project the way the compiler does (the
including file's folder, then the project root; `schema/x.capnp.h` is generated from
schema/x.capnp), and maps both ends to their layer. An include fails when it runs upward or
sideways, when a layer that sees only public headers includes another file below it, or when
a header of the front door includes a project header that is not one of the front door's. The
`DEPENDS` of each actorps_layer() in actors/*/CMakeLists.txt are held to the same graph, so that
what links and what includes cannot drift apart. Known breaches are the debts at the end of
layers.txt; a debt that no include needs any more fails too, so the list only shrinks.

Why a file of its own rather than the CMake DEPENDS lists: those are link dependencies, and
today they hold the very edges the layering forbids (roles links net); the graph also covers
what CMake does not declare as a layer (apps, benchmarks, tests) and the public-header rule.
One declaration, layers.txt, is what this script, actors/CMakeLists.txt and a reader share.

usage: scripts/check_layers.py [--root DIR] [--graph]
  --root DIR  the project to check (default: the one holding this script)
  --graph     print the layers, what each includes and how often, instead of checking
Exit: 0 all within the graph, 1 includes outside it or stale debts (one line each), 2 usage or
a malformed layers.txt.
"""
import argparse
import fnmatch
import os
import re
import sys
from collections import Counter, defaultdict

LAYERS_FILE = "scripts/layers.txt"
SCANNED = ("actors", "kernels", "apps", "schema", "tests", "scripts/bench")
SOURCE_EXTENSIONS = (".hpp", ".cpp", ".h", ".hh", ".cc", ".cu", ".cuh", ".inl", ".ipp")
HEADER_EXTENSIONS = (".hpp", ".h", ".hh", ".cuh", ".inl", ".ipp")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
LAYER_CALL = re.compile(r"^\s*actorps_layer\(\s*(\w+)(.*?)\)", re.MULTILINE | re.DOTALL)
CMAKE_KEYWORDS = {"SOURCES", "DEPENDS"}


class MalformedLayers(Exception):
    pass


class Debt:
    def __init__(self, line, source, targets, why):
        self.line, self.source, self.targets, self.why = line, source, targets, why
        self.used = set()

    def covers(self, source, target, target_layer):
        """The first of this debt's targets that excuses source -> target, else None."""
        if not fnmatch.fnmatchcase(source, self.source):
            return None
        for t in self.targets:
            if t == target_layer or fnmatch.fnmatchcase(target, t):
                return t
        return None


class Graph:
    """layers.txt: the layers in order, what each sits above (closed), their paths, the public
    headers some layers are restricted to, and the debts."""

    def __init__(self, path):
        self.order = []
        self.below = {}       # layer -> every layer below it, directly or not
        self.direct = {}      # layer -> the layers its line names
        self.paths = []       # (path, layer)
        self.public = {}      # layer -> the paths it may include below itself
        self.front = []       # the front door's paths: its headers include only each other
        self.debts = []
        with open(path, encoding="utf-8") as f:
            for number, raw in enumerate(f, 1):
                line = raw.split("#", 1)[0].strip()
                if line:
                    self._parse(line, number)
        if not self.order:
            raise MalformedLayers(f"{LAYERS_FILE}: declares no layer")

    def _parse(self, line, number):
        def bad(why):
            raise MalformedLayers(f"{LAYERS_FILE}:{number}: {why}")

        word, _, rest = line.partition(" ")
        if word == "layer":
            m = re.fullmatch(r"(\w+)\s*(?:above\s+([\w\s]+?))?\s+in\s+(.+)", rest.strip())
            if not m:
                bad("expected `layer NAME [above LAYER...] in PATH...`")
            name, above, paths = m.group(1), (m.group(2) or "").split(), m.group(3).split()
            if name in self.below:
                bad(f"layer {name} declared twice")
            below = set()
            for a in above:
                if a not in self.below:
                    bad(f"{name} sits above {a}, which is not declared before it")
                below |= {a} | self.below[a]
            self.order.append(name)
            self.below[name], self.direct[name] = below, above
            for p in paths:
                if any(p == q for q, _ in self.paths):
                    bad(f"{p} is in two layers")
                self.paths.append((p, name))
        elif word == "public":
            name, colon, paths = rest.partition(":")
            name = name.strip()
            if not colon or name not in self.below or not paths.split():
                bad("expected `public LAYER: PATH...` after that layer's line")
            self.public[name] = paths.split()
        elif word == "front":
            if not rest.split():
                bad("expected `front PATH...`")
            self.front = rest.split()
        elif word == "debt":
            m = re.fullmatch(r"(\S+)\s*->\s*([^:]+?)\s*:\s*(.+)", rest.strip())
            if not m:
                bad("expected `debt FROM -> TO[, TO...] : WHY`")
            targets = [t for t in re.split(r"[,\s]+", m.group(2)) if t]
            self.debts.append(Debt(number, m.group(1), targets, m.group(3)))
        else:
            bad(f"unknown line `{word}`: expected layer, public, front or debt")

    def layer_of(self, path):
        """The layer of the longest declared path that holds `path`, or None."""
        best, layer = -1, None
        for p, name in self.paths:
            if (path == p or (p.endswith("/") and path.startswith(p))) and len(p) > best:
                best, layer = len(p), name
        return layer

    def is_public(self, layer, path):
        return any(path == p or (p.endswith("/") and path.startswith(p))
                   for p in self.public.get(layer, ()))

    def is_front(self, path):
        return any(path == p or (p.endswith("/") and path.startswith(p)) for p in self.front)

    def refusal(self, layer, target, target_layer, source=None):
        """Why `layer` (file `source`) may not include `target` (of `target_layer`), or None
        when it may."""
        if (source is not None and self.is_front(source) and source.endswith(HEADER_EXTENSIONS)
                and not self.is_front(target)):
            return "the front door's headers include only each other"
        if target_layer == layer:
            return None
        if target_layer in self.below[layer]:
            if layer in self.public and not self.is_public(layer, target):
                return f"{layer} includes only public headers"
            return None
        if layer in self.below[target_layer]:
            return "upward"
        return f"{target_layer} is not below {layer}"


def source_files(root):
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            for name in sorted(files):
                path = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
                yield path


def resolve(root, including, bracket, target):
    """The project file that `#include <bracket>target` in `including` names, or None."""
    candidates = [target]
    if bracket == '"':
        candidates.insert(0, os.path.join(os.path.dirname(including), target))
    for c in candidates:
        c = os.path.normpath(c).replace(os.sep, "/")
        if c.startswith("../") or os.path.isabs(c):
            continue
        if os.path.isfile(os.path.join(root, c)):
            return c
        generated_from = c[:-len(".h")]
        if c.endswith(".capnp.h") and os.path.isfile(os.path.join(root, generated_from)):
            return generated_from
    return None


def includes(root, graph, problems):
    """(file, line, layer, target, target layer) for every include of a project file."""
    found = []
    for path in source_files(root):
        if not path.endswith(SOURCE_EXTENSIONS):
            continue
        layer = graph.layer_of(path)
        if layer is None:
            problems.append((path, 0, f"{path}: in no layer of {LAYERS_FILE}"))
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, 1):
                m = INCLUDE.match(text)
                if not m:
                    continue
                target = resolve(root, path, m.group(1), m.group(2))
                if target is None:
                    if m.group(1) == '"':
                        problems.append((path, number,
                                         f'{path}:{number}: includes "{m.group(2)}", no file of '
                                         "the project (a library's header goes in <>)"))
                    continue
                target_layer = graph.layer_of(target)
                if target_layer is None:
                    problems.append((path, number, f"{path}:{number}: includes {target}, "
                                                   f"in no layer of {LAYERS_FILE}"))
                    continue
                found.append((path, number, layer, target, target_layer))
    return found


def link_dependencies(root, graph, problems):
    """(CMakeLists, line, layer, actorps_X, X) for every layer that an actorps_layer() DEPENDS on."""
    found = []
    for path in source_files(root):
        if not path.endswith("CMakeLists.txt"):
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        for call in LAYER_CALL.finditer(text):
            name, line = call.group(1), text.count("\n", 0, call.start(1)) + 1
            if name not in graph.below:
                problems.append((path, line, f"{path}:{line}: actorps_layer({name}): no layer "
                                             f"{name} in {LAYERS_FILE}"))
                continue
            if graph.layer_of(path) != name:
                problems.append((path, line, f"{path}:{line}: actorps_layer({name}) in a folder "
                                             f"of layer {graph.layer_of(path)}"))
            section = None
            for token in re.finditer(r"[\w:]+", call.group(2)):
                word = token.group(0)
                if word in CMAKE_KEYWORDS:
                    section = word
                elif section == "DEPENDS" and word.startswith("actorps_"):
                    dep = word[len("actorps_"):]
                    if dep in graph.below:
                        at = text.count("\n", 0, call.start(2) + token.start()) + 1
                        found.append((path, at, name, word, dep))
    return found


def check(root, graph):
    problems = []  # (file, line, message)
    edges = [(f, n, a, t, b, "includes") for f, n, a, t, b in includes(root, graph, problems)]
    edges += [(f, n, a, t, b, "links") for f, n, a, t, b in link_dependencies(root, graph, problems)]
    owed = 0
    for path, number, layer, target, target_layer, verb in edges:
        why = graph.refusal(layer, target, target_layer, path)
        if why is None:
            continue
        debt = next(((d, t) for d in graph.debts
                     for t in [d.covers(path, target, target_layer)] if t), None)
        if debt:
            debt[0].used.add(debt[1])
            owed += 1
            continue
        problems.append((path, number, f"{path}:{number}: {layer} {verb} {target} "
                                       f"({target_layer}): not allowed ({why})"))
    for d in graph.debts:
        for t in d.targets:
            if t not in d.used:
                problems.append((LAYERS_FILE, d.line,
                                 f"{LAYERS_FILE}:{d.line}: stale debt: {d.source} -> {t} excuses "
                                 "nothing any more: delete it"))
    for _, _, message in sorted(problems):
        print(message)
    if problems:
        print(f"layering: {len(problems)} problem(s); the graph and its debts: {LAYERS_FILE}")
        return 1
    print(f"layering: {len(edges) - owed} includes and link dependencies within the graph, "
          f"{owed} more excused by {len(graph.debts)} debts")
    return 0


def print_graph(root, graph):
    problems = []
    counts = defaultdict(Counter)
    for path, _, layer, target, target_layer in includes(root, graph, problems):
        if target_layer != layer:
            counts[layer][target_layer,
                          graph.refusal(layer, target, target_layer, path) is None] += 1
    print("layer     above               includes of other layers (! : outside the graph)")
    for layer in reversed(graph.order):
        edges = sorted(counts[layer].items(), key=lambda e: (-e[1], e[0]))
        text = ", ".join(f"{to} {n}{'' if ok else '!'}" for (to, ok), n in edges)
        print(f"{layer:<9} {' '.join(graph.direct[layer]) or '-':<19} {text or '-'}")
    for _, _, message in sorted(problems):
        print(message)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--graph", action="store_true")
    args = parser.parse_args()
    try:
        graph = Graph(os.path.join(args.root, LAYERS_FILE))
    except (OSError, MalformedLayers) as e:
        print(e, file=sys.stderr)
        return 2
    return print_graph(args.root, graph) if args.graph else check(args.root, graph)


if __name__ == "__main__":
    sys.exit(main())
