#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_daemon_log: a daemonized marufs (no -f) with -o logfile=PATH writes its
# log there: its own lines (the "mounted" line, which names its pid) and
# libmaru's, passed through maru_client_opts.log_fn. With marud stopped, a
# request on the mount makes libmaru log "marud at ... unreachable"; that line
# must be in the file. Then marud comes back, the mount serves writes again,
# and an unmount ends the daemon.
. "$(dirname "$0")/lib/common.sh"
skip_unless_fuse

marud_start
mnt=$T/mnt
logf=$T/x.log
mkdir -p "$mnt"
"$MARUFS" -o logfile="$logf" -o timeout_ms=1500 "$MARU_URI" "$mnt" \
	>>"$T/marufs-start.log" 2>&1 || fail "daemonized marufs did not mount"
MARUFS_LOG_OF[$mnt]=$logf	# the EXIT trap unmounts it
wait_for "$MARU_IT_TIMEOUT" mountpoint -q "$mnt" || fail "$mnt not mounted"

# marufs's own lines reach the file after the fork.
wait_for "$MARU_IT_TIMEOUT" grep -q "mounted .* on $mnt " "$logf" ||
	fail "marufs's own 'mounted' line is not in $logf"
pid=$(sed -n "s|.*mounted .* on $mnt .*pid \([0-9][0-9]*\)).*|\1|p" "$logf" | tail -n 1)
[ -n "$pid" ] && proc_alive "$pid" || fail "no live marufs pid in $logf"
MARUFS_PID_OF[$mnt]=$pid	# and stops it
echo a >"$mnt/a"
assert_eq "$(cat "$mnt/a")" a "read back before marud stops"

# libmaru's lines: marud goes away and a request notices. The line must come
# through marufs's own sink (log_fn, "libmaru: " prefix), not merely through
# libmaru's private copy of the log state writing to the same descriptor.
marud_stop
stat "$mnt/newname" >/dev/null 2>&1 || true
wait_for 15 grep -q "unreachable" "$logf" ||
	fail "libmaru's 'unreachable' line is not in $logf"
grep -q "^marufs: libmaru: .*unreachable" "$logf" ||
	fail "libmaru's 'unreachable' line did not come through log_fn: $(grep unreachable "$logf")"
proc_alive "$pid" || fail "marufs died while marud was down"

# SIGUSR1 reopens the file: after a rotation new lines go to a new one.
mv "$logf" "$logf.1"
kill -USR1 "$pid"
marud_launch
wait_for 20 bash -c "echo b >'$mnt/b'" 2>/dev/null || fail "no write after marud came back"
assert_eq "$(cat "$mnt/b")" b "read back after marud came back"
wait_for "$MARU_IT_TIMEOUT" test -s "$logf" || fail "nothing logged to $logf after SIGUSR1"

wait_for 5 fusermount3 -u "$mnt" || fail "fusermount3 -u $mnt failed"
wait_for "$MARU_IT_TIMEOUT" eval '! proc_alive '"$pid" ||
	fail "marufs still runs ${MARU_IT_TIMEOUT}s after unmount"
unset "MARUFS_PID_OF[$mnt]"
marud_stop
