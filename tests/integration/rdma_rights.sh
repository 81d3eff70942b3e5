#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# rdma rights per lease on the software verbs device (tests/softverbs: an
# emulated NIC per process; marud's responder checks the memory windows it
# bound). A lease's read-only rkey is refused for WRITE, a forged rkey and
# offsets outside the extent are refused, an rkey after its RELEASE is
# refused, a pending version's rkey is refused after PUBLISH, and after a
# refused PUBLISH the version's I/O takes new keys; the bytes stay.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"
[ -x "$TOOLS/rdma_rights" ] || skip "rdma_rights not built (no verbs headers)"
MARU_DATA=rdma marud_start
"$TOOLS/rdma_rights" "$MARU_URI" >"$T/rights.out" 2>&1 || { cat "$T/rights.out"; fail "rdma_rights"; }
cat "$T/rights.out"
assert_eq "$(grep -c "^ok:" "$T/rights.out")" 5 "every rights check ran"
grep -q 'remote access error' "$T/rights.out" || fail "no remote access error logged"
marud_stop
