#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/vm/guest_cxl_type3.sh: the guest side of vm_cxl_type3. Real: the
# guest kernel's CXL stack (cxl_acpi, cxl_pci, cxl_mem, cxl_pmem, regions),
# the cxl and ndctl tools, libdaxctl, marud, marufs. Emulated: qemu's CXL
# type-3 device (persistent memory over a host file; every access is
# emulated MMIO, about 28 MiB/s under TCG, so the I/O here is short).
# The device goes region -> namespace -> devdax, marud serves it, and a
# marufs mount does a short fs_io with zero-copy reads.
. "$SRCDIR/tests/integration/lib/common.sh"
. "$VM/guest_lib.sh"
Z=$TOOLS/zc_tool
MIB=$((1 << 20))

modprobe -a cxl_acpi cxl_pci cxl_mem cxl_pmem nd_pmem dax_pmem device_dax
wait_for 30 eval 'cxl list -M 2>/dev/null | grep -q mem0' || fail "no CXL memdev: $(cxl list 2>&1)"
wait_for 30 eval 'cxl list -D -d decoder0.0 2>/dev/null | grep -q decoder0.0' ||
	fail "no root decoder: $(cxl list -D 2>&1)"
cxl create-region -m -t pmem -d decoder0.0 -w 1 -s 256M mem0 >&2 || fail "cxl create-region"
region=$(ls -d /sys/bus/nd/devices/region* | head -n 1)
[ -n "$region" ] || fail "the CXL region has no nvdimm region: $(ndctl list -R 2>&1)"
region=$(basename "$region")
ndctl create-namespace -r "$region" -m devdax --map=mem --align 2M >&2 ||
	fail "ndctl create-namespace on $region"
dev=/dev/$(daxctl list | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["chardev"])')
wait_for 10 test -c "$dev" || fail "$dev did not appear"
vlog "CXL type-3: mem0 -> $(cxl list -R | tr -d ' \n' | head -c 200) -> $region -> $dev"

marud_start --pool "dax:$dev" --size 128M
grep -q "opened dax at $dev" "$T/marud.log" || fail "marud did not open $dev: $(cat "$T/marud.log")"
marufs_mount
marufs_mount
grep -qx "path $dev" "$MNT/.maru/pool" || fail ".maru/pool: $(cat "$MNT/.maru/pool")"
echo hello >"$MNT/a"
assert_eq "$(cat "$MNT2/a")" hello "small file on the other mount"
"$Z" gen $((3 * MIB + 77)) 9 >"$T/ref"
cp "$T/ref" "$MNT/f"
cmp "$T/ref" "$MNT2/f" || fail "3 MiB file differs"
"$Z" cmp "$MNT2/f" >/dev/null || fail "maru_map on the CXL device: $("$Z" extents "$MNT/f")"
dd if="$T/ref" of="$MNT/d" bs=1M count=2 oflag=direct status=none || fail "O_DIRECT write"
head -c $((2 * MIB)) "$T/ref" | cmp - "$MNT2/d" || fail "O_DIRECT file differs"
mv "$MNT/f" "$MNT/g"
rm "$MNT/a"
assert_eq "$(ls "$MNT2" | tr '\n' ' ')" "d g " "names after rename and unlink"
marud_restart
wait_for 30 cmp -s "$T/ref" "$MNT/g" || fail "file after marud's restart on the CXL device"
marufs_umount "$MNT2"
marufs_umount
marud_stop
vlog "marud on the CXL type-3 devdax: fs_io, zero-copy, restart: ok"
