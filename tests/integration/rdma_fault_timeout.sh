#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A client transfer that times out errors its QP and reconnects. Emulated:
# the software verbs device (tests/softverbs) loses one completion
# (SOFTVERBS_FAULT lose_cqe=1, set by the tool just before the call; the
# operation itself took place). A READ that times out is EIO, a log line
# names it, and the next read runs on a new QP; a WRITE that times out is
# EIO, its handle refuses to publish, and its pages were quarantined until
# marud fenced the old QP (the client reconnects before it returns, so the
# fence comes before its ABANDON). Client stats count the errors by kind.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"
[ -x "$TOOLS/rdma_faults" ] || skip "rdma_faults not built (no verbs headers)"
MARU_DATA=rdma marud_start
"$TOOLS/rdma_faults" timeout "$MARU_URI" >"$T/timeout.out" 2>&1 ||
	{ cat "$T/timeout.out"; fail "rdma_faults timeout"; }
cat "$T/timeout.out"
assert_eq "$(grep -c '^ok:' "$T/timeout.out")" 2 "both timeout checks ran"
grep -q 'RDMA READ of version [0-9]* timed out' "$T/timeout.out" || fail "no log line for the READ"
grep -q 'RDMA WRITE of version [0-9]* timed out' "$T/timeout.out" || fail "no log line for the WRITE"
[ "$(grep -c 'QP fenced' "$T/marud.log")" -ge 2 ] || fail "marud did not fence the timed-out QPs"
marud_accounting_ok
marud_stop
