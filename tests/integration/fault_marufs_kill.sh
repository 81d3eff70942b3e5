#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_marufs_kill: the marufs daemon SIGKILLed (marufs-design(7) §7).
#  mid-write: a writer replacing a published chunk has half of the new bytes
#    in its pending version when its marufs dies: the pending version lives
#    for the grace period (marud cannot tell a crash from a network drop),
#    is then abandoned, and nothing of it is ever visible on another mount;
#  mid-read: a reader holds a lease on a chunk that another mount then
#    unlinks (its bytes are orphaned, still leased) when its marufs dies:
#    the lease is released after the grace period and the bytes go back to
#    free.
# Both also with the marufs fail points marufs.write.mid / marufs.read.mid
# (the daemon killed inside a write or read request), and a writer's close
# with marufs killed just before it publishes (marufs.flush.before_publish).
# Afterwards a new mount works, and the pool is back at its baseline.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

SIZE=$((4 << 20))
GRACE=2
marud_start --size 64M --grace $GRACE
marufs_mount
OBS=$MNT	# the observer mount, never killed

"$FT" fwrite "$OBS/w.bin" $SIZE 1 >/dev/null || fail "first version of w.bin"
wait_settled 10
free0=$(mstat marud_pool_free_bytes)

# kill_writer [FAILPOINT]: mount, write half (or die at the fail point), kill.
kill_writer()
{
	local fp=${1:-} pid m
	rm -f "$T/ready"
	if [ -n "$fp" ]; then
		MARU_FAILPOINT="$fp" marufs_mount
	else
		marufs_mount
	fi
	m=$LAST_MNT
	case "$fp" in
	marufs.flush.*)	# the whole chunk written; marufs dies closing it
		"$FT" fwrite "$m/w.bin" $SIZE 2 >"$T/writer.out" 2>&1 & ;;
	*)
		"$FT" fwrite "$m/w.bin" $SIZE 2 $((SIZE / 2)) "$T/ready" >"$T/writer.out" 2>&1 & ;;
	esac
	pid=$!
	if [ -n "$fp" ]; then
		wait_for 20 eval '! proc_alive "${MARUFS_PID_OF[$m]}"' ||
			fail "marufs did not die at $fp"
		grep -q "failpoint ${fp%%=*}: killing" "${MARUFS_LOG_OF[$m]}" ||
			fail "marufs died, but not at ${fp%%=*}"
	else
		wait_up "$pid" 20 test -e "$T/ready" || fail "writer never got half way"
	fi
	[ "$(mstat marud_pool_pending_bytes)" -gt 0 ] || fail "no pending version"
	marufs_kill "$m"
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	# within the grace period: still pending, never visible
	[ "$(mstat marud_pool_pending_bytes)" -gt 0 ] ||
		fail "pending version dropped before the grace period"
	expect_verdict "ok 1" "observer during grace" "$FT" fverify "$OBS/w.bin"
	wait_settled $((GRACE + 8)) "$free0"
	expect_verdict "ok 1" "observer after grace" "$FT" fverify "$OBS/w.bin"
}

# kill_reader [FAILPOINT]: a reader's lease outlives its marufs by the grace.
kill_reader()
{
	local fp=${1:-} pid m
	rm -f "$T/ready" "$T/go"
	"$FT" fwrite "$OBS/r.bin" $SIZE 3 >/dev/null || fail "r.bin"
	if [ -n "$fp" ]; then
		MARU_FAILPOINT="$fp" marufs_mount
	else
		marufs_mount
	fi
	m=$LAST_MNT
	"$FT" fhold "$m/r.bin" "$T/ready" "$T/go" >"$T/reader.out" 2>&1 &
	pid=$!
	if [ -n "$fp" ]; then
		wait_for 20 eval '! proc_alive "${MARUFS_PID_OF[$m]}"' ||
			fail "marufs did not die at $fp"
		grep -q "failpoint ${fp%%=*}: killing" "${MARUFS_LOG_OF[$m]}" ||
			fail "marufs died, but not at ${fp%%=*}"
	else
		wait_up "$pid" 20 test -e "$T/ready" || fail "reader never opened r.bin"
	fi
	[ "$(mstat marud_leases)" -gt 0 ] || fail "reader holds no lease"
	rm "$OBS/r.bin" || fail "unlink r.bin on the observer"
	[ "$(mstat marud_pool_orphaned_bytes)" -ge $SIZE ] ||
		fail "unlinked but leased bytes are not orphaned"
	marufs_kill "$m"
	touch "$T/go"
	wait "$pid" 2>/dev/null || true
	grep -q BAD "$T/reader.out" && fail "reader saw a partial version: $(cat "$T/reader.out")"
	[ "$(mstat marud_pool_orphaned_bytes)" -ge $SIZE ] ||
		fail "lease dropped before the grace period"
	wait_settled $((GRACE + 8)) "$free0"
	[ "$(mstat marud_leases)" = 0 ] || fail "leases left after the grace period"
	expect_verdict "missing" "unlinked r.bin" "$FT" fverify "$OBS/r.bin"
}

kill_writer
log "marufs killed mid-write: pending abandoned after grace"
kill_reader
log "marufs killed mid-read: lease released after grace"
if grep -q "HAVE_FAILPOINTS 1" "$TOOLS/../../../config.h" 2>/dev/null &&
	grep -q 'marufs.write.mid' "$SRCDIR/fs/ops.c"; then
	kill_writer "marufs.write.mid=2*abort"
	log "marufs killed at marufs.write.mid: ok"
	kill_writer "marufs.flush.before_publish=abort"
	log "marufs killed at marufs.flush.before_publish: ok"
	kill_reader "marufs.read.mid=1*abort"
	log "marufs killed at marufs.read.mid: ok"
fi

# a fresh mount works and shows the surviving chunk
marufs_mount
expect_verdict "ok 1" "new mount" "$FT" fverify "$LAST_MNT/w.bin"
"$FT" fwrite "$LAST_MNT/n.bin" $SIZE 4 >/dev/null || fail "write on a new mount"
expect_verdict "ok 4" "observer sees the new mount's chunk" "$FT" fverify "$OBS/n.bin"
marufs_umount "$LAST_MNT"
marufs_umount "$OBS"
marud_stop
