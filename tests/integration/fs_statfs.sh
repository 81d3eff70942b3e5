#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_statfs: statfs(2) of a marufs mount as df and stat -f see it: 4096-byte
# blocks, blocks = pool capacity, bfree = free bytes, bavail = free +
# evictable bytes (published, unleased files count as available), name
# length 255, and the mount shows up as POOL on type fuse.marufs.
. "$(dirname "$0")/lib/common.sh"

marud_start --size 64M
marufs_mount

read -r bsize frsize blocks bfree bavail namemax < <(stat -f -c '%s %S %b %f %a %l' "$MNT")
assert_eq "$bsize" 4096 "f_bsize"
assert_eq "$frsize" 4096 "f_frsize"
assert_eq "$namemax" 255 "f_namemax"
cap=$(stat_value marud_pool_capacity_bytes)
assert_eq "$blocks" $((cap / 4096)) "f_blocks = capacity / 4096"
[ "$bfree" -le "$blocks" ] && [ "$bavail" -ge "$bfree" ] || fail "bfree $bfree bavail $bavail blocks $blocks"

head -c $((8 << 20)) /dev/zero >"$MNT/eight"
read -r bfree2 bavail2 < <(stat -f -c '%f %a' "$MNT")
[ $((bfree - bfree2)) -ge 2048 ] || fail "8 MiB file took only $((bfree - bfree2)) blocks off bfree"
# published and unleased: evictable, so still available
[ $((bavail - bavail2)) -lt 2048 ] || fail "evictable file counted as unavailable ($bavail -> $bavail2)"

# a reader's lease pins it: no longer available
exec 5<"$MNT/eight"
read -r bavail3 < <(stat -f -c '%a' "$MNT")
exec 5<&-
[ $((bavail - bavail3)) -ge 2048 ] || fail "a leased file still counts as available ($bavail -> $bavail3)"

# df -i: used inodes are the names and directories, free never exceeds total
mkdir "$MNT/d1"
read -r files ffree < <(stat -f -c '%c %d' "$MNT")
assert_eq $((files - ffree)) 2 "used inodes (one file, one directory)"

df -P "$MNT" | tail -1 | grep -q "^$MARU_URI " || fail "df does not show the pool URI: $(df -P "$MNT" | tail -1)"
grep -q " $MNT fuse.marufs " /proc/mounts || fail "mount type is not fuse.marufs: $(grep " $MNT " /proc/mounts)"
marufs_umount
marud_stop
