# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/tools/layout_check.py: the tree keeps one room per concern.
# For every C source and header of daemon/, lib/ and fs/ it checks that the file
# opens with its SPDX line and a comment naming the file and what it owns, is
# at most MAX_LINES long, and has no function body over MAX_FUNC lines. From
# the built objects (nm of each component's static archive) it checks that no
# two files call each other: the "uses a symbol defined in" relation between
# the objects of one component has no cycle of two.
#
#	python3 layout_check.py SRCDIR BUILDDIR
#
# Prints one line per violation and exits 1 if there is any.

import os
import re
import subprocess
import sys

MAX_LINES = 900
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


def nm(archive):
    """member -> (defined, undefined) symbol sets."""
    out = subprocess.run(["nm", "-A", "--defined-only", archive],
                         capture_output=True, text=True, check=True).stdout
    und = subprocess.run(["nm", "-A", "--undefined-only", archive],
                         capture_output=True, text=True, check=True).stdout
    defs, uses = {}, {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            member = os.path.basename(parts[0].split(":")[1])
            defs.setdefault(member, set()).add(parts[2])
    for line in und.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-2] == "U":
            member = os.path.basename(parts[0].split(":")[1])
            uses.setdefault(member, set()).add(parts[-1])
    return defs, uses


def check_calls(build, bad):
    for comp, archives in ARCHIVES.items():
        defs, uses = {}, {}
        for a in archives:
            path = os.path.join(build, a)
            if not os.path.exists(path):
                bad.append(f"{a}: not built (cannot check calls)")
                continue
            d, u = nm(path)
            defs.update(d)
            uses.update(u)
        owner = {}
        for member, syms in defs.items():
            for s in syms:
                owner[s] = member
        edges = {}
        for member, syms in uses.items():
            for s in syms:
                o = owner.get(s)
                if o and o != member:
                    edges.setdefault(member, {}).setdefault(o, s)
        for a, targets in edges.items():
            for b, sym in targets.items():
                if a < b and a in edges.get(b, {}):
                    back = edges[b][a]
                    bad.append(f"{comp}: {a} and {b} call each other "
                               f"({a} -> {sym}, {b} -> {back})")


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
    check_calls(build, bad)
    for b in bad:
        print(b)
    print(f"layout_check: {count} files, {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
