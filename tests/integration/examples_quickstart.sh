#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# examples_quickstart: examples/quickstart.sh, the README's main command,
# starts marud, mounts marufs, is a no-op when run again, serves files, and
# `stop` unmounts, stops marud and removes the shm pool. Run in a private
# RUNDIR, mountpoint and pool so it cannot touch a real /mnt/maru.
. "$(dirname "$0")/lib/common.sh"
skip_unless_fuse

export BUILD=${MARUD%/daemon/marud}
export RUNDIR=$T/run MNT=$T/qs MARU_POOL=shm:maru-it-$$-qs MARU_SIZE=64M MARU_TCP=
qs=$SRCDIR/examples/quickstart.sh
[ -x "$BUILD/fs/marufs" ] || fail "no marufs beside $MARUD"

on_exit "fusermount3 -uz '$MNT'; [ -r '$RUNDIR/marud.pid' ] && kill -KILL \$(cat '$RUNDIR/marud.pid')"

"$qs" >"$T/qs1.out" 2>&1 || fail "quickstart failed: $(cat "$T/qs1.out")"
mountpoint -q "$MNT" || fail "quickstart did not mount $MNT"
[ -S "$RUNDIR/marud.sock" ] || fail "no marud socket in $RUNDIR"
[ -f "/dev/shm/${MARU_POOL#shm:}" ] || fail "no pool file"
grep -q "Stop:" "$T/qs1.out" || fail "quickstart did not say how to stop"

"$qs" >"$T/qs2.out" 2>&1 || fail "second quickstart failed: $(cat "$T/qs2.out")"
grep -q "already mounted" "$T/qs2.out" || fail "second run did not say it is mounted"

printf 'kv-chunk\n' >"$T/chunk"
cp "$T/chunk" "$MNT/chunk.bin"
cmp "$T/chunk" "$MNT/chunk.bin" || fail "read back differs"
st=$("$qs" status)
grep -q "marufs: mounted" <<<"$st" || fail "status does not report the mount: $st"

pid=$(cat "$RUNDIR/marud.pid")
"$qs" stop >"$T/qs3.out" 2>&1 || fail "quickstart stop failed: $(cat "$T/qs3.out")"
! mountpoint -q "$MNT" || fail "still mounted after stop"
[ ! -e "/dev/shm/${MARU_POOL#shm:}" ] || fail "pool file left after stop"
! kill -0 "$pid" 2>/dev/null || fail "marud $pid still runs after stop"
st=$("$qs" status)
grep -q "marud: not running" <<<"$st" || fail "status after stop: $st"
