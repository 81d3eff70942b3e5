#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# zc_dax_growth: files written through the mount piece by piece (cp, dd with
# 64 KiB blocks, and a writer that interleaves four files in 64-128 KiB
# pieces, all growing past 2 MiB) map zero-copy on a device-DAX pool with a
# 2 MiB alignment: maru_map (by path and by fd) matches FUSE, every extent
# after a file's first starts on 2 MiB and every one before its last ends on
# 2 MiB, and the preload shim serves dd from the pool, not FUSE. A file
# sized first (truncate, then write) is checked the same way; after a warm
# restart of marud on the device the files still map, and so do files
# written by the recovered allocator.
# Real: marud's dax: backend, the allocator, marufs, libmaru's devdax
# mapping rules and the shim. Emulated here: the device. tools/fakedax.so
# (LD_PRELOAD into every process) passes a regular file off as a char
# device of 2 MiB alignment to libdaxctl's walk and to stat; the kernel's
# own devdax mmap checks do not run. With MARU_TEST_DAX=/dev/daxX.Y (a
# device that may be overwritten, at least 256 MiB; tests/vm boots one) the
# same case runs on that real device through the real libdaxctl instead.
. "$(dirname "$0")/lib/common.sh"

Z=$TOOLS/zc_tool
PRELOAD=${MARU_PRELOAD_LIB:-$(cd "$TOOLS/../../.." && pwd)/lib/libmaru-preload.so}
if nm -D --undefined-only "$PRELOAD" 2>/dev/null | grep -q __asan_init; then
	skip "the preload shim of a sanitizer build cannot load into plain programs"
fi
[ -f "$PRELOAD" ] || fail "no $PRELOAD"
SHIM=$PRELOAD

if [ -n "${MARU_TEST_DAX:-}" ]; then
	dev=$MARU_TEST_DAX
	[ -c "$dev" ] || fail "MARU_TEST_DAX=$dev is not a character device"
	log "on the real device $dev"
else
	FAKEDAX=$TOOLS/fakedax.so
	[ -f "$FAKEDAX" ] || skip "built without libdaxctl: no fake device module"
	dev=$T/dax9.0
	truncate -s 256M "$dev"
	export FAKEDAX_PATH=$dev FAKEDAX_ALIGN=$((2 << 20)) LD_PRELOAD=$FAKEDAX
	SHIM="$FAKEDAX $PRELOAD"
fi
marud_start --pool "dax:$dev" --size 256M
G=$(sed -n 's/.*pool: opened dax at .*, align \([0-9]*\),.*/\1/p' "$T/marud.log" | tail -1)
[ -n "$G" ] || fail "marud logged no pool alignment"
[ "$G" -ge $((2 << 20)) ] || skip "$dev has a $G-byte alignment: nothing to show below 2 MiB"
log "pool alignment $G"
marufs_mount
"$Z" gen $((3 << 20)) 9 >"$MNT/warm"	# a file before them: not at the pool's start

# ---- files that grow piece by piece, several at once ----
"$Z" gen $((2 << 20 | 64 << 10)) 1 >"$T/r_cp"
"$Z" gen $((5 << 20 | 12 << 10)) 2 >"$T/r_dd"
"$Z" gen $((7 << 20 | 300 << 10)) 3 >"$T/r_cp2"
cp "$T/r_cp" "$MNT/cp" & p1=$!
dd if="$T/r_dd" of="$MNT/dd" bs=64k 2>/dev/null & p2=$!
dd if="$T/r_cp2" of="$MNT/cp2" bs=128k 2>/dev/null & p3=$!
wait $p1 || fail "cp onto the mount"
wait $p2 || fail "dd bs=64k onto the mount"
wait $p3 || fail "dd bs=128k onto the mount"
python3 - "$MNT" "$T" <<'PY' || fail "interleaved writer"
import os, random, sys
m, t = sys.argv[1], sys.argv[2]
random.seed(7)
sizes = [(2 << 20) + (64 << 10), (3 << 20) + 4096, 2 << 20, (9 << 20) + (300 << 10)]
data = [os.urandom(s) for s in sizes]
fs = [open(f"{m}/il{i}", "wb", buffering=0) for i in range(len(sizes))]
pos = [0] * len(sizes)
while any(p < s for p, s in zip(pos, sizes)):
    for i, f in enumerate(fs):
        if pos[i] < sizes[i]:
            n = min(random.randint(64, 128) << 10, sizes[i] - pos[i])
            f.write(data[i][pos[i]:pos[i] + n])
            pos[i] += n
for i, f in enumerate(fs):
    f.close()
    with open(f"{t}/r_il{i}", "wb") as r:
        r.write(data[i])
# sized first, then written: one reservation up front
d = os.urandom((3 << 20) + 5)
with open(f"{m}/sized", "wb", buffering=0) as f:
    f.truncate(len(d))
    for o in range(0, len(d), 100 << 10):
        f.write(d[o:o + (100 << 10)])
with open(f"{t}/r_sized", "wb") as r:
    r.write(d)
PY

files="cp dd cp2 il0 il1 il2 il3 sized"
for f in $files; do
	cmp "$T/r_$f" "$MNT/$f" || fail "$f: FUSE read differs from what was written"
	ext=$("$Z" extents "$MNT/$f") || fail "$f: no extents"
	log "$f: $ext"
	out=$("$Z" cmp "$MNT/$f" 2>&1) || fail "$f: maru_map on a $G-byte aligned device: $out"
	n=0
	last=$(echo "$ext" | tr ',' '\n' | wc -l)
	for e in $(echo "$ext" | tr ',' ' '); do
		n=$((n + 1))
		off=${e%+*}
		len=${e#*+}
		[ $n -eq 1 ] || [ $((off % G)) -eq 0 ] ||
			fail "$f: extent $n ($e) does not start on the alignment"
		[ $n -eq "$last" ] || [ $(((off + len) % G)) -eq 0 ] ||
			fail "$f: extent $n ($e) does not end on the alignment"
	done
done

# ---- the shim serves them from the pool ----
for f in $files; do
	LD_PRELOAD="$SHIM" MARU_PRELOAD_LOG=1 \
		dd if="$MNT/$f" of="$T/out" bs=1M 2>"$T/shim-$f.log" || fail "$f: dd under the shim"
	cmp "$T/r_$f" "$T/out" || fail "$f: shim read differs"
	grep -q "(zero-copy)" "$T/shim-$f.log" ||
		fail "$f: the shim fell back to FUSE: $(grep -v records "$T/shim-$f.log" | head -3)"
done
log "8 files written through the mount map zero-copy at $G bytes"

# ---- a warm restart keeps them, and the recovered allocator keeps the shape ----
marud_restart
for f in cp il3; do
	cmp "$T/r_$f" "$MNT/$f" || fail "$f after the restart: FUSE read differs"
	out=$("$Z" cmp "$MNT/$f" 2>&1) || fail "$f after the restart: maru_map: $out"
done
dd if="$T/r_dd" of="$MNT/dd2" bs=64k 2>/dev/null & p1=$!
dd if="$T/r_cp2" of="$MNT/cp3" bs=128k 2>/dev/null & p2=$!
wait $p1 || fail "dd after the restart"
wait $p2 || fail "dd after the restart"
cmp "$T/r_dd" "$MNT/dd2" || fail "dd2: FUSE read differs"
cmp "$T/r_cp2" "$MNT/cp3" || fail "cp3: FUSE read differs"
for f in dd2 cp3; do
	out=$("$Z" cmp "$MNT/$f" 2>&1) || fail "$f, written after the restart: maru_map: $out"
done
marufs_umount
marud_stop
