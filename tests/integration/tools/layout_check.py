# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/tools/layout_check.py: the tree keeps one room per concern.
# For every C source and header of daemon/, lib/ and fs/ it checks that the file
# opens with its SPDX line and a comment naming the file and what it owns, is
# at most MAX_LINES long, and has no function body over MAX_FUNC lines. From
# the built objects (nm of each component's static archive) it checks that no
# file calls, through any number of other files, a file that calls it back:
# the "uses a symbol defined in" relation between the objects of one
# component has no cycle of any length. Every C source but a program's
# main.c has a unit test of its own at the mirrored path under tests/unit/. Each strongly connected component of
# that graph with more than one file is a cycle; it is printed with its files
# and, for every call between them, the symbol that makes the edge.
#
#	python3 layout_check.py SRCDIR BUILDDIR
#
# Prints one line per violation (a cycle takes a line per edge as well) and
# exits 1 if there is any. tests/integration/tools/layout_check_test.py checks
# the cycle finder itself.

import os
import re
import subprocess
import sys

MAX_LINES = 700
MAX_FUNC = 80
ROOTS = ("daemon", "lib", "fs")
ARCHIVES = {
    "daemon": ["daemon/libmarud_core.a"],
    "lib": ["lib/libmaru_internal.a", "lib/libmarucommon.a"],
    "fs": ["fs/libmarufs.a"],
}


def sources(src):
    for root in ROOTS:
        for d, _, names in os.walk(os.path.join(src, root)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    p = os.path.join(d, n)
                    yield os.path.relpath(p, src), p


def check_header(rel, lines, bad):
    head = "".join(lines[:4])
    if "SPDX-License-Identifier" not in lines[0] if lines else True:
        bad.append(f"{rel}:1: no SPDX line first")
    if f"{rel}:" not in head:
        bad.append(f"{rel}:2: the opening comment does not name the file "
                   f"('{rel}: what it owns')")


# A function definition starts at column 0 with a name and '(' and its body
# opens with '{' alone at column 0 (kernel style); it ends at '}' at column 0.
DEF = re.compile(r"^[A-Za-z_][\w \t\*]*\b(\w+)\s*\(")


def check_functions(rel, lines, bad):
    name, start = None, None
    for i, line in enumerate(lines):
        if start is None:
            m = DEF.match(line)
            if m and not line.rstrip().endswith(";"):
                name = m.group(1)
            if line.startswith("{") and name:
                start = i
            elif line.strip() and not line.startswith((" ", "\t", "{")) \
                    and not DEF.match(line) and not line.startswith(")"):
                if not line.rstrip().endswith(","):
                    name = None
        elif line.startswith("}"):
            n = i - start - 1
            if n > MAX_FUNC:
                bad.append(f"{rel}:{start + 1}: {name}() has {n} lines "
                           f"(at most {MAX_FUNC})")
            name, start = None, None


def member_sources(src, build, archive):
    """Meson object name (dp_rdma.c.o) -> source path (lib/dp/rdma.c).

    Meson names the object of DIR/sub/x.c in an archive built in DIR as
    sub_x.c.o; the mapping is rebuilt from the sources so that a name with
    an underscore of its own (pool_locate.c) maps back right."""
    adir = os.path.dirname(archive)
    names = {}
    for d, _, files in os.walk(os.path.join(src, adir)):
        for n in files:
            if n.endswith(".c"):
                rel = os.path.relpath(os.path.join(d, n), os.path.join(src, adir))
                names[rel.replace(os.sep, "_") + ".o"] = os.path.join(adir, rel)
    return names


def nm(archive, names=None):
    """member -> (defined, undefined) symbol sets; members named by their
    source path when names (from member_sources) knows them."""
    out = subprocess.run(["nm", "-A", "--defined-only", archive],
                         capture_output=True, text=True, check=True).stdout
    und = subprocess.run(["nm", "-A", "--undefined-only", archive],
                         capture_output=True, text=True, check=True).stdout
    names = names or {}

    def member(field):
        # "archive.a:member.o:" (or "archive.a[member.o]:" from some nm)
        m = field.split(":")[1] if ":" in field else field
        base = os.path.basename(m)
        return names.get(base, base)

    defs, uses = {}, {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVWGS":
            defs.setdefault(member(parts[0]), set()).add(parts[2])
    for line in und.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-2] == "U":
            uses.setdefault(member(parts[0]), set()).add(parts[-1])
    return defs, uses


def call_graph(defs, uses):
    """a -> {b: symbol}: file a uses symbol (the first, sorted) defined in b."""
    owner = {}
    for member in sorted(defs):
        for s in defs[member]:
            owner.setdefault(s, member)
    edges = {}
    for member in sorted(uses):
        for s in sorted(uses[member]):
            o = owner.get(s)
            if o and o != member:
                edges.setdefault(member, {}).setdefault(o, s)
    return edges


def strong_components(edges):
    """Tarjan's strongly connected components (iterative), each sorted."""
    nodes = sorted(set(edges) | {b for t in edges.values() for b in t})
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def call_cycles(edges):
    """[(files, [(a, b, symbol), ...]), ...]: every set of files that call
    each other around, through any number of hops, with the edges inside it."""
    cycles = []
    for comp in strong_components(edges):
        if len(comp) < 2:
            continue
        inside = set(comp)
        calls = [(a, b, edges[a][b]) for a in comp
                 for b in sorted(edges.get(a, {})) if b in inside]
        cycles.append((comp, calls))
    return sorted(cycles)


def cycle_report(comp, files, calls):
    """The lines layout_check prints for one cycle."""
    out = [f"{comp}: call cycle of {len(files)} files: {' '.join(files)}"]
    out += [f"  {a} -> {b} ({sym})" for a, b, sym in calls]
    return out


# Tests mirror the tree: daemon/x/y.c is tested by tests/unit/daemon/x/y_test.c.
# A program's main.c only parses its command line and starts the rest: the
# integration suites run each program (marud, marufs, marustat) whole.
NO_UNIT_TEST = ("main.c",)


def check_tests(src, rel, bad):
    d, n = os.path.split(rel)
    if n in NO_UNIT_TEST:
        return
    test = os.path.join("tests", "unit", d, n[:-2] + "_test.c")
    if not os.path.exists(os.path.join(src, test)):
        bad.append(f"{rel}: no test of its own ({test})")


def check_calls(src, build, bad):
    for comp, archives in ARCHIVES.items():
        defs, uses = {}, {}
        for a in archives:
            path = os.path.join(build, a)
            if not os.path.exists(path):
                bad.append(f"{a}: not built (cannot check calls)")
                continue
            d, u = nm(path, member_sources(src, build, a))
            defs.update(d)
            uses.update(u)
        for files, calls in call_cycles(call_graph(defs, uses)):
            bad.append("\n".join(cycle_report(comp, files, calls)))


def main():
    src, build = sys.argv[1], sys.argv[2]
    bad = []
    count = 0
    for rel, path in sources(src):
        count += 1
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        check_header(rel, lines, bad)
        if len(lines) > MAX_LINES:
            bad.append(f"{rel}: {len(lines)} lines (at most {MAX_LINES})")
        if rel.endswith(".c"):
            check_functions(rel, lines, bad)
            check_tests(src, rel, bad)
    check_calls(src, build, bad)
    for b in bad:
        print(b)
    print(f"layout_check: {count} files, {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
