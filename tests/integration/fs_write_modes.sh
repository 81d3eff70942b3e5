#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_write_modes: the ways a file is written on a marufs mount. O_EXCL
# (EEXIST on a published name, one winner among racing creators), rewrite
# without O_TRUNC (starts as a copy of the old bytes), O_APPEND, O_TRUNC,
# truncate/ftruncate, fallocate mode 0 (other modes EOPNOTSUPP), a reader that
# keeps the old version across a rewrite, several descriptors writing one
# file, fsync (data in the pool, not published), and a write-only
# descriptor (direct_io) overwriting what a reader here cached, and small
# files it wrote kept in the kernel's cache.
. "$(dirname "$0")/lib/common.sh"

marud_start
marufs_mount
marufs_mount

# O_EXCL
echo orig >"$MNT/x"
python3 - "$MNT" <<'PY' || fail "O_EXCL"
import errno, os, sys, threading
m = sys.argv[1]
try:
    os.open(f"{m}/x", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    raise SystemExit("O_EXCL on an existing file succeeded")
except FileExistsError:
    pass
# racing exclusive creators: exactly one wins
wins, bar = [], threading.Barrier(8)
def racer(i):
    bar.wait()
    try:
        fd = os.open(f"{m}/race", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.write(fd, b"winner %d" % i)
        os.close(fd)
        wins.append(i)
    except FileExistsError:
        pass
th = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
[t.start() for t in th]; [t.join() for t in th]
assert len(wins) == 1, f"{len(wins)} exclusive creators won"
assert open(f"{m}/race", "rb").read() == b"winner %d" % wins[0]
# O_EXCL while another descriptor of this mount still writes the name
fd = os.open(f"{m}/pend", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
try:
    os.open(f"{m}/pend", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    raise SystemExit("O_EXCL on a pending name succeeded")
except FileExistsError:
    pass
os.close(fd)
PY
assert_eq "$(cat "$MNT/x")" orig "failed O_EXCL left the file alone"
(set -o noclobber; echo clobber >"$MNT/x") 2>/dev/null && fail "noclobber overwrote"

# rewrite in place without O_TRUNC: a copy of the old bytes, patched
printf 'abcdefghij' >"$MNT/p"
ino=$(stat -c %i "$MNT/p")
printf 'XY' | dd of="$MNT/p" bs=1 seek=3 conv=notrunc status=none
assert_eq "$(cat "$MNT/p")" abcXYfghij "rewrite without O_TRUNC"
assert_ne "$(stat -c %i "$MNT/p")" "$ino" "a rewrite publishes a new version"
assert_eq "$(cat "$MNT2/p")" abcXYfghij "rewrite seen on the other mount"
head -c $((3 << 20)) /dev/urandom >"$T/big"
cp "$T/big" "$MNT/big"
printf 'ZZZZ' | dd of="$T/big" bs=1 seek=$((2 << 20)) conv=notrunc status=none
printf 'ZZZZ' | dd of="$MNT/big" bs=1 seek=$((2 << 20)) conv=notrunc status=none
cmp "$T/big" "$MNT/big" || fail "in-place patch of a 3 MiB file"

# O_APPEND and O_TRUNC
echo line1 >"$MNT/log"
echo line2 >>"$MNT/log"
assert_eq "$(cat "$MNT/log" | tr '\n' ' ')" "line1 line2 " "O_APPEND"
echo new >"$MNT/log"
assert_eq "$(cat "$MNT/log")" new "O_TRUNC rewrite"
: >"$MNT/log"
assert_eq "$(stat -c %s "$MNT/log")" 0 "truncate to empty by O_TRUNC"
# The publish of ': >f' (an open(O_TRUNC) and closes with no write) comes
# at release, after close() returned, and the cat before it keeps the old
# version alive in this mount's lease cache: a stat racing that release
# must still say 0 (it said 4 in about 3% of these rounds before).
bad=0
for i in $(seq 200); do
	echo new >"$MNT/log"
	cat "$MNT/log" >/dev/null
	: >"$MNT/log"
	[ "$(stat -c %s "$MNT/log")" = 0 ] || bad=$((bad + 1))
done
assert_eq "$bad" 0 "stats of 200 files just truncated by ': >' that saw the old size"

# truncate(1) on a published file, ftruncate on an open one
printf '0123456789' >"$MNT/t"
truncate -s 4 "$MNT/t"
assert_eq "$(cat "$MNT/t")" 0123 "truncate shrinks"
truncate -s 8 "$MNT/t"
assert_eq "$(od -An -c "$MNT/t" | tr -s ' ')" " 0 1 2 3 \\0 \\0 \\0 \\0" "truncate grows with zeros"
python3 - "$MNT" <<'PY' || fail "ftruncate"
import os, sys
m = sys.argv[1]
with open(f"{m}/ft", "wb") as f:
    f.write(b"x" * 100)
    f.truncate(10)
    assert os.fstat(f.fileno()).st_size == 10
assert open(f"{m}/ft", "rb").read() == b"x" * 10
PY

# fallocate mode 0 sizes the file; other modes are refused
fallocate -l 1M "$MNT/fa" || fail "fallocate mode 0"
assert_eq "$(stat -c %s "$MNT/fa")" 1048576 "fallocate extends the size"
assert_eq "$(cmp -n 1048576 "$MNT/fa" /dev/zero && echo zero)" zero "fallocated bytes read as zeros"
python3 - "$MNT/fa" <<'PY' || fail "fallocate modes other than 0"
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDWR)
for mode in (0x01, 0x03, 0x10):    # KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE
    assert libc.fallocate(fd, mode, 0, 4096) == -1, f"mode {mode:#x} accepted"
    assert ctypes.get_errno() == errno.EOPNOTSUPP, f"mode {mode:#x}: {os.strerror(ctypes.get_errno())}"
os.close(fd)
PY

# a reader keeps the version it opened while the name is rewritten
python3 - "$MNT" <<'PY' || fail "reader across a rewrite"
import os, sys
m = sys.argv[1]
old = os.urandom(300000)
with open(f"{m}/rv", "wb") as f:
    f.write(old)
r = open(f"{m}/rv", "rb")
first = r.read(1000)
with open(f"{m}/rv", "wb") as f:
    f.write(b"new content")
rest = r.read()
r.close()
assert first + rest == old, "reader saw bytes of the new version"
assert open(f"{m}/rv", "rb").read() == b"new content"
PY

# two descriptors writing one file, closed in turn: one version, both writes
python3 - "$MNT" "$MNT2" <<'PY' || fail "shared writers"
import os, sys
m, m2 = sys.argv[1], sys.argv[2]
a = os.open(f"{m}/shared", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
b = os.open(f"{m}/shared", os.O_WRONLY)
os.pwrite(a, b"AAAA", 0)
os.pwrite(b, b"BBBB", 4)
os.close(a)
assert not os.path.exists(f"{m2}/shared") or open(f"{m2}/shared", "rb").read() in (b"", b"AAAABBBB"), \
    "a partial version was published while a writer was still open"
os.close(b)
assert open(f"{m}/shared", "rb").read() == b"AAAABBBB"
PY

# fsync puts data in the pool without publishing
python3 - "$MNT" "$MNT2" <<'PY' || fail "fsync"
import os, sys
m, m2 = sys.argv[1], sys.argv[2]
fd = os.open(f"{m}/synced", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
os.write(fd, b"durable")
os.fsync(fd)
os.fdatasync(fd)
assert not os.path.exists(f"{m2}/synced"), "fsync published the file"
os.close(fd)
assert open(f"{m2}/synced", "rb").read() == b"durable"
PY

# a file unlinked while open for writing stays usable through its
# descriptor (writes and reads), close succeeds, and nothing is published
python3 - "$MNT" "$MNT2" <<'PY' || fail "unlinked while open for write"
import os, sys
m, m2 = sys.argv[1], sys.argv[2]
fd = os.open(f"{m}/gone", os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o644)
os.write(fd, b"before ")
os.unlink(f"{m}/gone")
assert not os.path.exists(f"{m}/gone")
os.write(fd, b"after")
assert os.pread(fd, 100, 0) == b"before after", "read back through the descriptor"
assert os.fstat(fd).st_size == 12
os.close(fd)
assert not os.path.exists(f"{m}/gone") and not os.path.exists(f"{m2}/gone"), "unlinked file published"
PY

# utimensat (atime kept for external evictors) and chmod/chown
python3 - "$MNT" "$MNT2" <<'PY' || fail "stored attributes"
import os, sys, time
m, m2 = sys.argv[1], sys.argv[2]
with open(f"{m}/attrs", "wb") as f:
    f.write(b"a" * 28 + b"payload")
os.utime(f"{m}/attrs", ns=(1_600_000_000_123_456_789, 1_500_000_000_000_000_000))
st = os.stat(f"{m}/attrs")
assert st.st_atime_ns == 1_600_000_000_123_456_789, st.st_atime_ns
assert st.st_mtime_ns == 1_500_000_000_000_000_000, st.st_mtime_ns
before = time.time()
os.utime(f"{m}/attrs")                      # UTIME_NOW
assert os.stat(f"{m}/attrs").st_atime >= before - 1
os.chmod(f"{m}/attrs", 0o600)
os.chown(f"{m}/attrs", 1234, 5678)
time.sleep(0.3)
st2 = os.stat(f"{m2}/attrs")
assert (st2.st_mode & 0o7777, st2.st_uid, st2.st_gid) == (0o600, 1234, 5678), \
    f"other mount sees {oct(st2.st_mode)} {st2.st_uid} {st2.st_gid}"
with open(f"{m2}/attrs", "rb") as f:     # llm-d: the tail after SEEK_END
    f.seek(-7, os.SEEK_END)
    assert f.read() == b"payload"
PY

# A descriptor open for writing only writes around the kernel's page cache
# (direct_io): pages a reader on the same mount cached of what it then
# overwrites are dropped before its write returns, so the reader's next
# read, and every open after the publish, sees the new bytes.
python3 - "$MNT" "$MNT2" <<'PY' || fail "write-only writer beside a caching reader"
import os, sys
m, m2 = sys.argv[1], sys.argv[2]
for rnd in range(3):
    p = f"{m}/wo{rnd}"
    w = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    assert os.write(w, b"a" * 65536) == 65536
    r = os.open(p, os.O_RDONLY)                 # attaches to the pending file
    assert os.pread(r, 65536, 0) == b"a" * 65536, "reader of the pending file"
    assert os.pwrite(w, b"b" * 4096, 8192) == 4096
    got = os.pread(r, 65536, 0)
    assert got == b"a" * 8192 + b"b" * 4096 + b"a" * 53248, \
        f"round {rnd}: the reader kept its cached pages: {got[8192:8200]!r}"
    os.close(w)                                 # publishes (the reader stays)
    with open(p, "rb") as f:
        assert f.read()[8192:8200] == b"b" * 8, "an open after the publish"
    os.close(r)
    with open(p, "rb") as f:
        assert f.read() == b"a" * 8192 + b"b" * 4096 + b"a" * 53248
    with open(f"{m2}/wo{rnd}", "rb") as f:
        assert f.read()[8192:8200] == b"b" * 8, "the other mount"
PY

# A small new file written through a write-only descriptor is put into the
# kernel's page cache at its publish (marufs_cache_stores_total): reading it
# back on this mount takes no READ, as when writes went through the cache.
python3 - "$MNT" <<'PY' || fail "small write-only files kept in the kernel's cache"
import os, sys
m = sys.argv[1]
def stats():
    with open(f"{m}/.maru/stats") as f:
        v = dict(l.split()[:2] for l in f if l[0] != "#")
    return int(v['marufs_fuse_ops_total{op="read"}']), int(v["marufs_cache_stores_total"])
os.mkdir(f"{m}/small")
for i in range(20):
    with open(f"{m}/small/{i}", "wb") as f:
        f.write(bytes([65 + i]) * 3000)
s0 = stats(); s1 = stats(); cost = s1[0] - s0[0]
for i in range(20):
    with open(f"{m}/small/{i}", "rb") as f:
        assert f.read() == bytes([65 + i]) * 3000
s2 = stats()
reads = s2[0] - s1[0] - cost
assert reads == 0, f"{reads} READs for 20 small files just written"
assert s2[1] >= 20, f"only {s2[1]} stores"
PY

marufs_umount "$MNT2"
marufs_umount
marud_stop
