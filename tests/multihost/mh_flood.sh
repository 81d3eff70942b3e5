#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mh_flood: unauthenticated connections cannot lock clients out (issue 22).
# Hosts: pool (marud, default --max-conns 1024), w1 (mount A, up before the
# flood), w2 (a new mount during it) and atk. From atk, 2000 connections that
# send nothing and 200 that announce an 8 MiB AUTH frame and send one byte a
# second. While they are held:
# - a new mount with the right key on w2 comes up within MH_MOUNT_MS (1500:
#   the issue's second, plus 0.5 s for starting marufs on this shared machine);
# - A, its TCP sockets reset (ss -K in w1), reconnects and publishes within
#   5 s, and B reads what it wrote;
# - marud's thread count grows by at most MH_THREADS_MAX (16) over its count
#   before the flood (the issue saw 10 -> 210);
# - marud's log gains at most MH_LOG_MAX (100) lines during the flood
#   (refusals logged rate-limited with a count: the issue saw 983);
# - after MH_FLOOD_S (20 s) the slow connections have all been closed by
#   marud (handshake deadline).
# Real: TCP between namespaces, marud, the mounts, the raw connections.
. "$(dirname "$0")/lib.sh"
: "${MH_MOUNT_MS:=1500}"
: "${MH_THREADS_MAX:=16}"
: "${MH_LOG_MAX:=100}"
: "${MH_FLOOD_S:=20}"
mh_init
mh_host pool
mh_host w1
mh_host w2
mh_host atk
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
mh_marud_start pool
mh_mount w1
A=$LAST_MNT
echo before >"$A/before"
threads()
{
	awk '/^Threads:/ { print $2 }' "/proc/$MARUD_PID/status"
}
th0=$(threads)
log0=$(wc -l <"$T/marud.log")

mh_bg atk python3 "$SRCDIR/tests/multihost/mh_tool.py" flood "${MH_ADDR[pool]}" "$MH_PORT" \
	2000 200 "$MH_FLOOD_S" "$T/flood.ready" >"$T/flood.out" 2>&1
flood=$MH_LAST_PID
wait_for 30 test -s "$T/flood.ready" || fail "the flood did not connect within 30 s"
log "flood: $(cat "$T/flood.ready") connections established"
sleep 1

t0=$(mh_now_ms)
mh_mount w2
B=$LAST_MNT
t=$(($(mh_now_ms) - t0))
log "new mount during the flood came up in $t ms"
[ "$t" -le "$MH_MOUNT_MS" ] || fail "a mount with the right key took $t ms during the flood"

rc0=$(mh_stat_value "$A" maru_client_reconnects_total)
# (ss -K says "Invalid argument" for sockets it cannot kill; it kills A's)
mh_run w1 ss -K dst "${MH_ADDR[pool]}" dport = "$MH_PORT" >/dev/null 2>&1 ||
	fail "ss -K could not reset A's sockets"
t0=$(mh_now_ms)
wait_for 5 eval 'echo reset >"$A/after-reset"' 2>/dev/null ||
	fail "A did not publish within 5 s of its sockets being reset during the flood"
log "A published $(($(mh_now_ms) - t0)) ms after its sockets were reset"
[ "$(mh_stat_value "$A" maru_client_reconnects_total)" -gt "$rc0" ] ||
	fail "A published after the reset without reconnecting"
assert_eq "$(cat "$B/after-reset")" reset "B reads what A wrote after its reset"

th=$(threads)
log "marud threads: $th0 before the flood, $th during it"
[ "$th" -le $((th0 + MH_THREADS_MAX)) ] || fail "marud went from $th0 to $th threads"

wait_exit "$flood" $((MH_FLOOD_S + 30)) || fail "the flood did not end"
res=$(cat "$T/flood.out")
log "flood: $res"
lines=$(($(wc -l <"$T/marud.log") - log0))
log "marud log lines during the flood: $lines"
[ "$lines" -le "$MH_LOG_MAX" ] || fail "marud logged $lines lines during the flood"
slow_closed=$(sed -n 's/.*slow_closed=\([0-9]*\).*/\1/p' <<<"$res")
[ "$slow_closed" = 200 ] || fail "marud closed $slow_closed of the 200 slow connections in $MH_FLOOD_S s"

assert_eq "$(cat "$B/before")" before "B reads what A wrote before the flood"
marufs_umount "$A"
marufs_umount "$B"
marud_stop
