# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/tools/layout_check_test.py: the test of layout_check's
# cycle finder. A check that cannot fail protects nothing, so this makes it
# fail on purpose: a three-file cycle fed to the graph functions directly,
# and the same cycle built for real (three C files compiled into a static
# archive of a fake tree, layout_check.py run on it as the integration case
# runs it) must be reported with every file and the symbol of every edge;
# an acyclic graph and an acyclic tree must not be. A source without a unit
# test at its mirrored path is reported too (a main.c is not).
#
#	python3 layout_check_test.py [CC ...]
#
# Exits 0 when every check holds, 1 on the first that does not, 77 (skip,
# with the reason) when no C compiler, ar or nm is there to build the tree.

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "layout_check", os.path.join(HERE, "layout_check.py"))
lc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lc)

failures = 0


def check(cond, what):
    global failures
    print(("ok: " if cond else "FAILED: ") + what)
    if not cond:
        failures += 1


def test_graph():
    # a -> b -> c -> a, plus d -> a and c -> e outside the cycle
    defs = {"a.c": {"fa"}, "b.c": {"fb"}, "c.c": {"fc"}, "d.c": {"fd"},
            "e.c": {"fe"}}
    uses = {"a.c": {"fb"}, "b.c": {"fc"}, "c.c": {"fa", "fe"}, "d.c": {"fa"}}
    cycles = lc.call_cycles(lc.call_graph(defs, uses))
    check(len(cycles) == 1, "one cycle in a -> b -> c -> a with a tail")
    files, calls = cycles[0]
    check(files == ["a.c", "b.c", "c.c"], f"its files are a, b, c: {files}")
    check(sorted(calls) == [("a.c", "b.c", "fb"), ("b.c", "c.c", "fc"),
                            ("c.c", "a.c", "fa")],
          f"each edge with its symbol: {calls}")
    lines = lc.cycle_report("lib", files, calls)
    check(lines[0] == "lib: call cycle of 3 files: a.c b.c c.c" and
          "  b.c -> c.c (fc)" in lines, f"the report names them: {lines}")

    # four files around, and a separate two-file cycle: two cycles
    edges = {"p": {"q": "s1"}, "q": {"r": "s2"}, "r": {"s": "s3"},
             "s": {"p": "s4"}, "x": {"y": "s5"}, "y": {"x": "s6"}}
    found = [f for f, _ in lc.call_cycles(edges)]
    check(found == [["p", "q", "r", "s"], ["x", "y"]],
          f"a four-file and a two-file cycle: {found}")

    # acyclic: a -> b -> c and a -> c (a diamond's worth of paths, no cycle)
    uses = {"a.c": {"fb", "fc"}, "b.c": {"fc"}}
    cycles = lc.call_cycles(lc.call_graph(defs, uses))
    check(cycles == [], f"no cycle in an acyclic graph: {cycles}")
    check(lc.call_cycles({}) == [], "no cycle in an empty graph")


SOURCES = {
    # the cycle: lib/a.c -> lib/dp/b.c -> lib/c.c -> lib/a.c
    "lib/a.c": "int fb(void);\nint fa(void) { return fb() + 1; }\n",
    "lib/dp/b.c": "int fc(void);\nint fb(void) { return fc() + 1; }\n",
    "lib/c.c": "int fa(void);\nint fc(int n) { return n ? fa() : 0; }\n",
    "lib/common/u.c": "int fu(void) { return 1; }\n",
    "daemon/m.c": "int fm(void) { return 2; }\n",
    "fs/f.c": "int ff(void) { return 3; }\n",
}
ARCHIVES = {  # as layout_check.ARCHIVES names them
    "lib/libmaru_internal.a": ["lib/a.c", "lib/dp/b.c", "lib/c.c"],
    "lib/libmarucommon.a": ["lib/common/u.c"],
    "daemon/libmarud_core.a": ["daemon/m.c"],
    "fs/libmarufs.a": ["fs/f.c"],
}


def build_tree(root, cc, sources, untested=()):
    src, build = os.path.join(root, "src"), os.path.join(root, "build")
    for rel, body in sources.items():
        p = os.path.join(src, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write("/* SPDX-License-Identifier: LGPL-2.1-or-later */\n"
                    f"/* {rel}: a file of the layout_check test */\n" + body)
        if rel in untested:
            continue
        t = os.path.join(src, "tests", "unit", rel[:-2] + "_test.c")
        os.makedirs(os.path.dirname(t), exist_ok=True)
        with open(t, "w") as f:
            f.write("/* its test */\n")
    for archive, members in ARCHIVES.items():
        adir = os.path.dirname(archive)
        objdir = os.path.join(build, archive + ".p")
        os.makedirs(objdir, exist_ok=True)
        objs = []
        for rel in members:
            # named as meson names it: lib/dp/b.c in lib/ is dp_b.c.o
            name = os.path.relpath(rel, adir).replace(os.sep, "_") + ".o"
            obj = os.path.join(objdir, name)
            subprocess.run(cc + ["-c", "-o", obj, os.path.join(src, rel)],
                           check=True)
            objs.append(obj)
        subprocess.run(["ar", "rcs", os.path.join(build, archive)] + objs,
                       check=True)
    return src, build


def run_check(src, build):
    p = subprocess.run([sys.executable, os.path.join(HERE, "layout_check.py"),
                        src, build], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def test_archives(cc):
    with tempfile.TemporaryDirectory() as root:
        src, build = build_tree(root, cc, SOURCES)
        rc, out = run_check(src, build)
        print(out, end="")
        check(rc == 1, "layout_check fails on a tree with a three-file cycle")
        check("lib: call cycle of 3 files: lib/a.c lib/c.c lib/dp/b.c" in out,
              "it names the three files (lib/dp/b.c by its source path)")
        for edge in ("lib/a.c -> lib/dp/b.c (fb)", "lib/dp/b.c -> lib/c.c (fc)",
                     "lib/c.c -> lib/a.c (fa)"):
            check(edge in out, f"it prints the edge {edge}")
        check(", 1 problem(s)" in out,
              "the cycle is its only problem")
    acyclic = dict(SOURCES)
    acyclic["lib/c.c"] = "int fc(int n) { return n; }\n"
    with tempfile.TemporaryDirectory() as root:
        src, build = build_tree(root, cc, acyclic)
        rc, out = run_check(src, build)
        print(out, end="")
        check(rc == 0 and "0 problem(s)" in out,
              "layout_check passes once lib/c.c no longer calls lib/a.c")
    # tests mirror the tree: a source without its test is a problem, main.c is not
    untested = dict(acyclic)
    untested["lib/main.c"] = "int main(void) { return 0; }\n"
    with tempfile.TemporaryDirectory() as root:
        src, build = build_tree(root, cc, untested, ("lib/dp/b.c", "lib/main.c"))
        rc, out = run_check(src, build)
        print(out, end="")
        check(rc == 1 and "lib/dp/b.c: no test of its own (tests/unit/lib/dp/b_test.c)" in out,
              "layout_check names a source without tests/unit/<its path>_test.c")
        check("lib/main.c" not in out and ", 1 problem(s)" in out,
              "a program's main.c needs no unit test of its own")


def main():
    test_graph()
    cc = sys.argv[1:] or [os.environ.get("CC", "cc")]
    missing = [t for t in (cc[0], "ar", "nm") if not shutil.which(t)]
    if missing:
        print(f"skip: the archive half needs {', '.join(missing)}")
        return 1 if failures else 77
    test_archives(cc)
    print(f"layout_check_test: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
