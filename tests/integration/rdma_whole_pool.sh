#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The modes other than windows, on the software verbs device (tests/softverbs;
# emulated NIC, no RNIC). First a device without type 2 memory windows
# (SOFTVERBS_MW=0: no IBV_DEVICE_MEM_WINDOW_TYPE_2B, ibv_alloc_mw fails):
# marud's self-test finds MRs enforce rights and bounds and hands out one MR
# per extent (marud_rdma_rights 2, pool not exposed, MRs counted and
# deregistered); then --rdma-rights trust-pool: one MR over the pool, said
# loudly (a WARNING line, marud_rdma_pool_exposed 1). Either way a data=rdma
# mount moves bytes exactly, both ways, and .maru/pool names the mode.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"
export SOFTVERBS_MW=0

run_mode()
{
	local mode=$1 m w

	marufs_mount -o data=rdma
	m=$LAST_MNT
	assert_eq "$(awk '$1 == "data_path" { print $2 }' "$m/.maru/pool")" rdma "data path in use"
	assert_eq "$(awk '$1 == "rdma_rights" { print $2 }' "$m/.maru/pool")" "$mode" \
		".maru/pool names the rights mode"
	head -c $((5 << 20)) /dev/urandom >"$T/big"
	cp "$T/big" "$m/big"
	cmp "$T/big" "$m/big" || fail "bytes differ ($mode)"
	printf 'small' >"$m/small"
	assert_eq "$(cat "$m/small")" small "small file"
	w=$(maru_stats "$m" | awk '$1 == "maru_client_bytes_total{path=\"rdma\",dir=\"write\"}" { print $2 }')
	[ "${w:-0}" -ge $((5 << 20)) ] || fail "the writes did not go over rdma ($w bytes)"
	rm -f "$m/big" "$m/small"
	marufs_umount "$m"
}

MARU_DATA=rdma marud_start
run_mode extent-mr
grep -q 'rdma: softverbs0: rights by one MR per extent' "$T/marud.log" ||
	fail "no log line for the extent-mr mode"
assert_eq "$(stat_value marud_rdma_rights)" 2 "rights by one MR per extent"
assert_eq "$(stat_value marud_rdma_pool_exposed)" 0 "pool not exposed"
assert_eq "$(stat_value marud_rdma_windows)" 0 "every extent MR deregistered"
n=$(stat_value marud_rdma_extent_mrs_total)
us=$(stat_value marud_rdma_extent_mr_us_total)
[ "$n" -gt 0 ] || fail "no extent MR registered"
echo "extent-mr: $n registrations, $((us / n)) us each on the software device"
marud_stop

MARU_DATA=rdma marud_start --rdma-rights trust-pool
run_mode trust-pool
grep -q 'rdma: WARNING: softverbs0: rdma-rights = trust-pool: the whole pool' \
	"$T/marud.log" || fail "no loud log line for the exposed pool"
assert_eq "$(stat_value marud_rdma_pool_exposed)" 1 "pool exposed gauge"
assert_eq "$(stat_value marud_rdma_rights)" 3 "trust-pool"
assert_eq "$(stat_value marud_rdma_windows)" 0 "no windows without MW support"
marud_stop
