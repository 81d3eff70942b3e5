#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# harness_selftest: lib/common.sh works against the real marud and marufs:
# marud -n checks a configuration without serving; marud_start makes a private
# shm pool and socket; SIGHUP and SIGUSR1 are survived and SIGTERM exits 0; a
# SIGKILLed marud relaunches on the same pool; two mounts of one pool see each
# other's files; marufs_kill detaches a crashed mount; the stats helpers work
# with and without a mount.
. "$(dirname "$0")/lib/common.sh"

# -n: check the configuration and exit 0 without serving.
"$MARUD" -n --pool "shm:maru-it-$$-check" --size 16M \
	--listen "unix:$T/check.sock" >"$T/check.log" 2>&1 ||
	fail "marud -n rejected a valid configuration: $(cat "$T/check.log")"
[ ! -S "$T/check.sock" ] || fail "marud -n created its socket"

# -n on a bad value fails.
assert_fails "marud -n accepted --eviction bogus" \
	"$MARUD" -n --pool "shm:maru-it-$$-check" --size 16M --eviction bogus \
	--listen "unix:$T/check.sock"

marud_start --size 64M
[ -S "$MARUD_SOCK" ] || fail "no socket at $MARUD_SOCK"
pool=/dev/shm/${MARUD_POOL#shm:}
[ -f "$pool" ] || fail "no pool file $pool"
size=$(stat -c %s "$pool")
[ "$size" -ge $((64 << 20)) ] || fail "pool file is $size bytes, want >= 64 MiB"
assert_eq "$MARU_URI" "maru+unix://$T/marud.sock" "MARU_URI"

marud_signal HUP
marud_signal USR1
marud_stop

# A crashed marud comes back on the same pool file.
marud_start --size 64M
first=$MARUD_POOL
marud_kill
[ -z "$MARUD_PID" ] || fail "marud_kill left MARUD_PID set"
marud_launch
assert_eq "$MARUD_POOL" "$first" "restart keeps the pool"
marud_stop

# Each marud_start gets its own pool.
marud_start --size 16M
assert_ne "$MARUD_POOL" "$first" "second pool name"
marud_stop

# Two mounts of one pool (one per data path), a crashed mount, the stats.
marud_start --size 64M
marufs_mount
marufs_mount -o data=tcp
assert_ne "$MNT" "$MNT2" "second mountpoint"
printf 'harness\n' >"$MNT/f"
assert_eq "$(cat "$MNT2/f")" harness "file written on MNT, read on MNT2"
accounting_ok
accounting_ok "$MNT2"
used=$(stat_value marud_pool_used_bytes)
[ "$used" -gt 0 ] || fail "marud_pool_used_bytes is $used after a publish"
marufs_mount
crashed=$LAST_MNT
marufs_kill "$crashed"
! mountpoint -q "$crashed" || fail "$crashed still mounted after marufs_kill"
marufs_umount "$MNT2"
marufs_umount
mountpoint -q "$MNT" && fail "$MNT still mounted after marufs_umount"
# Without a mount, the stats come through the maru_stats tool.
wait_accounting_ok 40 /nonexistent
marud_stop
