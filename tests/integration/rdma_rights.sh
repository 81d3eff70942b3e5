#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# rdma rights per lease on the software verbs device (tests/softverbs: an
# emulated NIC per process; marud's responder checks the rkeys it handed
# out). A lease's read-only rkey is refused for WRITE, a forged rkey and
# offsets outside the extent (a READ straddling its end) are refused, an
# rkey after its RELEASE is refused, a pending version's rkey is refused
# after PUBLISH, and after a refused PUBLISH the version's I/O takes new
# keys; the bytes stay. Three times:
#   1. softverbs as the IB spec asks (a window's own bounds enforced):
#      marud's self-test finds windows sound and uses them;
#   2. softverbs modelling rdma_rxe (SOFTVERBS_MW_BOUNDS=0: a window's rkey
#      checked only against its MR's range, as Linux 6.1 and 6.12 do): the
#      self-test sees the bounds gap, marud says so and switches to one MR
#      per extent, and the same checks hold;
#   3. --rdma-rights extent-mr on the spec-abiding device.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"
[ -x "$TOOLS/rdma_rights" ] || skip "rdma_rights not built (no verbs headers)"

rights_run()
{
	local mode=$1 code=$2 bounds=$3
	shift 3

	MARU_DATA=rdma marud_start "$@"
	"$TOOLS/rdma_rights" "$MARU_URI" >"$T/rights.out" 2>&1 || { cat "$T/rights.out"; fail "rdma_rights ($mode)"; }
	cat "$T/rights.out"
	assert_eq "$(grep -c "^ok:" "$T/rights.out")" 5 "every rights check ran ($mode)"
	grep -q 'remote access error' "$T/rights.out" || fail "no remote access error logged ($mode)"
	assert_eq "$(stat_value marud_rdma_rights)" "$code" "rights mode $mode"
	assert_eq "$(stat_value marud_rdma_window_bounds_enforced)" "$bounds" "window bounds ($mode)"
	assert_eq "$(stat_value marud_rdma_pool_exposed)" 0 "pool not exposed ($mode)"
	marud_stop
}

rights_run windows 1 1
grep -q 'rdma: softverbs0: rights by type 2 memory windows' "$T/marud.log" ||
	fail "windows mode not logged"

SOFTVERBS_MW_BOUNDS=0 rights_run extent-mr 2 0
grep -q "a READ outside a window's extent ALLOWED" "$T/marud.log" ||
	fail "the self-test did not report the bounds gap"
grep -q 'rights by one MR per extent: its memory windows do NOT enforce their bounds' \
	"$T/marud.log" || fail "the switch to extent MRs not logged"

rights_run extent-mr 2 1 --rdma-rights extent-mr
