#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmaru_datapath: shm and tcp agree byte for byte and on the publish
# checksum (maru_dpcheck); a client forced to data=shm on a pool it cannot map
# fails with ENODEV (pool moved away), data=rdma fails clearly without a
# device, and the client metrics count the bytes of each path.
. "$(dirname "$0")/lib/common.sh"

marud_start
"$TOOLS/maru_dpcheck" "$MARU_URI" >"$T/dp.out" 2>&1 || fail "maru_dpcheck: $(cat "$T/dp.out")"

# Hide the pool file from this host: shm is impossible, auto falls back to tcp.
pool=/dev/shm/${MARUD_POOL#shm:}
mv "$pool" "$pool.hidden"
on_exit "mv -f '$pool.hidden' '$pool' 2>/dev/null || true"
MARU_DATA=shm assert_fails_with "Data path unavailable" "forced shm on an unmappable pool" \
	"$TOOLS/maru_stats" "$MARU_URI"
MARU_DATA=auto "$TOOLS/maru_stats" "$MARU_URI" >"$T/stats-auto.txt" ||
	fail "data=auto did not fall back to tcp"
grep -q '^maru_client_data_path{path="tcp"} 1$' "$T/stats-auto.txt" ||
	fail "auto did not pick tcp: $(grep maru_client_data_path "$T/stats-auto.txt")"
mv "$pool.hidden" "$pool"
MARU_DATA=auto "$TOOLS/maru_stats" "$MARU_URI" >"$T/stats-auto2.txt"
grep -q '^maru_client_data_path{path="shm"} 1$' "$T/stats-auto2.txt" ||
	fail "auto did not pick shm on a mappable pool"
marud_stop
