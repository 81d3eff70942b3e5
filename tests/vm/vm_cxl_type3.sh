#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# vm_cxl_type3: once, the CXL type-3 path on the real kernel stack. One guest
# (Debian's kernel under qemu TCG, q35 with cxl=on) with a CXL host bridge
# (pxb-cxl), TWO root ports (with one, qemu drops every store) and a
# persistent type-3 device over a host file, a fixed memory window
# targeting the bridge. Checks: tests/vm/guest_cxl_type3.sh.
. "$(dirname "$0")/lib.sh"
vm_init
vm_memfile cxlmem 256M
mem=$MEMFILE
vm_memfile cxllsa 256M
lsa=$MEMFILE
vm_cmd A <<'EOF2'
exec bash "$VM/guest_cxl_type3.sh"
EOF2
vm_start A 1G 400 -machine q35,cxl=on \
	-object "memory-backend-file,id=cxl-mem0,share=on,mem-path=$mem,size=256M" \
	-object "memory-backend-file,id=cxl-lsa0,share=on,mem-path=$lsa,size=256M" \
	-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1 \
	-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2 \
	-device cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3 \
	-device cxl-type3,bus=rp0,memdev=cxl-mem0,lsa=cxl-lsa0,id=cxl-pmem0 \
	-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G
vm_wait A || vm_fail "guest_cxl_type3.sh failed in the guest"
grep '^#' "$RUN/A.log" >&2 || true
vm_pass
