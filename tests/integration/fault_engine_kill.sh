#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_engine_kill: an engine process killed mid-write (marufs-design(7) §7: no
# version published; its memory back to free once the fd is closed).
#  1. through marufs: a writer replacing a published chunk is SIGKILLed with
#     half of the new bytes written; the kernel closes its fd (FLUSH and
#     RELEASE reach marufs exactly as for a normal close), yet neither mount
#     may ever show the partial version: the old chunk stays, whole.
#  2. through libmaru: the writer is stopped by the fail point
#     libmaru.write.mid (SIGKILL with half the bytes in pool memory); its
#     socket drops, so its pending version lives for the grace period and is
#     then abandoned. Nothing of it is ever visible.
# Both times the pool goes back to its baseline: nothing pending or
# orphaned, and exactly the old chunk's bytes in use.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

SIZE=$((4 << 20))
marud_start --size 64M --grace 2
marufs_mount
marufs_mount

# ---- 1: through the mount ----
"$FT" fwrite "$MNT/k.bin" $SIZE 7 >/dev/null || fail "first version"
expect_verdict "ok 7" "published first version" "$FT" fverify "$MNT2/k.bin"
wait_settled 10
free0=$(mstat marud_pool_free_bytes)

for sig in KILL TERM; do
	rm -f "$T/ready"
	"$FT" fwrite "$MNT/k.bin" $SIZE 8 $((SIZE / 2)) "$T/ready" &
	pid=$!
	wait_up "$pid" 20 test -e "$T/ready" || fail "writer never got half way"
	[ "$(mstat marud_pool_pending_bytes)" -gt 0 ] || fail "no pending version while writing"
	expect_verdict "ok 7" "other mount while the new version is written" \
		"$FT" fverify "$MNT2/k.bin"
	kill -$sig "$pid"
	wait "$pid" 2>/dev/null || true
	for m in "$MNT2" "$MNT"; do
		expect_verdict "ok 7" "$m after the writer died of SIG$sig" \
			"$FT" fverify "$m/k.bin"
	done
	wait_settled 10 "$free0"
done
log "marufs: killed writers published nothing"

# ---- 2: through libmaru, stopped by a fail point ----
skip_unless_failpoints
"$FT" put "$MARU_URI" l.bin $SIZE 11 >/dev/null || fail "libmaru first version"
wait_settled 10
free0=$(mstat marud_pool_free_bytes)
ab0=$(mstat marud_abandons_total)
for dp in shm tcp; do
	rc=0
	MARU_DATA=$dp MARU_FAILPOINT="libmaru.write.mid=abort" \
		"$FT" put "$MARU_URI" l.bin $((SIZE * 2)) 12 >"$T/put.out" 2>&1 || rc=$?
	assert_eq "$rc" 137 "libmaru writer (data=$dp) killed at libmaru.write.mid"
	# within the grace period the version is still pending, never visible
	[ "$(mstat marud_pool_pending_bytes)" -gt 0 ] ||
		fail "pending version vanished before the grace period (data=$dp)"
	expect_verdict "ok 11" "libmaru reader during grace (data=$dp)" \
		"$FT" verify "$MARU_URI" l.bin
	expect_verdict "ok 11" "mount during grace (data=$dp)" "$FT" fverify "$MNT2/l.bin"
	wait_settled 10 "$free0"
	expect_verdict "ok 11" "after the grace period (data=$dp)" \
		"$FT" verify "$MARU_URI" l.bin
done
[ "$(mstat marud_abandons_total)" -ge $((ab0 + 2)) ] || fail "abandons not counted"
marufs_umount "$MNT2"
marufs_umount
marud_stop
