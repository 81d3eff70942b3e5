#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# marud restart mid-transfer on the rdma path. Emulated: the software verbs
# device (tests/softverbs) with every completion delayed 100 ms
# (delay_cqe_ms) so that a 4 MiB READ is in flight when marud is SIGKILLed
# and started again on the same pool (a new generation). The client's old
# handle fails from then on (EIO or ESTALE, never a read), its old rkey is
# refused on the new QP, the client reconnects and a new open reads exact.
# The new marud must have accepted the reconnected QP (its own counter, so
# the new open's bytes came over rdma from the new generation), and every
# connection it refused must be one of the old generation, each counted.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"
[ -x "$TOOLS/rdma_faults" ] || skip "rdma_faults not built (no verbs headers)"
MARU_DATA=rdma marud_start
"$TOOLS/rdma_faults" restart "$MARU_URI" >"$T/restart.out" 2>&1 &
tool=$!
wait_for 10 grep -q '^ready' "$T/restart.out" || fail "the tool never got ready"
sleep 0.7
marud_restart kill
wait "$tool" || { cat "$T/restart.out"; fail "rdma_faults restart"; }
cat "$T/restart.out"
assert_eq "$(grep -c '^ok:' "$T/restart.out")" 2 "both restart checks ran"
# The new marud's part of the log: after the last "=== ... marud" line.
awk '/^=== / { n = 0; delete l } { l[++n] = $0 } END { for (i = 1; i <= n; i++) print l[i] }' \
	"$T/marud.log" >"$T/marud2.log"
accepted=$(stat_value marud_rdma_accepted_total)
rejected=$(stat_value marud_rdma_rejected_total)
refused=$(awk '/connection refused/ { n++ } END { print n + 0 }' "$T/marud2.log")
old_gen=$(awk '/connection refused: another generation/ { n++ } END { print n + 0 }' "$T/marud2.log")
log "new marud: $accepted QP(s) accepted, $rejected refused ($old_gen of the old generation)"
[ "$accepted" -ge 1 ] || fail "the new marud accepted no QP: the client did not reconnect over rdma"
assert_eq "$refused" "$old_gen" "every refusal by the new marud is of the old generation"
assert_eq "$rejected" "$refused" "marud_rdma_rejected_total counts each refusal it logged"
marud_stop
