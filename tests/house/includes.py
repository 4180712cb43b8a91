#!/usr/bin/env python3
"""Keeps the house's shape (issue 35, item 1; docs/development.md "The house").

Reads every #include "..." of the C++ sources under src/ and include/ and checks three things:

  1. the include graph has at most MOST_LAYERS layers and no include points up a layer (no
     cycle between units);
  2. no include crosses a "never" of the plan below (PARTS, NEVER), and no stage includes another
     stage's header (STAGES): each stage reads the audit state and writes its own result;
  3. every source file is on exactly one part of the plan.

A unit is a module: the files src/X.cpp, src/X.h and include/headcount/X.h of one stem X; a
folder under src/ with its public header include/headcount/X.h; and include/headcount/results/,
the audit state. A unit's layer is 1 plus the highest layer of what it includes.

    includes.py REPO          check the tree; prints the layers
    includes.py --self-test

Python 3, standard library only.
"""
import os
import re
import sys
import tempfile

from tree import cpp_files

MOST_LAYERS = 10

# The plan: each part is a list of paths (a path ending in / is a folder). A file belongs to the
# part with the longest path that is a prefix of its own.
PARTS = {
    "Face": ["src/main.cpp", "src/cli.cpp", "include/headcount/cli.h", "src/cli_docs.", "src/python/"],
    "Render": ["src/render/", "include/headcount/render.h"],
    "Run": ["src/audit.cpp", "include/headcount/audit.h", "src/gate.cpp", "include/headcount/gate.h",
            "src/baseline.cpp", "include/headcount/baseline.h", "src/config.", "src/diff.cpp",
            "include/headcount/diff.h", "src/fidelity.cpp", "include/headcount/fidelity.h", "src/explain.cpp",
            "include/headcount/explain.h", "src/runner.cpp", "include/headcount/runner.h"],
    "Attention": ["src/attention/", "include/headcount/attention.h"],
    "Experts": ["src/experts.cpp", "include/headcount/experts.h"],
    "Adapter": ["src/adapter.cpp", "include/headcount/adapter.h"],
    "Mixers": ["src/mixers.cpp", "include/headcount/mixers.h"],
    "Buffers": ["src/buffers.cpp", "include/headcount/buffers.h", "src/duplicates.cpp", "include/headcount/duplicates.h"],
    "Parts": ["src/parts.cpp", "include/headcount/parts.h"],
    "Cost": ["src/cost.cpp", "include/headcount/cost.h"],
    "Checks": ["src/findings.cpp", "include/headcount/findings.h", "src/declared.cpp", "include/headcount/declared.h"],
    "Readers": ["src/load.cpp", "include/headcount/load.h", "src/checkpoint/", "include/headcount/checkpoint.h",
                "src/payload.", "src/masks.", "src/http.", "src/remote.", "src/source."],
    "State": ["include/headcount/results/", "include/headcount/model.h", "src/model.cpp", "src/inventory.cpp",
              "include/headcount/inventory.h", "src/stages.h", "src/shapes.", "src/families.cpp",
              "include/headcount/families.h", "include/headcount/checkpoint_index.h", "include/headcount/error.h",
              "include/headcount/run.h"],
    "Ground": ["src/ops.", "src/checked.cpp", "include/headcount/checked.h", "src/numbers.cpp",
               "include/headcount/numbers.h", "src/paths.", "src/suggest.h", "src/json_fields.h", "src/version.cpp",
               "include/headcount/version.h", "src/dtypes.cpp", "include/headcount/dtypes.h",
               "include/headcount/file_identity.h", "include/headcount/small_vector.h"],
}

# The stages: none includes another's header.
STAGES = ["Attention", "Adapter", "Experts", "Mixers", "Buffers", "Parts", "Cost", "Checks"]

# Includes that must never be, with why.
NEVER = [
    ("Checks", "Readers", "stages read the state, not the file"),
    ("Readers", "Attention", "readers know no stage"),
    ("State", "Run", "the state is below the run"),
    ("State", "Attention", "the state is below every stage"),
    ("Render", "Run", "renderers read results"),
    ("Run", "Face", "the library knows no command line"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def unit_of(path, files):
    """The module a file belongs to (see the docstring)."""
    parts = path.split("/")
    stem = os.path.splitext(parts[-1])[0]
    if path.startswith("include/headcount/results/"):
        return "include/headcount/results/"
    if path.startswith("src/") and len(parts) > 2:
        return "src/" + parts[1] + "/"
    if path.startswith("include/headcount/") and len(parts) == 3:
        if any(f.startswith("src/" + stem + "/") for f in files):
            return "src/" + stem + "/"
        return "src/" + stem if ("src/" + stem + ".cpp") in files or ("src/" + stem + ".h") in files else path
    if path.startswith("src/") and len(parts) == 2:
        return "src/" + stem
    return path


def resolve(path, name, files):
    here = os.path.dirname(path)
    for base in (here, "include", "src"):
        cand = os.path.normpath(os.path.join(base, name)).replace(os.sep, "/")
        if cand in files:
            return cand
    return None  # a system or generated header


def part_of(path):
    best, best_len = None, -1
    for part, prefixes in PARTS.items():
        for p in prefixes:
            if path.startswith(p) and len(p) > best_len:
                best, best_len = part, len(p)
    return best


def read_edges(texts):
    edges = []  # (from file, to file)
    files = set(texts)
    for f, text in texts.items():
        for name in INCLUDE.findall(text):
            to = resolve(f, name, files)
            if to:
                edges.append((f, to))
    return edges


def layers(units, unit_edges):
    """Layer of each unit (longest path to a unit that includes nothing), and the cycles."""
    graph = {u: sorted({b for a, b in unit_edges if a == u and b != u}) for u in units}
    # Tarjan's strongly connected components: a component of more than one unit is a cycle.
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]

    def strong(v):
        work = [(v, 0)]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, i = work[-1]
            if i < len(graph[node]):
                work[-1] = (node, i + 1)
                w = graph[node][i]
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, 0))
                elif w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    comps.append(sorted(comp))

    for u in sorted(units):
        if u not in index:
            strong(u)
    cycles = [c for c in comps if len(c) > 1]
    comp_of = {u: i for i, c in enumerate(comps) for u in c}
    layer = {}
    for c in comps:  # Tarjan yields components in reverse topological order: leaves first
        lay = 1
        for u in c:
            for w in graph[u]:
                if comp_of[w] != comp_of[u]:
                    lay = max(lay, layer[w] + 1)
        for u in c:
            layer[u] = lay
    return layer, cycles


def check(repo, quiet=False):
    texts = dict(cpp_files(repo))
    files = list(texts)
    fileset = set(files)
    edges = read_edges(texts)
    problems = []
    for f in files:
        if part_of(f) is None:
            problems.append("%s: on no part of the plan (tests/house/includes.py, PARTS)" % f)
    for a, b in edges:
        pa, pb = part_of(a), part_of(b)
        if pa is None or pb is None or pa == pb:
            continue
        for x, y, why in NEVER:
            if (pa, pb) == (x, y):
                problems.append("%s includes %s: never %s -> %s (%s)" % (a, b, pa, pb, why))
        if pa in STAGES and pb in STAGES:
            problems.append("%s includes %s: the stage %s includes the stage %s's header "
                            "(stages side by side: read it from the audit state)" % (a, b, pa, pb))
    unit = {f: unit_of(f, fileset) for f in files}
    units = set(unit.values())
    unit_edges = {(unit[a], unit[b]) for a, b in edges if unit[a] != unit[b]}
    layer, cycles = layers(units, unit_edges)
    for c in cycles:
        back = sorted("%s -> %s" % (a, b) for a, b in edges if unit[a] in c and unit[b] in c and unit[a] != unit[b])
        problems.append("an include points up: these units include each other: %s (%s)" % (", ".join(c), "; ".join(back)))
    top = max(layer.values()) if layer else 0
    if top > MOST_LAYERS:
        problems.append("the include graph has %d layers; the house's rule is at most %d" % (top, MOST_LAYERS))
    if not quiet:
        for lay in range(top, 0, -1):
            print("layer %2d  %s" % (lay, "  ".join(sorted(u for u in units if layer[u] == lay))))
        print("%d files, %d units, %d includes between units, %d layers (at most %d)" %
              (len(files), len(units), len(unit_edges), top, MOST_LAYERS))
    return problems


def self_test():
    def tree(files):
        d = tempfile.mkdtemp()
        for path, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as fh:
                fh.write(text)
        return d

    ok = tree({"src/ops.cpp": "", "include/headcount/model.h": '#include "headcount/checked.h"\n',
               "include/headcount/checked.h": "", "src/checked.cpp": '#include "headcount/checked.h"\n',
               "src/experts.cpp": '#include "headcount/results/audit.h"\n',
               "include/headcount/results/audit.h": '#include "headcount/model.h"\n'})
    assert check(ok, quiet=True) == [], check(ok, quiet=True)
    # A stage that includes another stage's header.
    d = tree({"src/experts.cpp": '#include "headcount/mixers.h"\n', "include/headcount/mixers.h": "",
              "src/mixers.cpp": '#include "headcount/mixers.h"\n'})
    p = check(d, quiet=True)
    assert any("the stage Experts includes the stage Mixers" in x for x in p), p
    # A never: the state includes the run.
    d = tree({"include/headcount/run.h": '#include "headcount/gate.h"\n', "include/headcount/gate.h": ""})
    p = check(d, quiet=True)
    assert any("never State -> Run" in x for x in p), p
    # A cycle between units.
    d = tree({"src/ops.cpp": '#include "paths.h"\n', "src/ops.h": "", "src/paths.h": '#include "ops.h"\n',
              "src/paths.cpp": ""})
    p = check(d, quiet=True)
    assert any("points up" in x and "src/ops" in x and "src/paths" in x for x in p), p
    # Too many layers: a chain of 12 headers in Ground.
    chain = {"src/ops.h": '#include "paths.h"\n'}
    names = ["paths", "checked", "numbers", "suggest", "json_fields", "version", "dtypes", "ops2", "ops3", "ops4", "ops5"]
    for i, n in enumerate(names):
        nxt = names[i + 1] if i + 1 < len(names) else None
        path = "src/%s.h" % n if not n.startswith("ops") else "src/%s.h" % n
        chain[path] = ('#include "%s.h"\n' % nxt) if nxt else ""
    d = tree(chain)
    p = check(d, quiet=True)
    assert any("12 layers" in x for x in p), p
    # A file on no part.
    d = tree({"src/nowhere.cpp": ""})
    p = check(d, quiet=True)
    assert any("src/nowhere.cpp: on no part" in x for x in p), p
    print("self-test passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print("includes.py: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
