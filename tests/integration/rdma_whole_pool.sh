#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole-pool fallback: a device without type 2 memory windows. Emulated:
# the software verbs device (tests/softverbs) with SOFTVERBS_MW=0 (no
# IBV_DEVICE_MEM_WINDOW_TYPE_2B, ibv_alloc_mw fails). marud registers one MR
# over the pool and says so loudly (a WARNING line, marud_rdma_pool_exposed
# 1); a data=rdma mount still moves bytes exactly, both ways.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"
export SOFTVERBS_MW=0
MARU_DATA=rdma marud_start
marufs_mount -o data=rdma
assert_eq "$(awk '$1 == "data_path" { print $2 }' "$MNT/.maru/pool")" rdma "data path in use"
head -c $((5 << 20)) /dev/urandom >"$T/big"
cp "$T/big" "$MNT/big"
cmp "$T/big" "$MNT/big" || fail "bytes differ through the whole-pool MR"
printf 'small' >"$MNT/small"
assert_eq "$(cat "$MNT/small")" small "small file"
grep -q 'rdma: WARNING: device softverbs0 has no type 2 memory windows: the whole pool' \
	"$T/marud.log" || fail "no loud log line for the exposed pool"
assert_eq "$(stat_value marud_rdma_pool_exposed)" 1 "pool exposed gauge"
assert_eq "$(stat_value marud_rdma_windows)" 0 "no windows without MW support"
[ "$(stat_value maru_client_bytes_total)" -ge 0 ]
w=$(maru_stats | awk '$1 == "maru_client_bytes_total{path=\"rdma\",dir=\"write\"}" { print $2 }')
[ "${w:-0}" -ge $((5 << 20)) ] || fail "the writes did not go over rdma ($w bytes)"
marufs_umount
marud_stop
