#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vm_rdma: the rdma data path between two hosts on the real kernel stack.
# Two guests (Debian's kernel under qemu TCG, -smp 1 each) linked by a
# virtio-net socket link (qemu -netdev socket on 127.0.0.1 of the host),
# each running Soft-RoCE (rdma_rxe) over it. marud on A listens on
# rdma:// and tcp:// (with a key), marufs on B mounts it with data=rdma.
# The checks are in tests/vm/guest_rdma.sh; real here: the kernel's RoCE v2
# stack and rdma-core's rxe provider, no softverbs. Emulated: the NIC.
# A has 2 GiB: the engine cases it runs last make a 1 GiB shm pool (in
# 1 GiB, engine_vllm starved the guest; see guest_rdma.sh).
. "$(dirname "$0")/lib.sh"
vm_init
head -c 64 /dev/urandom >"$RUN/key"
chmod 600 "$RUN/key"
port=$(vm_port)
for g in A B; do
	vm_cmd $g <<EOF2
exec bash "\$VM/guest_rdma.sh" $g
EOF2
done
vm_start A 2G 720 -netdev "socket,id=n0,listen=127.0.0.1:$port" \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:07:00:01
vm_wait_listen A "$port"
vm_start B 1G 540 -netdev "socket,id=n0,connect=127.0.0.1:$port" \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:07:00:02
rc=0
vm_wait B || rc=1
vm_wait A || rc=1
grep -h '^#' "$RUN/A.log" "$RUN/B.log" >&2 || true
[ "$rc" = 0 ] || vm_fail "a guest of vm_rdma failed"
vm_pass
