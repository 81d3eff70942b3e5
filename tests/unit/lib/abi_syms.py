#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/unit/lib/abi_syms.py: libmaru.so exports exactly what lib/libmaru.sym
# lists, each name at the version its node says: a name listed in several
# nodes is NAME@NODE for the older ones and NAME@@NODE (the default) for the
# last. Fails on a symbol the script does not list (leaked by a wildcard or
# a missing static), on one it lists that is not exported, and on a version
# node the library does not define.
#
# usage: abi_syms.py LIBMARU_SO LIBMARU_SYM [NM]
import re
import subprocess
import sys


def parse_sym(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"#[^\n]*", "", text)
    nodes = []
    for m in re.finditer(r"([\w.]+)\s*\{(.*?)\}\s*([\w.]+)?\s*;", text, flags=re.S):
        body = m.group(2)
        glob = body.split("local:")[0]
        glob = glob.split("global:")[-1]
        names = [n.strip() for n in glob.split(";") if n.strip()]
        nodes.append((m.group(1), names))
    return nodes


def expected(nodes):
    want, last = set(), {}
    for node, names in nodes:
        for n in names:
            if "*" in n or "?" in n:
                sys.exit("libmaru.sym: wildcard %r in %s: list each symbol" % (n, node))
            last[n] = node
    for node, names in nodes:
        for n in names:
            want.add("%s%s%s" % (n, "@@" if last[n] == node else "@", node))
    return want, {node for node, _ in nodes}


def exported(lib, nm):
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms, versions = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        if f[1] == "A":
            versions.add(f[2])
        elif "@" in f[2]:
            syms.add(f[2])
        else:
            syms.add(f[2] + "@(no version)")
    return syms, versions


def main():
    lib, symfile = sys.argv[1], sys.argv[2]
    nm = sys.argv[3] if len(sys.argv) > 3 else "nm"
    nodes = parse_sym(symfile)
    if not nodes:
        sys.exit("libmaru.sym: no version node")
    want, want_versions = expected(nodes)
    have, have_versions = exported(lib, nm)
    bad = 0
    for s in sorted(have - want):
        print("exported but not in libmaru.sym: " + s)
        bad = 1
    for s in sorted(want - have):
        print("in libmaru.sym but not exported: " + s)
        bad = 1
    for v in sorted(want_versions ^ have_versions):
        print("version node differs: " + v)
        bad = 1
    print("%d symbols in %d version nodes (%s)" % (len(want), len(nodes),
          ", ".join(n for n, _ in nodes)))
    return bad


if __name__ == "__main__":
    sys.exit(main())
