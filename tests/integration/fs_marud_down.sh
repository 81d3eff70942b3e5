#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_marud_down: marud disappears under a marufs mount. Calls fail with
# ETIMEDOUT within about timeout_ms (the mount does not hang), the daemon
# keeps running, and once marud is back (a new generation) the same mount
# serves new opens and writes (descriptors from before: fs_restart).
. "$(dirname "$0")/lib/common.sh"

marud_start
marufs_mount -o timeout_ms=1500
echo a >"$MNT/a"
marud_kill

t0=$SECONDS
assert_fails_with "timed out" "stat while marud is down" stat "$MNT/newname"
assert_fails_with "timed out" "create while marud is down" bash -c "echo x >'$MNT/c'"
[ $((SECONDS - t0)) -le 12 ] || fail "calls took $((SECONDS - t0))s with timeout_ms=1500"
proc_alive "$MARUFS_PID" || fail "marufs died while marud was down"

marud_launch
wait_for 20 bash -c "echo y >'$MNT/d'" 2>/dev/null || fail "no write after marud came back"
assert_eq "$(cat "$MNT/d")" y "read after marud came back"
marufs_umount
marud_stop
