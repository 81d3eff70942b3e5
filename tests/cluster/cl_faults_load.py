# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/cluster/cl_faults_load.py: the load of cl_faults.sh, one worker's
# bounded writer/reader loop on a cluster mount, and the judge of its log.
#
#   run DIR PREFIX NMAX STOPFILE LOG
#	names DIR/PREFIX<i>, i = 0..NMAX-1, until STOPFILE exists: each is
#	written (open O_CREAT|O_TRUNC, write, close), read back and compared;
#	each call timed. LOG gets "T_MS I OP ERR DUR_MS" a call (ERR 0, an
#	errno name, or BAD for wrong bytes) and "ok I" per name verified.
#   judge LOG OWNERS VICTIM FROM_MS TO_MS TMO_MS ALLOWED [OTHERS]
#	calls in [FROM_MS, TO_MS]: those on names OWNERS ("PATH URI" lines)
#	gives another pool than VICTIM must not fail nor take more than
#	TMO_MS + 500 (the calls over TMO_MS are counted: see cl_faults.sh);
#	those on VICTIM's names may fail with the errno names of ALLOWED
#	(comma-separated) only, within 2 x TMO_MS + 500 (a read of a file
#	open on a pool just killed was seen to wait out two bounds); OTHERS (ERR:N,...)
#	lets N calls on the other pools' names fail with ERR within
#	TMO_MS + 500 (gaps cl_faults.sh names). Prints the counts;
#	exit 1 on a breach.
#   check DIR PREFIX LOG SKIP
#	every name LOG says was verified reads back its bytes, except the
#	indices listed in file SKIP (one a line); prints the counts.
import errno
import hashlib
import os
import sys
import time


def now_ms():
    return int(time.time() * 1000)


def data(prefix, i):
    seed = hashlib.sha256(("%s%d" % (prefix, i)).encode()).digest()
    n = 1024 + (i * 997) % 7168
    return (seed * (n // len(seed) + 1))[:n]


def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno))


class Calls:
    def __init__(self, log, i):
        self.log, self.i = log, i

    def do(self, op, fn, *args):
        t = now_ms()
        try:
            r = fn(*args)
            err = "0"
        except OSError as e:
            r, err = None, ename(e)
        self.log.write("%d %d %s %s %d\n" % (t, self.i, op, err, now_ms() - t))
        if err != "0":
            raise RuntimeError(err)
        return r


def one(log, path, prefix, i):
    c = Calls(log, i)
    want = data(prefix, i)
    fd = c.do("create", os.open, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        c.do("write", os.write, fd, want)
    finally:
        c.do("close", os.close, fd)
    fd = c.do("open", os.open, path, os.O_RDONLY)
    try:
        got = c.do("read", os.read, fd, len(want) + 1)
    finally:
        c.do("rclose", os.close, fd)
    if got != want:
        log.write("%d %d cmp BAD 0\n" % (now_ms(), i))
        return
    log.write("ok %d\n" % i)


def run(d, prefix, nmax, stopf, logf):
    with open(logf, "w", buffering=1) as log:
        for i in range(int(nmax)):
            if os.path.exists(stopf):
                break
            try:
                one(log, os.path.join(d, "%s%d" % (prefix, i)), prefix, i)
            except RuntimeError:
                pass
            time.sleep(0.02)
        log.write("end\n")


def judge(logf, ownf, victim, t0, t1, tmo, allowed, others="-:0"):
    owner = {}
    for line in open(ownf):
        p, u = line.split()
        owner[os.path.basename(p)] = u
    prefix = next(iter(owner)).rstrip("0123456789")
    t0, t1, tmo = int(t0), int(t1), int(tmo)
    allowed = set(allowed.split(","))
    counts, bad, slow, over = {}, [], {"victim": 0, "others": 0}, 0
    budget = {e: int(n) for e, n in (x.split(":") for x in others.split(","))}
    for line in open(logf):
        f = line.split()
        if len(f) != 5 or not t0 <= int(f[0]) <= t1:
            continue
        t, i, op, err, dur = int(f[0]), f[1], f[2], f[3], int(f[4])
        mine = owner.get(prefix + i) == victim
        who = "victim" if mine else "others"
        counts[(who, err)] = counts.get((who, err), 0) + 1
        slow[who] = max(slow[who], dur)
        if err == "BAD":
            bad.append("wrong bytes read back from %s%s" % (prefix, i))
        if not mine and dur > tmo:
            over += 1
        if err == "BAD":
            pass
        elif not mine and budget.get(err, 0) > 0 and dur <= tmo + 500:
            budget[err] -= 1
        elif not mine and (err != "0" or dur > tmo + 500):
            bad.append("%s of %s%s (another pool's) at +%d ms: %s in %d ms" %
                       (op, prefix, i, t - t0, err, dur))
        elif mine and err != "0" and (err not in allowed or dur > 2 * tmo + 500):
            bad.append("%s of %s%s (the victim's) at +%d ms: %s in %d ms" %
                       (op, prefix, i, t - t0, err, dur))
    print(" ".join("%s:%s=%d" % (w, e, n) for (w, e), n in sorted(counts.items())),
          "slowest victim %d ms others %d ms (%d over %d ms)" %
          (slow["victim"], slow["others"], over, tmo))
    for b in bad[:10]:
        print("breach:", b)
    return 1 if bad else 0


def check(d, prefix, logf, skipf):
    skip = set(open(skipf).read().split()) if skipf != "-" else set()
    okn = [f.split()[1] for f in open(logf) if f.startswith("ok ")]
    res = {"ok": 0, "skipped": 0}
    for i in okn:
        if i in skip:
            res["skipped"] += 1
            continue
        try:
            with open(os.path.join(d, prefix + i), "rb") as f:
                got = f.read()
            k = "ok" if got == data(prefix, int(i)) else "BAD"
        except OSError as e:
            k = ename(e)
        res[k] = res.get(k, 0) + 1
    print(" ".join("%s=%d" % kv for kv in sorted(res.items())))
    return 0 if set(res) == {"ok", "skipped"} else 1


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "run":
        run(*args)
    elif cmd == "judge":
        sys.exit(judge(*args))
    elif cmd == "check":
        sys.exit(check(*args))
    else:
        sys.exit("usage: see the header of " + sys.argv[0])
