#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# zc_stale: a zero-copy mapping made under one marud generation is refused
# after marud restarts: maru_map_check() says ESTALE, a new maru_map() of the
# old descriptor fails, the preload shim stops serving the old descriptor
# (FUSE answers EIO, never stale bytes), and new files map again.
. "$(dirname "$0")/lib/common.sh"

Z=$TOOLS/zc_tool
PRELOAD=${MARU_PRELOAD_LIB:-$(cd "$TOOLS/../../.." && pwd)/lib/libmaru-preload.so}
# an ASan build's shim needs the ASan runtime in its host program (cat has none)
if nm -D --undefined-only "$PRELOAD" 2>/dev/null | grep -q __asan_init; then
	skip "the preload shim of a sanitizer build cannot load into plain programs"
fi
[ -f "$PRELOAD" ] || fail "no $PRELOAD"
marud_start
marufs_mount

"$Z" gen $((4 << 20)) 1 >"$MNT/f"
coproc S { exec "$Z" stale "$MNT/f"; }
spid=$S_PID
# Our own copies of the coprocess's pipes: bash unsets S (and closes its
# descriptors) as soon as it reaps the finished coprocess, which can happen
# before its verdict is read.
exec {s_out}<&"${S[0]}" {s_in}>&"${S[1]}"
read -r -t 20 line <&"$s_out" || fail "zc_tool stale did not get ready"
assert_eq "$line" ready "zc_tool stale"

# the shim: a descriptor mapped before the restart
LD_PRELOAD=$PRELOAD MARU_PRELOAD_LOG=1 python3 - "$MNT/f" "$T/shim.out" 2>"$T/shim.log" <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
buf = bytearray(1 << 20)
n1 = os.readv(fd, [buf])
open(sys.argv[2] + ".ready", "w").close()
while not os.path.exists(sys.argv[2] + ".go"):
    time.sleep(0.05)
try:
    n2 = os.preadv(fd, [buf], 0)
    res = f"read {n2}"
except OSError as e:
    res = f"error {e.errno}"
open(sys.argv[2], "w").write(f"{n1} {res}\n")
PY
py=$!
wait_for 10 test -e "$T/shim.out.ready" || fail "shim reader did not start"

marud_restart

echo go >&"$s_in"
read -r -t 20 res <&"$s_out" || fail "zc_tool stale gave no verdict"
wait "$spid" || fail "old-generation mapping was not refused"
log "maru_map of the old descriptor: $res"

touch "$T/shim.out.go"
wait "$py" || fail "shim reader crashed"
read -r n1 verdict <"$T/shim.out"
assert_eq "$n1" $((1 << 20)) "first shim read"
grep -q "zero-copy" "$T/shim.log" || fail "the first read was not served by the shim: $(cat "$T/shim.log")"
case "$verdict" in
"error 5") ;;
*) fail "read of an old-generation descriptor after restart: $verdict (want EIO)" ;;
esac

# new opens work and map again
wait_for 10 eval '"$Z" gen 100000 2 >"$MNT/g" 2>/dev/null' || fail "cannot write after restart"
"$Z" cmp "$MNT/g" >/dev/null || fail "maru_map after restart"
marufs_umount
marud_stop
