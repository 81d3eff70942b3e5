#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_warm_ckpt: journal checkpoints in the background (marud(8) METADATA
# AREA). A small metadata area and a stream of replaces through the mount
# make marud checkpoint many times: each one by a forked child, none by the
# walk under the directory lock, and a restart finds every name with its
# last bytes. Then the child is made to sleep (fail point
# marud.journal.ckpt.child) while names are written, and marud is SIGKILLed:
# the child dies with it (PR_SET_PDEATHSIG), held none of marud's sockets,
# and the restart finds every name, those written after the fork included.
# A SIGTERM then does the same cleanly: marud kills and reaps the child at
# once (it does not wait out its sleep) and exits 0.
. "$(dirname "$0")/lib/common.sh"

# Replace 20 names N times, each a publish of a new version: a record. The
# names are long (the area is at least 2 MiB) so that records are too.
LONG=$(printf 'x%.0s' $(seq 200))
churn() {
	local i
	for ((i = 0; i < $1; i++)); do
		echo "round $i" >"$MNT/ns/churn-$((i % 20))-$LONG" || fail "write churn $i"
	done
}

# Replace names until marud has forked a checkpoint child: its pid in $child.
until_child() {
	local i=0
	child=
	while [ -z "$child" ] && [ $i -lt 200 ]; do
		churn 50
		child=$(pgrep -P "$MARUD_PID" | head -1 || true)
		i=$((i + 1))
	done
	[ -n "$child" ] || fail "no checkpoint child after 10000 replaces"
}

# Each mount is a new directory: $MNT follows the newest.
remount() { marufs_mount; MNT=$LAST_MNT; }

# Every file of ns/ and its bytes, sorted (the restart's witness).
snapshot() { (cd "$MNT/ns" && for f in $(ls | sort); do echo "$f $(md5sum <"$f")"; done); }

# ---- many checkpoints, all in the background ----
marud_start --size 64M --meta-size 256K
remount
mkdir "$MNT/ns" || fail "mkdir ns"
for i in $(seq 0 39); do
	head -c 4096 /dev/urandom >"$MNT/ns/keep-$i.bin" || fail "write keep-$i"
done
s0=$(stat_value marud_journal_checkpoints_total)
churn 6000
wait_for 10 eval '[ "$(stat_value marud_journal_background_checkpoints_total)" -ge 3 ]' ||
	fail "fewer than 3 background checkpoints: $(stat_value marud_journal_background_checkpoints_total)"
assert_eq "$(stat_value marud_journal_checkpoints_total)" "$s0" "checkpoints walked under the lock"
assert_eq "$(stat_value marud_journal_background_failures_total)" 0 "background failures"
hold=$(stat_value marud_journal_checkpoint_hold_max_seconds)
log "longest lock hold of a checkpoint step: $hold s"
before=$(snapshot)
marufs_umount
marud_restart
remount
assert_eq "$(snapshot)" "$before" "names and bytes after the restart"
accounting_ok

# ---- SIGKILL while the child walks ----
marufs_umount
marud_stop
MARU_FAILPOINT=marud.journal.ckpt.child=sleep:5000 marud_launch
remount
until_child
# the child has no socket of marud's (nor anything but stdio and its pipe)
if ls -l "/proc/$child/fd" 2>/dev/null | grep -q "socket:"; then
	fail "the checkpoint child holds a socket: $(ls -l "/proc/$child/fd")"
fi
for i in $(seq 0 9); do
	echo "after the fork $i" >"$MNT/ns/late-$i.txt" || fail "write late-$i"
done
before=$(snapshot)
marufs_umount
marud_kill
wait_for 5 eval '! kill -0 '"$child"' 2>/dev/null' || fail "checkpoint child $child outlived marud"
marud_launch
remount
assert_eq "$(snapshot)" "$before" "names and bytes after a SIGKILL mid-checkpoint"
accounting_ok

# ---- SIGTERM while the child walks: a clean stop drops the checkpoint ----
marufs_umount
marud_stop
MARU_FAILPOINT=marud.journal.ckpt.child=sleep:5000 marud_launch
remount
until_child
echo "written while the child sleeps" >"$MNT/ns/late-term.txt" || fail "write late-term"
before=$(snapshot)
marufs_umount
t0=$SECONDS
marud_stop	# fails unless marud exits 0
[ $((SECONDS - t0)) -lt 4 ] || fail "marud waited for the sleeping child to stop ($((SECONDS - t0)) s)"
! kill -0 "$child" 2>/dev/null || fail "checkpoint child $child outlived a clean stop"
marud_launch
remount
assert_eq "$(snapshot)" "$before" "names and bytes after a SIGTERM mid-checkpoint"
accounting_ok
marufs_umount
marud_stop
