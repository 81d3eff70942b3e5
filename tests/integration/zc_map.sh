#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# zc_map: zero-copy mappings of marufs files (marufs-design(7) §5) with libmaru's
# maru_map(): the MARUFS_IOC_EXTENTS ioctl agrees with user.maru.extent and
# .maru/pool; mappings are byte-identical to FUSE reads for 1 B, 4 KiB,
# 2 MiB+1, 32 MiB and multi-extent files; a mapping survives unlink and
# rename-over of its name and a fork; a writable mapping of a pending file
# publishes only when it is unmapped; bad requests are refused; a data=tcp
# mount hands out no pool addresses.
. "$(dirname "$0")/lib/common.sh"

Z=$TOOLS/zc_tool
marud_start
marufs_mount
marufs_mount

# ---- the ioctl and the xattr tell the same ----
"$Z" gen $((2 << 20 | 1)) 1 >"$T/r2m1"
cp "$T/r2m1" "$MNT/f"
assert_eq "$("$Z" extents "$MNT/f")" "$(getfattr -n user.maru.extent --only-values "$MNT/f")" \
	"ioctl extents vs user.maru.extent"
"$Z" info "$MNT/f" >"$T/info"
grep -qx "size=$((2 << 20 | 1))" "$T/info" || fail "ioctl size: $(cat "$T/info")"
grep -qx "generation=$(getfattr -n user.maru.generation --only-values "$MNT/f")" "$T/info" ||
	fail "ioctl generation differs from user.maru.generation"
grep -qx "ino=$(stat -c %i "$MNT/f")" "$T/info" || fail "ioctl ino differs from st_ino"
uuid=$(sed -n 's/^uuid=//p' "$T/info")
grep -qi "$(echo "$uuid" | sed -E 's/(.{8})(.{4})(.{4})(.{4})(.{12})/\1-\2-\3-\4-\5/')" \
	"$MNT/.maru/pool" || fail "ioctl uuid $uuid not in .maru/pool: $(cat "$MNT/.maru/pool")"
grep -qx "pool_path=/dev/shm/${MARUD_POOL#shm:}" "$T/info" || fail "pool path: $(cat "$T/info")"
grep -qx "coherence=hw" "$T/info" || fail "default coherence is not hw"

# ---- byte-identical to FUSE reads ----
printf x >"$MNT/one"
"$Z" gen 4096 2 >"$MNT/page"
"$Z" gen $((32 << 20)) 3 >"$T/r32m"
cp "$T/r32m" "$MNT/c32"
for f in one page f c32; do
	"$Z" cmp "$MNT/$f" >/dev/null || fail "maru_map of $f differs from FUSE"
done
cmp "$T/r32m" "$MNT/c32" || fail "FUSE read of c32 differs from what was written"

# several extents: two files written in turns grow side by side
python3 - "$MNT" <<'PY' || fail "interleaved writes"
import os, sys
m = sys.argv[1]
with open(f"{m}/ma", "wb") as a, open(f"{m}/mb", "wb") as b:
    for i in range(10):
        a.write(os.urandom(1 << 20)); a.flush()
        b.write(os.urandom((1 << 20) + 4096)); b.flush()
PY
n=$("$Z" extents "$MNT/ma" | tr ',' '\n' | wc -l)
[ "$n" -ge 2 ] || fail "ma has $n extent(s): the multi-extent case did not happen"
"$Z" cmp "$MNT/ma" >/dev/null || fail "multi-extent mapping of ma differs"
"$Z" cmp "$MNT/mb" >/dev/null || fail "multi-extent mapping of mb differs"

# ---- a mapping outlives its name ----
"$Z" gen $((3 << 20)) 4 >"$MNT/gone"
"$Z" survive unlink "$MNT/gone" || fail "mapping after unlink"
[ ! -e "$MNT/gone" ] || fail "unlinked name still there"
"$Z" gen $((3 << 20)) 5 >"$MNT/old"
"$Z" gen 12345 6 >"$MNT/new"
"$Z" survive rename "$MNT/old" "$MNT/new" || fail "mapping after rename-over"
assert_eq "$(stat -c %s "$MNT/old")" 12345 "rename-over result"

# ---- fork after mapping ----
"$Z" fork "$MNT/c32" || fail "fork after maru_map"

# ---- writable mapping of a pending file: publish at unmap ----
"$Z" gen $((5 << 20)) 7 >"$T/rw"
coproc W { exec "$Z" write "$MNT/w" $((5 << 20)) 7 pause; }
wpid=$W_PID
read -r -t 20 line <&"${W[0]}" || fail "zc_tool write did not get ready"
assert_eq "$line" ready "zc_tool write"
# its fd is closed, the mapping lives: nothing published yet
[ ! -e "$MNT2/w" ] || fail "published while a writable mapping was live"
echo go >&"${W[1]}"
wait "$wpid" || fail "zc_tool write failed"
cmp "$T/rw" "$MNT2/w" || fail "writable mapping: published bytes differ (other mount)"
cmp "$T/rw" "$MNT/w" || fail "writable mapping: published bytes differ"
[ "$(getfattr -n user.maru.state --only-values "$MNT2/w")" = published ] || fail "w not published"

# a writer killed with its writable mapping live publishes nothing
coproc K { exec "$Z" write "$MNT/killed" $((2 << 20)) 10 pause; }
kpid=$K_PID
read -r -t 20 line <&"${K[0]}" || fail "zc_tool write (to be killed) did not get ready"
kill -KILL "$kpid"
wait "$kpid" 2>/dev/null || true
wait_for 5 eval '[ ! -e "$MNT/killed" ]' || fail "a killed mapping writer's file is still there"
[ ! -e "$MNT2/killed" ] || fail "a killed mapping writer published"

# a writable mapping under an existing name replaces it at unmap
"$Z" write "$MNT/c32" $((1 << 20)) 8 || fail "rewrite through a writable mapping"
"$Z" gen $((1 << 20)) 8 | cmp - "$MNT2/c32" || fail "rewritten c32 differs"

# ---- refusals ----
"$Z" readonly-flags "$MNT/f" || fail "bad requests were not refused"
python3 - "$MNT/.maru/stats" <<'PY' || fail "ioctl on .maru/stats"
import fcntl, sys, errno
try:
    fcntl.ioctl(open(sys.argv[1], "rb"), 0xC0000000 | (4704 << 16) | (0xCE << 8) | 1, bytearray(4704))
except OSError as e:
    sys.exit(0 if e.errno == errno.ENOTTY else 1)
sys.exit(1)
PY
accounting_ok

# ---- data=tcp: the isolated mode hands out nothing; coherence=flush says so ----
marufs_mount -o data=tcp
assert_fails_with "Operation not supported" "ioctl on a data=tcp mount" "$Z" info "$LAST_MNT/f"
cmp "$T/r2m1" "$LAST_MNT/f" || fail "FUSE read on data=tcp"
marufs_umount "$LAST_MNT"
marufs_mount -o coherence=flush
"$Z" info "$LAST_MNT/f" | grep -qx coherence=flush || fail "coherence=flush not reported"
"$Z" cmp "$LAST_MNT/c32" >/dev/null || fail "coherence=flush mapping differs"
"$Z" write "$LAST_MNT/wf" $((3 << 20)) 9 || fail "coherence=flush writable mapping"
"$Z" gen $((3 << 20)) 9 | cmp - "$MNT/wf" || fail "coherence=flush written bytes differ"
mkdir -p "$T/nomnt"
assert_fails "coherence=bogus must not mount" \
	timeout 10 "$MARUFS" -f -o coherence=bogus "$MARU_URI" "$T/nomnt"
marufs_umount "$LAST_MNT"

wait_accounting_ok
marufs_umount "$MNT2"
marufs_umount
marud_stop
