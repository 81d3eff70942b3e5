#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# quota_usage: a tenant's usage as user.maru.ns.* on its root and as
# tenant-labelled stats match what was written (published bytes; a file
# being written counts as pending), are listed only on a tenant's root,
# and are the same after a marud restart (recounted from the recovered
# directory), with exact accounting at shutdown both times.
. "$(dirname "$0")/quota_lib.sh"
ALPHA_QUOTA=8M
quota_setup

put alpha/a1
put alpha/a2 2
mkdir "$MNT/alpha/sub"
put alpha/sub/a3
put beta/b1 3
assert_eq "$(ns alpha tenant)" alpha "ns.tenant"
assert_eq "$(ns alpha quota)" $((8 * MIB)) "ns.quota"
assert_eq "$(ns alpha used)" $((4 * MIB)) "ns.used (subdirectories count)"
assert_eq "$(ns alpha pending)" 0 "ns.pending"
assert_eq "$(ns alpha evictable)" $((4 * MIB)) "ns.evictable"
assert_eq "$(ns beta used)" $((3 * MIB)) "beta's ns.used"
assert_eq "$(tstat used_bytes alpha)" $((4 * MIB)) "stats used"
assert_eq "$(tstat quota_bytes alpha)" $((8 * MIB)) "stats quota"
assert_eq "$(tstat quota_bytes beta)" $((64 * MIB)) "beta's stats quota"
# A file being written is pending: its reservation (user.maru.size) counts.
exec 3>"$MNT/alpha/w"
setfattr -n user.maru.size -v 1M "$MNT/alpha/w"
assert_eq "$(ns alpha pending)" $MIB "ns.pending while writing"
assert_eq "$(tstat pending_bytes alpha)" $MIB "stats pending while writing"
head -c $MIB /dev/urandom >&3
exec 3>&-
assert_eq "$(ns alpha pending)" 0 "pending after close"
assert_eq "$(ns alpha used)" $((5 * MIB)) "used after close"
getfattr -d -m '^user\.maru\.ns\.' "$MNT/alpha" >"$T/list" 2>&1
grep -q "user.maru.ns.quota" "$T/list" || fail "ns.quota not listed on the root: $(cat "$T/list")"
getfattr -d -m '^user\.maru\.ns\.' "$MNT/alpha/sub" >"$T/list" 2>&1
if grep -q "user.maru.ns.quota" "$T/list"; then
	fail "ns.quota listed on a directory that is no tenant root"
fi
assert_fails_with "No such attribute" "ns.quota off a tenant root" \
	getfattr -n user.maru.ns.quota "$MNT/alpha/sub"
marufs_umount
marud_restart
grep -q "tenant alpha: quota $((8 * MIB)) bytes, used $((5 * MIB)) + pending 0" "$T/marud.log" ||
	fail "no usage recounted at restart"
marufs_mount -o "key_file=$(key_client admin)"
MNT=$LAST_MNT
assert_eq "$(ns alpha used)" $((5 * MIB)) "ns.used after a restart"
assert_eq "$(tstat used_bytes beta)" $((3 * MIB)) "beta's usage after a restart"
marufs_umount
marud_stop
[ "$(grep -c "accounting exact" "$T/marud.log")" -eq 2 ] || fail "no exact accounting at each shutdown"
