#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/vm/guest_dax.sh first|again: the guest side of vm_dax (tests/vm/vm_dax.sh).
# Real: the guest kernel's nfit, nd_pmem, dax_pmem and device_dax drivers,
# ndctl, the real libdaxctl marud and libmaru link, fuse, marud and marufs.
# Emulated: the NVDIMM (qemu's, backed by a file of the host's /dev/shm).
#
# first: make /dev/dax0.0 (devdax, 2 MiB alignment), marud on dax:/dev/dax0.0,
# two marufs mounts: fs_io's checks, zero-copy (maru_map through zc_tool, the
# preload shim, mmap) at the device's alignment, a warm restart (SIGTERM and
# SIGKILL) on the device; the files' checksums go to /vmout/dax.sums.
# again (the same memory file, a new boot): the guest finds the namespace by
# itself, marud recovers the pool from the device, the files are intact and
# still map zero-copy.
. "$SRCDIR/tests/integration/lib/common.sh"
. "$VM/guest_lib.sh"

phase=${1:?first or again}
Z=$TOOLS/zc_tool
PRELOAD=$(cd "$TOOLS/../../.." && pwd)/lib/libmaru-preload.so
[ -f "$PRELOAD" ] || fail "no $PRELOAD"
MIB=$((1 << 20))

shim()
{
	local logf=$T/$1.log
	shift
	LD_PRELOAD=$PRELOAD MARU_PRELOAD_LOG=1 "$@" 2>"$logf"
}
served() { grep -c "(zero-copy)" "$T/$1.log" || true; }

# sized LEN PATH: a file whose size is set before its bytes are written
# (truncate, then write over it), which marud allocates in one piece.
sized()
{
	truncate -s "$1" "$2" || fail "truncate $2"
	head -c "$1" "$T/ref" | dd of="$2" conv=notrunc bs=4M iflag=fullblock status=none ||
		fail "write over the sized $2"
}

if [ "$phase" = again ] && [ ! -c /dev/dax0.0 ]; then
	modprobe -a nfit nd_pmem dax_pmem device_dax
	wait_for 10 test -c /dev/dax0.0 ||
		fail "a new boot did not find the devdax namespace on the media"
fi
dev=$(vm_devdax region0)
assert_eq "$dev" /dev/dax0.0 "device"
align=$(cat /sys/bus/dax/devices/dax0.0/align)
assert_eq "$align" $((2 * MIB)) "devdax alignment (sysfs)"
daxctl list -d dax0.0 | grep -q '"align":2097152' || fail "daxctl: $(daxctl list -d dax0.0)"
# the kernel refuses a mapping off the device's alignment
python3 - "$dev" <<'PY' || fail "misaligned devdax mmap was not refused"
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    mmap.mmap(fd, 4096, mmap.MAP_SHARED, offset=4096)
except OSError as e:
    sys.exit(0 if e.errno == errno.EINVAL else 1)
sys.exit(1)
PY
vlog "$dev: devdax, align $align, $(daxctl list -d dax0.0 | tr -d ' \n')"

"$Z" gen $((32 * MIB)) 3 >"$T/ref"

if [ "$phase" = again ]; then
	marud_start --pool "dax:$dev" --size 512M
	grep -q "recovery: [0-9]* names" "$T/marud.log" || fail "marud did not recover the pool: $(cat "$T/marud.log")"
	marufs_mount
	grep -qx "path $dev" "$MNT/.maru/pool" || fail ".maru/pool: $(cat "$MNT/.maru/pool")"
	(cd "$MNT" && md5sum -c /vmout/dax.sums) || fail "files differ after a new boot"
	for f in s32 c32 d9m w6; do
		"$Z" cmp "$MNT/$f" >/dev/null || fail "maru_map of $f after a new boot"
	done
	shim again dd if="$MNT/s32" of="$T/out" bs=4M || fail "dd under the shim"
	cmp "$T/ref" "$T/out" || fail "shim read after a new boot differs"
	[ "$(served again)" -ge 8 ] || fail "after a new boot: $(served again) reads zero-copy"
	marufs_umount
	marud_stop
	vlog "again: pool recovered from the device after a new boot, files intact, zero-copy"
	exit 0
fi

# ---- fs_io on the device ----
marud_start --pool "dax:$dev" --size 512M
marufs_mount
marufs_mount
grep -qx "align $((2 * MIB))" "$MNT/.maru/pool" || fail ".maru/pool: $(cat "$MNT/.maru/pool")"
grep -qx "path $dev" "$MNT/.maru/pool" || fail ".maru/pool: $(cat "$MNT/.maru/pool")"
# the files the zero-copy checks map, made while the pool is empty
sized $((32 * MIB)) "$MNT/s32"
sized $((5 * MIB + 7)) "$MNT/s5m"
# (a writable mapping of a new file, also while free space is whole: see
# the known bug below, which hits its allocation too)
"$Z" write "$MNT/w4" $((4 * MIB)) 4 || fail "writable devdax mapping"

echo hello >"$MNT/a"
assert_eq "$(cat "$MNT/a")" hello "small file read back"
head -c $((7 * MIB | 12345)) "$T/ref" >"$T/big"
cp "$T/big" "$MNT/big"
cmp "$T/big" "$MNT/big" || fail "7 MiB file differs after cp"
cmp "$T/big" "$MNT2/big" || fail "7 MiB file differs on the second mount"
dd if="$T/ref" of="$MNT/direct" bs=4M count=4 oflag=direct status=none || fail "O_DIRECT write"
dd if="$MNT/direct" of="$T/direct.back" bs=4M iflag=direct status=none || fail "O_DIRECT read"
head -c $((16 * MIB)) "$T/ref" | cmp - "$T/direct.back" || fail "O_DIRECT round trip differs"
assert_eq "$(dd if="$MNT/big" bs=1 skip=5000000 count=777 status=none | md5sum)" \
	"$(dd if="$T/big" bs=1 skip=5000000 count=777 status=none | md5sum)" "pread at an odd offset"
touch "$MNT/empty"
wait_for 5 test -f "$MNT2/empty" || fail "touched file not visible on the second mount"
assert_eq "$(stat -c %s "$MNT2/empty")" 0 "touched file size"
python3 - "$MNT" "$MNT2" <<'PY' || fail "close-to-open across mounts"
import os, sys
a, b = sys.argv[1], sys.argv[2]
for i in range(6):
    data = os.urandom(300000 + i)
    with open(f"{a}/c2o", "wb") as f:
        f.write(data)
    with open(f"{b}/c2o", "rb") as f:
        assert f.read() == data, f"round {i}: stale bytes on the other mount"
    a, b = b, a
PY
vlog "fs_io on $dev: ok"

# ---- zero-copy at the device's alignment ----
printf x >"$MNT/one"
"$Z" info "$MNT/s32" | grep -qx "pool_path=$dev" || fail "the ioctl does not name $dev"
for f in one s32 s5m; do
	"$Z" extents "$MNT/$f" >"$T/ext"
	python3 - "$T/ext" "$f" <<'PY' || fail "extents of $f off the device's alignment: $(cat "$T/ext")"
import sys
# the first extent may start anywhere (its mapping starts at the aligned
# offset below it); every later one must start on the alignment
for e in open(sys.argv[1]).read().strip().split(",")[1:]:
    off = int(e.split("+")[0])
    assert off % (2 << 20) == 0, e
PY
	"$Z" cmp "$MNT/$f" >/dev/null || fail "maru_map of $f on $dev differs from FUSE"
	"$Z" cmp "$MNT2/$f" >/dev/null || fail "maru_map of $f on the second mount"
done
# Files that grow through the mount (cp, dd, a redirect) map too: the
# allocator keeps a growing file's extents on the device's alignment (issue
# 23: before, head -c 2M gave 22106112+262144,22708224+262144,
# 532152320+524288,531103744+1048576 and maru_map refused it with EINVAL).
head -c $((2 * MIB)) "$T/ref" >"$MNT/c2m"
cp "$T/ref" "$MNT/c32"
dd if="$T/ref" of="$MNT/d9m" bs=1M count=9 status=none
for f in c2m c32 d9m; do
	"$Z" cmp "$MNT/$f" >/dev/null ||
		fail "maru_map of the grown $f: $("$Z" extents "$MNT/$f")"
	"$Z" cmp "$MNT2/$f" >/dev/null || fail "maru_map of the grown $f on the second mount"
done
cmp "$T/ref" "$MNT/c32" || fail "cp'd 32 MiB file differs (FUSE)"
# fragmented free space now: a writable mapping and a sized file still map
"$Z" write "$MNT/w6" $((6 * MIB)) 6 || fail "writable devdax mapping after churn"
"$Z" fork "$MNT/s32" || fail "fork after maru_map on devdax"

shim dd dd if="$MNT/s32" of="$T/out" bs=4M || fail "dd under the shim"
cmp "$T/ref" "$T/out" || fail "shim dd differs"
[ "$(served dd)" -ge 8 ] || fail "dd: $(served dd) reads zero-copy: $(head -n 5 "$T/dd.log")"
shim cp dd if="$MNT/c32" of="$T/out" bs=4M || fail "dd of the cp'd file under the shim"
cmp "$T/ref" "$T/out" || fail "shim dd of the cp'd file differs"
[ "$(served cp)" -ge 8 ] || fail "dd of the cp'd file: $(served cp) reads zero-copy"
shim py env MARU_PRELOAD_MIN=4096 python3 - "$MNT" "$T/ref" <<'PY' || fail "python mmap under the shim"
import mmap, sys
m, ref = sys.argv[1], open(sys.argv[2], "rb").read()
for name, n in (("s32", len(ref)), ("s5m", 5 * 2**20 + 7), ("c32", len(ref))):
    with open(f"{m}/{name}", "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        assert mm[:] == ref[:n], f"mmap of {name} differs"
        mm.close()
PY
[ "$(served py)" -gt 0 ] || fail "python: nothing zero-copy: $(head -n 5 "$T/py.log")"
python3 - "$MNT2/big" "$T/big" <<'PY' || fail "FUSE mmap differs"
import mmap, sys
with open(sys.argv[1], "rb") as f:
    assert mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)[:] == open(sys.argv[2], "rb").read()
PY
vlog "zero-copy on $dev at 2 MiB (sized and grown files): maru_map, shim ($(served dd) dd reads), mmap: ok"

# ---- warm restart on the device ----
python3 "$SRCDIR/tests/integration/lib/oldfd.py" "$MNT/s32" "$T/ready" "$T/go" >"$T/oldfd.out" 2>&1 &
py=$!
wait_for 20 test -e "$T/ready" || fail "old-descriptor reader never got ready"
g=$(pool_field "$MNT/.maru/pool" generation)
marud_restart
wait_for 30 eval '[ "$(pool_field "$MNT/.maru/pool" generation)" != "$g" ]' ||
	fail "the mount never saw the new generation"
touch "$T/go"
wait "$py" || fail "old-descriptor reader: $(cat "$T/oldfd.out")"
assert_eq "$(cat "$T/oldfd.out")" EIO "old descriptor after marud's restart"
cmp "$T/ref" "$MNT/s32" || fail "s32 differs after the restart"
"$Z" cmp "$MNT2/s32" >/dev/null || fail "maru_map after the restart"
echo after >"$MNT2/after"
marud_restart kill
wait_for 30 eval 'cmp -s "$T/big" "$MNT/big"' || fail "big differs after SIGKILL and recovery"
assert_eq "$(cat "$MNT/after")" after "file published before SIGKILL"
[ "$(grep -c "recovery: [0-9]* names" "$T/marud.log")" = 2 ] ||
	fail "marud did not recover twice: $(grep recovery "$T/marud.log")"
(cd "$MNT" && md5sum a big direct one c2m s32 s5m c32 d9m w4 w6 after) >/vmout/dax.sums
wait_accounting_ok
marufs_umount "$MNT2"
marufs_umount
marud_stop
vlog "warm restart on $dev (SIGTERM, SIGKILL): ok"
