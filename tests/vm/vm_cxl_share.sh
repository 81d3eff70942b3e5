#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vm_cxl_share: two hosts on one CXL memory device. Two guests (Debian's
# kernel under qemu TCG, -smp 1 each) map the SAME host memory file
# (memory-backend-file share=on) as an NVDIMM in devdax mode (--map=mem, so
# no kernel page metadata lands on the shared media) and are linked by a
# virtio-net socket link for control. marud serves the device on A; marufs
# on B finds the pool by its UUID under B's own device name and maps it.
# B boots once A has made the namespace and started marud (the namespace is
# found on the media at boot). Checks: tests/vm/guest_cxl_share.sh.
. "$(dirname "$0")/lib.sh"
vm_init
head -c 64 /dev/urandom >"$RUN/key"
chmod 600 "$RUN/key"
vm_memfile cxl 512M
shared=$MEMFILE
vm_memfile own 256M
own=$MEMFILE
port=$(vm_port)
for g in A B; do
	vm_cmd $g <<EOF2
exec bash "\$VM/guest_cxl_share.sh" $g
EOF2
done
vm_start A 1G,slots=2,maxmem=4G 480 -machine pc,nvdimm=on \
	-object "memory-backend-file,id=shared,share=on,mem-path=$shared,size=512M" \
	-device nvdimm,id=nv0,memdev=shared \
	-netdev "socket,id=n0,listen=127.0.0.1:$port" \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:08:00:01
vm_wait_listen A "$port"
# B boots when the namespace is on the media and marud serves it
for _ in $(seq 1800); do
	[ -e "$RUN/A.up.sig" ] || [ -e "$RUN/A.rc" ] && break
	kill -0 "${VM_PID[A]}" 2>/dev/null || break
	sleep 0.2
done
rc=0
if [ -e "$RUN/A.up.sig" ]; then
	vm_start B 1G,slots=4,maxmem=8G 420 -machine pc,nvdimm=on \
		-object "memory-backend-file,id=own,share=on,mem-path=$own,size=256M" \
		-device nvdimm,id=nv0,memdev=own \
		-object "memory-backend-file,id=shared,share=on,mem-path=$shared,size=512M" \
		-device nvdimm,id=nv1,memdev=shared \
		-netdev "socket,id=n0,connect=127.0.0.1:$port" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:08:00:02
	vm_wait B || rc=1
fi
vm_wait A || rc=1
grep -h '^#' "$RUN/A.log" "$RUN/B.log" >&2 || true
[ "$rc" = 0 ] || vm_fail "a guest of vm_cxl_share failed"
vm_pass
