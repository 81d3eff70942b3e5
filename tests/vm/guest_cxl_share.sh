#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/vm/guest_cxl_share.sh A|B: the two guests of vm_cxl_share
# (tests/vm/vm_cxl_share.sh), two hosts on one CXL memory device: both map
# the same host memory file (qemu share=on) as an NVDIMM in devdax mode, and
# talk over a virtio-net socket link (10.8.0.1, 10.8.0.2). Real: each
# guest's kernel dax drivers, libdaxctl, marud, marufs, loads and stores of
# one guest seen by the other. Emulated: the device (qemu's NVDIMM over a
# shared file; TCG is coherent, so coherence=flush runs its flushes but
# cannot show a missing one).
#
# A: region0 is the shared device (/dev/dax0.0, namespace made here); marud
#    on dax:/dev/dax0.0, control on tcp://10.8.0.1:7450 with a key; a local
#    mount publishes files, later checks B's and restarts marud on request.
# B: region0 is a private NVDIMM (so B's /dev/dax0.0 is another device
#    without the pool), region1 the shared one, found at boot as /dev/dax1.0.
#    marufs data=shm finds the pool there by its UUID and maps A's files;
#    its writes are read by A; coherence=hw and flush; A's marud restart.
. "$SRCDIR/tests/integration/lib/common.sh"
. "$VM/guest_lib.sh"

role=${1:?A or B}
Z=$TOOLS/zc_tool
PRELOAD=$(cd "$TOOLS/../../.." && pwd)/lib/libmaru-preload.so
MIB=$((1 << 20))
A_ADDR=10.8.0.1
URI=maru://$A_ADDR:7450
export MARU_RDMA_KEY_FILE=/vmout/key

other_down() { [ -e "/vmout/$1.rc" ]; }
await()
{
	wait_for "$3" eval "[ -e /vmout/$2.sig ] || other_down $1" ||
		fail "guest $1 never signalled $2 (${3}s)"
	[ -e "/vmout/$2.sig" ] || fail "guest $1 ended before it signalled $2"
}
shim()
{
	local logf=$T/$1.log
	shift
	LD_PRELOAD=$PRELOAD MARU_PRELOAD_LOG=1 "$@" 2>"$logf"
}
served() { grep -c "(zero-copy)" "$T/$1.log" || true; }

# maps MNT FILE...: each maps zero-copy (maru_map) and equals its FUSE read.
maps()
{
	local m=$1 f
	shift
	for f in "$@"; do
		"$Z" cmp "$m/$f" >/dev/null || fail "maru_map of $f on $VM_NAME ($m): $("$Z" extents "$m/$f")"
	done
}

"$Z" gen $((32 * MIB)) 5 >"$T/ref"

if [ "$role" = A ]; then
	dev=$(vm_devdax region0)
	vm_net $A_ADDR/24 >/dev/null
	marud_start --pool "dax:$dev" --size 256M --listen "unix:$MARUD_SOCK" \
		--listen "tcp://$A_ADDR:7450" --key-file /vmout/key
	marufs_mount
	uuid=$(pool_field "$MNT/.maru/pool" uuid)
	vlog "marud on $dev, pool $uuid"
	mkdir "$MNT/a"
	truncate -s $((32 * MIB)) "$MNT/a/s32"
	dd if="$T/ref" of="$MNT/a/s32" conv=notrunc bs=4M status=none
	cp "$T/ref" "$MNT/a/c32"
	head -c $((3 * MIB + 5)) "$T/ref" >"$MNT/a/h3m"
	echo small >"$MNT/a/small"
	maps "$MNT" a/s32 a/c32 a/h3m
	(cd "$MNT" && md5sum a/*) >/vmout/A.sums
	vm_signal A.up
	await B B.wrote 300
	(cd "$MNT" && md5sum -c --quiet /vmout/B.sums) || fail "B's files differ on A"
	maps "$MNT" b/s8 b/c20 b/wmap b/wflush
	vlog "B's writes read on A, zero-copy too"
	vm_signal A.checked
	await B B.restart 300
	marud_restart
	vm_signal A.restarted
	vlog "marud restarted"
	wait_for 400 other_down B || fail "B did not end"
	marufs_umount
	marud_stop
	exit 0
fi

# B's private NVDIMM first: a devdax of its own under the name A uses
own=$(vm_devdax region0)
assert_eq "$own" /dev/dax0.0 "B's private device"
modprobe -a nfit nd_pmem dax_pmem device_dax
wait_for 20 test -c /dev/dax1.0 ||
	fail "B did not find the shared device's devdax namespace (region1) at boot: $(ndctl list -RN)"
vm_net 10.8.0.2/24 >/dev/null
await A A.up 180
marufs_mount -u "$URI" -o data=shm
grep -qx "path /dev/dax0.0" "$MNT/.maru/pool" || fail ".maru/pool: $(cat "$MNT/.maru/pool")"
# marud names its own device (/dev/dax0.0); here that is B's private one,
# and libmaru must find the pool by its UUID on /dev/dax1.0
(cd "$MNT" && md5sum -c --quiet /vmout/A.sums) || fail "A's files differ on B"
grep -q " /dev/dax1.0$" "/proc/$MARUFS_PID/maps" ||
	fail "marufs on B did not map /dev/dax1.0: $(grep /dev/dax "/proc/$MARUFS_PID/maps")"
! grep -q " /dev/dax0.0$" "/proc/$MARUFS_PID/maps" || fail "marufs on B mapped its private /dev/dax0.0"
vlog "the pool A serves as /dev/dax0.0 is /dev/dax1.0 here (found by UUID)"

# ---- A's publishes, zero-copy on B ----
maps "$MNT" a/s32 a/c32 a/h3m a/small
shim dd dd if="$MNT/a/c32" of="$T/out" bs=4M || fail "dd under the shim on B"
cmp "$T/ref" "$T/out" || fail "shim read on B differs"
[ "$(served dd)" -ge 8 ] || fail "shim on B: $(served dd) reads zero-copy: $(head -n 3 "$T/dd.log")"
vlog "A's files map zero-copy on B (maru_map, shim: $(served dd) reads)"

# ---- B's writes, coherence=hw then flush ----
mkdir "$MNT/b"
truncate -s $((8 * MIB)) "$MNT/b/s8"
dd if="$T/ref" of="$MNT/b/s8" conv=notrunc bs=4M count=2 status=none
head -c $((20 * MIB)) "$T/ref" >"$T/r20"
cp "$T/r20" "$MNT/b/c20"
"$Z" write "$MNT/b/wmap" $((4 * MIB)) 7 || fail "writable mapping on B (coherence=hw)"
maps "$MNT" b/s8 b/c20 b/wmap
marufs_mount -u "$URI" -o data=shm,coherence=flush
fm=$LAST_MNT
"$Z" info "$fm/a/s32" | grep -qx coherence=flush || fail "coherence=flush not in force"
maps "$fm" a/s32 a/c32 b/c20
"$Z" write "$fm/b/wflush" $((6 * MIB)) 8 || fail "writable mapping on B (coherence=flush)"
"$Z" gen $((6 * MIB)) 8 | cmp - "$MNT/b/wflush" || fail "coherence=flush write read on B"
marufs_umount "$fm"
(cd "$MNT" && md5sum b/*) >/vmout/B.sums
vm_signal B.wrote
await A A.checked 300

# ---- marud restarted on A, seen from B ----
python3 "$SRCDIR/tests/integration/lib/oldfd.py" "$MNT/a/s32" "$T/ready" "$T/go" >"$T/oldfd.out" 2>&1 &
py=$!
wait_for 20 test -e "$T/ready" || fail "old-descriptor reader never got ready"
g=$(pool_field "$MNT/.maru/pool" generation)
vm_signal B.restart
await A A.restarted 120
wait_for 60 eval '[ "$(pool_field "$MNT/.maru/pool" generation)" != "$g" ]' ||
	fail "B never saw marud's new generation"
touch "$T/go"
wait "$py" || fail "old-descriptor reader: $(cat "$T/oldfd.out")"
assert_eq "$(cat "$T/oldfd.out")" EIO "B's old descriptor after A's marud restarted"
cmp "$T/ref" "$MNT/a/s32" || fail "a new open on B after the restart"
maps "$MNT" a/s32 b/c20
vlog "A's marud restart seen on B: old descriptor EIO, new opens and maps work"
marufs_umount
