#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_readahead: a mount raises the kernel's read-ahead of its own device
# (-o readahead_kb, default 512), which the kernel otherwise keeps at 128
# KiB for FUSE. The first read of a 32 MiB chunk on a mount that never saw
# it then takes 64 READ requests of 512 KiB (counted by
# marufs_fuse_ops_total{op="read"}), not 256 of 128 KiB; readahead_kb=0
# leaves the kernel's value; the bytes read are the same either way; the
# setting is each mount's own. Real: marud, three marufs mounts, the
# kernel's FUSE read-ahead and sysfs (/sys/class/bdi). Nothing emulated.
. "$(dirname "$0")/lib/common.sh"

marud_start --size 256M
marufs_mount			# the writer
marufs_mount			# a reader, the default
RA=$LAST_MNT
marufs_mount -o readahead_kb=0	# a reader, the kernel's read-ahead
KERNEL=$LAST_MNT

ra_kb() { cat "/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb"; }
reads() { stat_value 'marufs_fuse_ops_total{op="read"}' "$1"; }

assert_eq "$(ra_kb "$RA")" 512 "read_ahead_kb of a default mount"
assert_eq "$(ra_kb "$KERNEL")" 128 "read_ahead_kb with readahead_kb=0"

head -c $((32 << 20)) /dev/urandom >"$T/src"
cp "$T/src" "$MNT/chunk"
for m in "$RA" "$KERNEL"; do
	r0=$(reads "$m")
	cmp "$T/src" "$m/chunk" || fail "$m read other bytes"
	r1=$(reads "$m")
	n=$((r1 - r0))
	log "$m: $n READ requests for a first read of 32 MiB (read_ahead_kb $(ra_kb "$m"))"
	if [ "$m" = "$RA" ]; then
		[ "$n" -ge 60 ] && [ "$n" -le 72 ] || fail "default mount: $n READs (expected about 64)"
	else
		[ "$n" -ge 250 ] || fail "readahead_kb=0: $n READs (expected about 256)"
	fi
done
marufs_umount "$KERNEL"
marufs_umount "$RA"
marufs_umount
marud_stop
