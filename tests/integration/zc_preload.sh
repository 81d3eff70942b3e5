#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# zc_preload: libmaru-preload.so serves large reads and mmap of marufs files
# from the pool memory, byte-identical to FUSE, under cat, dd, cmp, python3
# (mmap, readinto, readv, fork) and a multi-threaded C reader that also
# churns descriptors with close and dup2; a reopen of the same version reuses
# the mapping kept from its last close; and it leaves alone what it must:
# other filesystems, small reads, O_WRONLY and O_RDWR descriptors, a
# data=tcp mount, and everything when MARU_PRELOAD=0.
. "$(dirname "$0")/lib/common.sh"

Z=$TOOLS/zc_tool
PRELOAD=${MARU_PRELOAD_LIB:-$(cd "$TOOLS/../../.." && pwd)/lib/libmaru-preload.so}
# an ASan build's shim needs the ASan runtime in its host program (cat has none)
if nm -D --undefined-only "$PRELOAD" 2>/dev/null | grep -q __asan_init; then
	skip "the preload shim of a sanitizer build cannot load into plain programs"
fi
[ -f "$PRELOAD" ] || fail "no $PRELOAD"

# shim LOG CMD...: run CMD under the shim, its log in $T/LOG.log
shim()
{
	local logf=$T/$1.log
	shift
	LD_PRELOAD=$PRELOAD MARU_PRELOAD_LOG=1 "$@" 2>"$logf"
}
served() { grep -c "(zero-copy)" "$T/$1.log" || true; }

marud_start
marufs_mount
marufs_mount

"$Z" gen $((32 << 20)) 1 >"$T/r32m"
cp "$T/r32m" "$MNT/c32"
"$Z" gen $((2 << 20 | 1)) 2 >"$T/r2m1"
cp "$T/r2m1" "$MNT/f2m1"
printf x >"$MNT/one"
python3 - "$MNT" <<'PY' || fail "interleaved writes"
import os, sys
m = sys.argv[1]
with open(f"{m}/ma", "wb") as a, open(f"{m}/mb", "wb") as b:
    for i in range(8):
        a.write(os.urandom(1 << 20)); a.flush()
        b.write(os.urandom(1 << 20)); b.flush()
PY
[ "$("$Z" extents "$MNT/ma" | tr ',' '\n' | wc -l)" -ge 2 ] || fail "ma is one extent"
cat "$MNT/ma" >"$T/rma"

# ---- cat, dd, cmp ----
shim cat env MARU_PRELOAD_MIN=65536 cat "$MNT/c32" >"$T/out" || fail "cat under the shim"
cmp "$T/r32m" "$T/out" || fail "cat: bytes differ"
[ "$(served cat)" -gt 0 ] || fail "cat: nothing served zero-copy: $(head "$T/cat.log")"

shim dd dd if="$MNT/c32" of="$T/out" bs=4M || fail "dd under the shim"
cmp "$T/r32m" "$T/out" || fail "dd: bytes differ"
[ "$(served dd)" -ge 8 ] || fail "dd: $(served dd) reads served zero-copy"
shim ddskip dd if="$MNT/ma" of="$T/out" bs=1M skip=3 count=4 || fail "dd skip under the shim"
dd if="$T/rma" of="$T/out.ref" bs=1M skip=3 count=4 2>/dev/null
cmp "$T/out.ref" "$T/out" || fail "dd skip= on a multi-extent file: bytes differ"
[ "$(served ddskip)" -ge 4 ] || fail "dd skip: not served"

shim cmp env MARU_PRELOAD_MIN=4096 cmp "$MNT/c32" "$T/r32m" || fail "cmp under the shim"
[ "$(served cmp)" -gt 0 ] || fail "cmp: nothing served zero-copy"
cp "$T/r32m" "$T/r32m.x"
printf 'Z' | dd of="$T/r32m.x" bs=1 seek=$((20 << 20)) conv=notrunc 2>/dev/null
if shim cmpx env MARU_PRELOAD_MIN=4096 cmp "$MNT/c32" "$T/r32m.x" >/dev/null; then
	fail "cmp under the shim missed a difference"
fi

# ---- python: readinto, readv, mmap, fork ----
shim py env MARU_PRELOAD_MIN=4096 python3 - "$MNT" "$T" <<'PY' || fail "python under the shim"
import mmap, os, sys
m, t = sys.argv[1], sys.argv[2]
for name, ref in (("c32", "r32m"), ("f2m1", "r2m1"), ("ma", "rma"), ("one", None)):
    want = open(f"{t}/{ref}", "rb").read() if ref else b"x"
    with open(f"{m}/{name}", "rb", buffering=0) as f:
        buf = bytearray(len(want) + 10)
        n = f.readinto(buf)
        assert n == len(want) and buf[:n] == want, f"readinto {name}"
        assert f.readinto(buf) == 0, f"EOF {name}"
        f.seek(1)
        parts = [bytearray(4096), bytearray(len(want))]
        n = os.readv(f.fileno(), parts)
        assert n == len(want) - 1 and (parts[0] + parts[1])[:n] == want[1:], f"readv {name}"
        assert os.pread(f.fileno(), 8192, 3) == want[3:8195], f"pread {name}"
        if len(want) >= 4096:
            mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            assert mm[:] == want, f"mmap {name}"
            mp = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
            assert mp[:] == want, f"mmap private {name}"
            mo = mmap.mmap(f.fileno(), 1 << 20, prot=mmap.PROT_READ, offset=1 << 20) \
                if len(want) >= 2 << 20 else None
            assert mo is None or mo[:] == want[1 << 20:2 << 20], f"mmap offset {name}"
            # fork after mapping: the child reads the mapping and the fd
            pid = os.fork()
            if pid == 0:
                ok = mm[:] == want and os.pread(f.fileno(), len(want), 0) == want
                os._exit(0 if ok else 1)
            _, st = os.waitpid(pid, 0)
            assert st == 0, f"fork child {name}"
            assert mm[:] == want, f"mmap after fork {name}"
            for x in (mm, mp, mo):
                if x is not None:
                    x.close()

# dup2 over a cached descriptor: it now reads the other file
a = os.open(f"{m}/c32", os.O_RDONLY)
assert os.read(a, 1 << 20) == open(f"{t}/r32m", "rb").read(1 << 20)
b = os.open(f"{m}/f2m1", os.O_RDONLY)
os.dup2(b, a)
assert os.pread(a, 1 << 20, 0) == open(f"{t}/r2m1", "rb").read(1 << 20), "dup2"
os.close(a); os.close(b)

# close and reopen: the same fd number, another file
a = os.open(f"{m}/c32", os.O_RDONLY)
os.pread(a, 1 << 20, 0)
os.close(a)
a2 = os.open(f"{m}/ma", os.O_RDONLY)
assert a2 == a
assert os.pread(a2, 1 << 20, 0) == open(f"{t}/rma", "rb").read(1 << 20), "fd reuse"
os.close(a2)

# a writable shared mapping of a pending file, published at munmap
want = bytes(range(256)) * 8192
fd = os.open(f"{m}/pw", os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o644)
os.ftruncate(fd, len(want))
w = mmap.mmap(fd, len(want), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
w[:] = want
w.close()
os.close(fd)
assert open(f"{m}/pw", "rb").read() == want, "pw"
PY
[ "$(grep -c "mmap fd .*(zero-copy)" "$T/py.log")" -ge 4 ] || fail "python: mmap not served"
grep -q "writable (zero-copy)" "$T/py.log" || fail "python: the writable mmap was not served"
grep -q "^maru-preload: read fd" "$T/py.log" || fail "python: no read served"
cmp <(python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 8192)') "$MNT2/pw" ||
	fail "writable mmap through the shim: other mount sees other bytes"

# ---- a multi-threaded C reader ----
shim mt "$Z" mtread "$MNT/c32" "$T/r32m" 4 30 || fail "threaded reader"
[ "$(served mt)" -gt 100 ] || fail "threaded reader: $(served mt) reads served"
shim mt2 "$Z" mtread "$MNT/ma" "$T/rma" 3 20 || fail "threaded reader, multi-extent"

# ---- reopens: the mapping kept from the last close ----
# Each open of the same version after the first reuses its mapping (no
# MARUFS_IOC_EXTENTS); a new mtime is another key (mapped anew), and a
# rewrite is a new version, never read through the old one's mapping.
ioctls() { awk '$1 == "marufs_fuse_ops_total{op=\"ioctl\"}" { print $2 }' "$MNT/.maru/stats"; }
"$Z" gen $((1 << 20)) 7 >"$T/rk1"
"$Z" gen $((1 << 20)) 8 >"$T/rk2"
cp "$T/rk1" "$MNT/rk"
cp "$T/rk1" "$MNT/rk0"
i0=$(ioctls)
shim reopen0 dd if="$MNT/rk0" of=/dev/null bs=1M || fail "dd of rk0"
per_map=$(( $(ioctls) - i0 ))	# the FUSE requests of one MARUFS_IOC_EXTENTS
[ "$per_map" -ge 1 ] || fail "a first open asked for no extents"
i0=$(ioctls)
shim reopen python3 - "$MNT/rk" "$T/rk1" "$T/rk2" <<'PY' || fail "reopens under the shim"
import os, shutil, sys
path, one, two = sys.argv[1], open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
def reads(want, n):
    for _ in range(n):
        fd = os.open(path, os.O_RDONLY)
        got = os.read(fd, len(want) + 1)
        os.close(fd)
        assert got == want, "a reopen read other bytes"
reads(one, 5)
os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
reads(one, 1)       # another mtime: not the kept mapping's key, mapped anew
with open(path + ".tmp", "wb") as f:               # a new version of the name
    f.write(two)
os.replace(path + ".tmp", path)
reads(two, 5)
PY
i1=$(ioctls)
[ "$(served reopen)" = 11 ] || fail "reopens: $(served reopen) of 11 reads served"
[ "$(grep -c "kept from an earlier open" "$T/reopen.log")" = 8 ] ||
	fail "reopens: the kept mapping was reused $(grep -c kept "$T/reopen.log") times, not 8"
[ "$(grep -c "bytes for reads" "$T/reopen.log")" = 3 ] ||
	fail "reopens: $(grep -c "bytes for reads" "$T/reopen.log") mappings made, not 3"
# 11 opens without kept mappings would ask for extents 11 times at least
[ $((i1 - i0)) -le $((3 * per_map)) ] ||
	fail "reopens: $((i1 - i0)) ioctl requests for 3 mappings ($per_map per mapping)"

# ---- what it leaves alone ----
shim other dd if="$T/r32m" of=/dev/null bs=4M || fail "dd of a tmpfs file"
[ "$(served other)" = 0 ] || fail "a file of another filesystem was intercepted"
shim small dd if="$MNT/c32" of="$T/out" bs=64k || fail "small reads"
cmp "$T/r32m" "$T/out" || fail "small reads: bytes differ"
[ "$(served small)" = 0 ] || fail "reads below MARU_PRELOAD_MIN were intercepted"
shim off env MARU_PRELOAD=0 dd if="$MNT/c32" of="$T/out" bs=4M || fail "MARU_PRELOAD=0"
cmp "$T/r32m" "$T/out" || fail "MARU_PRELOAD=0: bytes differ"
if grep -q "maru-preload" "$T/off.log"; then fail "MARU_PRELOAD=0 still intercepts"; fi
shim modes python3 - "$MNT" "$T" <<'PY' || fail "O_WRONLY / O_RDWR descriptors"
import errno, os, sys
m, t = sys.argv[1], sys.argv[2]
want = open(f"{t}/r32m", "rb").read()
fd = os.open(f"{m}/c32", os.O_WRONLY)
try:
    os.read(fd, 1 << 20)
    sys.exit("read on O_WRONLY succeeded")
except OSError as e:
    assert e.errno == errno.EBADF, e
os.close(fd)
fd = os.open(f"{m}/c32", os.O_RDWR)
assert os.pread(fd, 4 << 20, 0) == want[:4 << 20], "O_RDWR read"
os.pwrite(fd, b"new", 0)
assert os.pread(fd, 4 << 20, 0) == b"new" + want[3:4 << 20], "O_RDWR read after write"
os.close(fd)
PY
[ "$(served modes)" = 0 ] || fail "O_WRONLY/O_RDWR reads were intercepted: $(cat "$T/modes.log")"
printf 'new' | cmp -n 3 - "$MNT2/c32" || fail "write through O_RDWR under the shim lost"

marufs_mount -o data=tcp
shim tcp dd if="$LAST_MNT/f2m1" of="$T/out" bs=4M || fail "dd on a data=tcp mount"
cmp "$T/r2m1" "$T/out" || fail "data=tcp mount: bytes differ"
[ "$(served tcp)" = 0 ] || fail "a data=tcp mount was served zero-copy"
grep -q "not mapped" "$T/tcp.log" || fail "data=tcp: no fall-through logged"
marufs_umount "$LAST_MNT"

wait_accounting_ok
marufs_umount "$MNT2"
marufs_umount
marud_stop
