#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The rdma data path on a real device: MARU_RDMA_DEVICE names it (a NIC, or
# Soft-RoCE: rdma link add rxe0 type rxe netdev eth0). The rdma suite's
# fs_io (and whatever MARU_RDMA_HW_CASES lists besides) runs on data=rdma
# mounts with the real libibverbs/librdmacm, no software device: marud
# listens on the device's IPv4 address (MARU_RDMA_ADDR, else the first
# address of its netdev) with a shared key, as a non-loopback peer needs.
# Without MARU_RDMA_DEVICE (this host has no RNIC and no rxe module) it
# exits 77 and says why.
. "$(dirname "$0")/lib/common.sh"
dev=${MARU_RDMA_DEVICE:-}
[ -n "$dev" ] || skip "no RDMA hardware named: set MARU_RDMA_DEVICE to a real device" \
	"(a NIC or Soft-RoCE rxe0); the software device runs in the rest of suite rdma"
[ -d "/sys/class/infiniband/$dev" ] || fail "MARU_RDMA_DEVICE=$dev: no such device in /sys/class/infiniband"
addr=${MARU_RDMA_ADDR:-}
if [ -z "$addr" ]; then
	nd=$(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/0" 2>/dev/null || true)
	[ -n "$nd" ] || fail "$dev: no netdev found; set MARU_RDMA_ADDR"
	addr=$(ip -4 -o addr show dev "$nd" | awk '{ sub("/.*", "", $4); print $4; exit }')
	[ -n "$addr" ] || fail "$dev ($nd): no IPv4 address; set MARU_RDMA_ADDR"
fi
head -c 64 /dev/urandom >"$T/key"
chmod 600 "$T/key"
log "real device $dev at $addr"
for case in fs_io ${MARU_RDMA_HW_CASES:-}; do
	env -u MARU_RDMA_PRELOAD -u LD_PRELOAD -u SOFTVERBS_NS MARU_DATA=rdma \
		MARU_RDMA_ADDR="$addr" MARU_RDMA_KEY_FILE="$T/key" \
		bash "$(dirname "$0")/$case.sh" || fail "$case on $dev"
	log "$case passed on $dev"
done
