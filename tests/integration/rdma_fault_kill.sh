#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A WRITE left in flight when its client is killed lands only in quarantined
# pages, never in a version published afterwards. Emulated: the software
# verbs device (tests/softverbs) carries the WRITE to marud's emulated NIC
# over a unix socket; MARU_FAILPOINT=libmaru.rdma.write.posted=2*abort
# SIGKILLs the writer right after it posted a 4 MiB write's WRs, so they may
# be anywhere between its NIC thread and marud's. marud must fence the dead
# session's QP before the directory frees the pending pages; the version
# published next (on those pages when the allocator hands them back) must
# read exact after a pause that lets a late WRITE land.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"
[ -x "$TOOLS/rdma_faults" ] || skip "rdma_faults not built (no verbs headers)"
MARU_DATA=rdma marud_start --grace 1
rc=0
MARU_FAILPOINT=libmaru.rdma.write.posted=2*abort \
	"$TOOLS/rdma_faults" kill-writer "$MARU_URI" dead >"$T/ext" 2>"$T/kill.err" || rc=$?
cat "$T/kill.err"
assert_eq "$rc" 137 "the writer was SIGKILLed with its WRITE posted"
grep -q '^ext ' "$T/ext" || fail "no extents reported"
# the session's QP is fenced, then (grace 1 s) the session ends
wait_for 10 grep -q 'QP fenced' "$T/marud.log" || fail "marud never fenced the dead QP"
sleep 1.5
"$TOOLS/rdma_faults" after-kill "$MARU_URI" dead "$T/ext" >"$T/after.out" 2>&1 ||
	{ cat "$T/after.out"; fail "after-kill"; }
cat "$T/after.out"
grep 'QP fenced' "$T/marud.log"
q=$(stat_value marud_rdma_quarantined_bytes_total)
[ "$q" -ge 4096 ] || fail "the dead writer's read-write windows were not quarantined ($q bytes)"
assert_eq "$(stat_value marud_rdma_quarantined_bytes)" 0 "quarantine left after the fence"
marud_accounting_ok
marud_stop
