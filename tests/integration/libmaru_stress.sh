#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmaru_stress: 4 processes x 300 random operations (store, verify, replace,
# unlink) through libmaru on a 64 MiB pool they overfill several times, once
# per data path: every byte read back is right, marud evicted, and with all
# handles closed the accounting balances with nothing pending or orphaned.
. "$(dirname "$0")/lib/common.sh"

for dp in shm tcp; do
	marud_start --size 64M
	STRESS_EXPECT_EVICT=1 MARU_DATA=$dp "$TOOLS/maru_stress" "$MARU_URI" 4 300 \
		>"$T/stress-$dp.out" 2>&1 || fail "maru_stress (data=$dp): $(cat "$T/stress-$dp.out")"
	accounting_check || fail "accounting off after maru_stress (data=$dp)"
	assert_eq "$(stat_value marud_pool_pending_bytes)" 0 "pending bytes after stress"
	marud_stop
done
