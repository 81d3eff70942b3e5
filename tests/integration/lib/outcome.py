#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/lib/outcome.py: the callers fs_outcome.sh needs, each a
# real process doing real system calls on a marufs mount and printing one
# line per result ("close 0", "close ETIMEDOUT 1503"): errno names and
# milliseconds, so the case can check both what and when.
#
#   outcome.py write PATH SIZE SEED [READY GO [half|end]]   write SIZE
#        bytes of SEED's pattern in 256 KiB writes, each result printed;
#        with READY and GO, after the first half (or all) of them touch
#        READY and wait for GO; then close.
#   outcome.py check PATH SIZE SEED      "ok", "missing", or "bad ..."
#   outcome.py timed OP N PATH           N threads at once doing OP (stat,
#        create, mkdir, unlink, rename, listdir) on PATH.i; each result and
#        time printed, then "max MS"
#   outcome.py killed PATH               a child stats PATH (blocked on an
#        unreachable pool); 300 ms later it is sent SIGKILL; prints how long
#        it took to die after the signal: "died MS killed" ("exited" if the
#        stat had returned before the signal)
#   outcome.py forked PATH READY GO1 GO2  open PATH for writing, write,
#        touch READY, wait for GO1, fork: the child closes its copy
#        ("child-close 0 MS") and exits; the parent waits for GO2, then
#        closes ("close 0 MS")
import errno
import os
import signal
import sys
import threading
import time

CHUNK = 256 << 10


def ms(t0):
    return int((time.monotonic() - t0) * 1000)


def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def pattern(seed, off, n):
    base = bytes(((seed * 131 + i * 7) & 0xFF) for i in range(256))
    rep = base * (n // 256 + 2)
    s = off % 256
    return rep[s:s + n]


def do_write(path, size, seed, ready=None, go=None, when="half"):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    off, failed = 0, False
    while off < size:
        if ready and when == "half" and off >= size // 2 and not os.path.exists(ready):
            open(ready, "w").close()
            while not os.path.exists(go):
                time.sleep(0.02)
        n = min(CHUNK, size - off)
        t0 = time.monotonic()
        try:
            os.write(fd, pattern(seed, off, n))
            print("write", off, "0", ms(t0), flush=True)
        except OSError as e:
            print("write", off, name(e), ms(t0), flush=True)
            failed = True
            break
        off += n
    if ready and not os.path.exists(ready):
        open(ready, "w").close()
        while not os.path.exists(go):
            time.sleep(0.02)
    t0 = time.monotonic()
    try:
        os.close(fd)
        print("close 0", ms(t0), flush=True)
    except OSError as e:
        print("close", name(e), ms(t0), flush=True)
    return 0 if not failed else 1


def do_check(path, size, seed):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        print("missing")
        return
    if len(data) != size:
        print("bad size", len(data))
    elif data != pattern(seed, 0, size):
        print("bad bytes")
    else:
        print("ok")


def one(op, path, i, out):
    p = "%s.%d" % (path, i)
    t0 = time.monotonic()
    try:
        if op == "stat":
            os.stat(p)
        elif op == "create":
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
        elif op == "mkdir":
            os.mkdir(p)
        elif op == "unlink":
            os.unlink(p)
        elif op == "rename":
            os.rename(p, p + ".renamed")
        elif op == "listdir":
            os.listdir(p)
        out[i] = ("0", ms(t0))
    except OSError as e:
        out[i] = (name(e), ms(t0))


def do_timed(op, n, path):
    out = [None] * n
    ts = [threading.Thread(target=one, args=(op, path, i, out)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i, (r, t) in enumerate(out):
        print(op, i, r, t)
    print("max", max(t for _, t in out))


def do_killed(path):
    pid = os.fork()
    if pid == 0:
        try:
            os.stat(path)
        except OSError:
            pass
        os._exit(0)
    time.sleep(0.3)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    _, st = os.waitpid(pid, 0)
    # killed: it was still blocked in the stat when the signal came
    print("died", ms(t0), "killed" if os.WIFSIGNALED(st) else "exited")


def wait_file(path):
    while not os.path.exists(path):
        time.sleep(0.02)


def do_forked(path, ready, go1, go):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, pattern(5, 0, 4096))
    open(ready, "w").close()
    wait_file(go1)
    pid = os.fork()
    if pid == 0:
        t0 = time.monotonic()
        try:
            os.close(fd)
            print("child-close 0", ms(t0), flush=True)
        except OSError as e:
            print("child-close", name(e), ms(t0), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    wait_file(go)
    t0 = time.monotonic()
    try:
        os.close(fd)
        print("close 0", ms(t0), flush=True)
    except OSError as e:
        print("close", name(e), ms(t0), flush=True)


def main(a):
    if a[0] == "write":
        sys.exit(do_write(a[1], int(a[2]), int(a[3]), *a[4:7]))
    elif a[0] == "check":
        do_check(a[1], int(a[2]), int(a[3]))
    elif a[0] == "timed":
        do_timed(a[1], int(a[2]), a[3])
    elif a[0] == "killed":
        do_killed(a[1])
    elif a[0] == "forked":
        do_forked(a[1], a[2], a[3], a[4])
    else:
        sys.exit("usage: see the top of outcome.py")


main(sys.argv[1:])
