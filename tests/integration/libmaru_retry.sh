#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmaru_retry: a lost reply is never a lost or doubled operation. For every
# request of a mkdir/create/write/truncate/publish/rename/open/unlink/rmdir
# sequence, on both data paths, the client drops its socket right after
# sending that request (fail point libmaru.reply); it must reconnect, reclaim
# its session and resend, and marud's reply cache must make the resend
# harmless (maru_retry checks each step succeeded once).
. "$(dirname "$0")/lib/common.sh"

grep -q "HAVE_FAILPOINTS 1" "$TOOLS/../../../config.h" 2>/dev/null ||
	skip "built without fail points (-Dfailpoints=false)"
marud_start
for dp in tcp shm; do
	MARU_DATA=$dp "$TOOLS/maru_retry" "$MARU_URI" "base-$dp" >"$T/retry.out" 2>&1 ||
		fail "maru_retry (data=$dp, no fault): $(cat "$T/retry.out")"
	total=$(sed -n 's/.*(\([0-9]*\) requests.*/\1/p' "$T/retry.out")
	[ -n "$total" ] && [ "$total" -gt 5 ] || fail "maru_retry made no requests?"
	for n in $(seq 1 $((total - 1))); do
		MARU_DATA=$dp MARU_FAILPOINT="libmaru.reply=$n*error:ECONNRESET" \
			"$TOOLS/maru_retry" "$MARU_URI" "r$n-$dp" >"$T/retry.out" 2>&1 ||
			fail "maru_retry (data=$dp, reply $n lost): $(cat "$T/retry.out")"
	done
	log "data=$dp: $((total - 1)) lost replies survived"
done
accounting_check || fail "accounting off after the retries"
marud_stop
