#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vm_dax: marud on a real device-DAX character device. One guest (Debian's
# kernel under qemu TCG) with an emulated NVDIMM backed by a host memory
# file; its kernel's nfit/dax drivers make /dev/dax0.0 (devdax, 2 MiB
# alignment) and marud opens it through the real libdaxctl. Inside:
# fs_io's checks, zero-copy (maru_map, the preload shim, mmap) at the
# device's alignment, a warm restart (tests/vm/guest_dax.sh first). Then the
# same memory file in a second boot: the namespace is found on the media, the
# pool recovered, the files intact and mapped (guest_dax.sh again).
. "$(dirname "$0")/lib.sh"
vm_init
vm_memfile nvdimm 1G
mem=$MEMFILE
nvdimm=(-machine pc,nvdimm=on
	-object "memory-backend-file,id=mem1,share=on,mem-path=$mem,size=1G"
	-device nvdimm,id=nv1,memdev=mem1)
for phase in first again; do
	vm_cmd A <<EOF2
exec bash "\$VM/guest_dax.sh" $phase
EOF2
	vm_start A 1G,slots=2,maxmem=4G 300 "${nvdimm[@]}"
	vm_wait A || vm_fail "guest_dax.sh $phase failed in the guest"
	grep '^#' "$RUN/A.log" >&2 || true
done
vm_pass
