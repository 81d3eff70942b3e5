#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Slow verbs never stall another client (marufs-design(7) §6, marud(8) RDMA
# RIGHTS). Emulated: the software verbs device (tests/softverbs), in marud
# only, with registration at 20 ms per MiB (rdma_rxe under TCG: about 10 s
# for 512 MiB) and a QP destroy taking 6 s more for each type 2 window still
# bound to it (rdma_rxe's destroy waits for the QP's references, which bound
# windows hold: it sat about 51 s). A shm mount publishes small files in a
# loop the whole time, while
#   1. marud registers its 256 MiB pool with the device (about 5 s) and a
#      data=rdma mount connects meanwhile, and
#   2. a data=rdma mount holding a file open for write is SIGKILLed: its QP
#      dies, marud fences it, revokes its windows, then destroys it.
# Every publish of the shm mount must take well under a second, its bytes
# right; the rdma mount's rights are gone (no window, no QP) and the destroy
# was prompt (windows first). That the destroy runs without the rdma lock
# however long it takes is daemon/rdma/quarantine_test's.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"

# publish_loop DIR SECONDS OUT: publish files for SECONDS, the slowest (ms) in OUT
publish_loop()
{
	local dir=$1 secs=$2 out=$3 i=0 t0 t1 worst=0 end

	end=$(($(date +%s) + secs))
	while [ "$(date +%s)" -lt "$end" ]; do
		i=$((i + 1))
		t0=$(date +%s%N)
		printf 'publish %d' "$i" >"$dir/p$((i % 8))" || { echo "-1 $i" >"$out"; return 1; }
		t1=$(date +%s%N)
		[ $(((t1 - t0) / 1000000)) -le "$worst" ] || worst=$(((t1 - t0) / 1000000))
		[ "$(cat "$dir/p$((i % 8))")" = "publish $i" ] || { echo "-2 $i" >"$out"; return 1; }
	done
	echo "$worst $i" >"$out"
}

saved=("${RDMA_ENV[@]}")
RDMA_ENV+=(SOFTVERBS_FAULT=destroy_bound_qp_ms=6000,reg_mr_us_per_mib=20000)
MARU_DATA=rdma marud_start --grace 2
RDMA_ENV=("${saved[@]}")

# 1. while the pool registers (the event thread, at start) and an rdma mount
#    connects (its QP waits for the registration; nobody else does)
marufs_mount -o data=shm
shm=$MNT
publish_loop "$shm" 4 "$T/reg.out" &
loop=$!
marufs_mount -o data=rdma
rmnt=$LAST_MNT
rpid=$MARUFS_PID2
wait "$loop" || true
read -r worst n <"$T/reg.out"
echo "during the pool's registration: $n publishes, the slowest $worst ms"
[ "$worst" -ge 0 ] || fail "a publish failed during the registration ($n)"
[ "$worst" -lt 1000 ] || fail "a publish waited $worst ms for the pool registration"
wait_for 30 grep -q 'rdma: pool registered on softverbs0' "$T/marud.log" ||
	fail "the pool was never registered"
grep 'rdma: pool registered on softverbs0' "$T/marud.log"

# 2. an rdma client dies holding a lease and a file open for write
head -c $((1 << 20)) /dev/urandom >"$rmnt/held"
exec 6<"$rmnt/held"
head -c 65536 <&6 >/dev/null	# a lease read over rdma: its window stays bound
exec 5>"$rmnt/held2"
head -c $((4 << 20)) /dev/urandom >&5	# a pending version written over rdma
[ "$(stat_value marud_rdma_qps)" -ge 1 ] || fail "the rdma mount has no QP"
nwin=$(stat_value marud_rdma_windows)
[ "$nwin" -ge 1 ] || fail "no window bound for the rdma mount's files"
echo "the rdma client holds $nwin windows"
publish_loop "$shm" 8 "$T/kill.out" &
loop=$!
sleep 1
kill -KILL "$rpid"
exec 5>&- 6<&-
wait "$loop" || true
read -r worst n <"$T/kill.out"
echo "while the dead client's QP was destroyed: $n publishes, the slowest $worst ms"
[ "$worst" -ge 0 ] || fail "a publish failed while the QP died ($n)"
[ "$worst" -lt 1000 ] || fail "a publish waited $worst ms for the dead client's QP"
wait_for 20 grep -q 'QP fenced (disconnected)' "$T/marud.log" || fail "the QP was never fenced"
! grep 'destroying the QP took' "$T/marud.log" ||
	fail "a QP was destroyed with windows still bound to it"
assert_eq "$(stat_value marud_rdma_qps)" 0 "no QP left"
assert_eq "$(stat_value marud_rdma_windows)" 0 "no rkey left"
fusermount3 -u "$rmnt" 2>/dev/null || fusermount3 -uz "$rmnt" 2>/dev/null || true
unset "MARUFS_PID_OF[$rmnt]"
marufs_umount "$shm"
marud_stop
