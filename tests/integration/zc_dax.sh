#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# zc_dax: device-DAX end to end, on hardware only. marud serves a dax: pool
# on /dev/daxX.Y and a marufs mount on it hands out zero-copy mappings that
# libmaru makes at the device's alignment; the shim's reads and mmap match
# FUSE. Skipped (77) without a /dev/dax* device; since the pool superblock
# is written to the device, it also needs MARU_TEST_DAX=/dev/daxX.Y naming a
# device that may be overwritten (the same rule as daemon/pool/pool_test).
. "$(dirname "$0")/lib/common.sh"

shopt -s nullglob
devs=(/dev/dax*)
[ ${#devs[@]} -gt 0 ] || skip "no /dev/dax* device"
dev=${MARU_TEST_DAX:-}
[ -n "$dev" ] || skip "set MARU_TEST_DAX=/dev/daxX.Y to let this test overwrite a device"
[ -c "$dev" ] || fail "MARU_TEST_DAX=$dev is not a character device"

Z=$TOOLS/zc_tool
PRELOAD=${MARU_PRELOAD_LIB:-$(cd "$TOOLS/../../.." && pwd)/lib/libmaru-preload.so}
marud_start --pool "dax:$dev" --size 1G
marufs_mount
"$Z" gen 1 1 >"$MNT/one"
"$Z" gen $((2 << 20 | 1)) 2 >"$MNT/f2m1"
"$Z" gen $((32 << 20)) 3 >"$T/r32m"
cp "$T/r32m" "$MNT/c32"
"$Z" info "$MNT/c32" | grep -qx "pool_path=$dev" || fail "ioctl does not name $dev"
for f in one f2m1 c32; do
	"$Z" cmp "$MNT/$f" >/dev/null || fail "devdax mapping of $f differs"
done
"$Z" write "$MNT/w" $((4 << 20)) 4 || fail "writable devdax mapping"
"$Z" gen $((4 << 20)) 4 | cmp - "$MNT/w" || fail "devdax written bytes differ"
LD_PRELOAD=$PRELOAD dd if="$MNT/c32" of="$T/out" bs=4M 2>/dev/null || fail "dd under the shim"
cmp "$T/r32m" "$T/out" || fail "shim read on devdax differs"
marufs_umount
marud_stop
