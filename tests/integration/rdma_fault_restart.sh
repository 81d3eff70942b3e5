#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# marud restart mid-transfer on the rdma path. Emulated: the software verbs
# device (tests/softverbs) with every completion delayed 100 ms
# (delay_cqe_ms) so that a 4 MiB READ is in flight when marud is SIGKILLed
# and started again on the same pool (a new generation). The client's old
# handle fails from then on (EIO or ESTALE, never a read), its old rkey is
# refused on the new QP, the client reconnects and a new open reads exact.
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
grep -q 'connection refused: another generation\|QP accepted' "$T/marud.log" || true
marud_stop
