#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# quota_scoped: the quota as a tenant's own mount sees it. alpha mounts
# with its scoped key (data=tcp): its / carries user.maru.ns.* (its root),
# its writes past the quota evict its own oldest file and never beta's, a
# write that only beta's files could make room for is ENOSPC, and the
# usage it reads equals what the administrator reads on /alpha. Without
# the quota the writes would all fit and nothing would go.
. "$(dirname "$0")/quota_lib.sh"
quota_setup
ADM=$MNT
marufs_mount -o "key_file=$(key_client alpha /alpha rw),data=tcp"
A=$LAST_MNT
put beta/b1				# the administrator's, in beta's root
for f in a1 a2 a3 a4; do
	head -c $MIB /dev/urandom >"$A/$f" || fail "alpha writing $f"
done
assert_eq "$(getfattr --only-values -n user.maru.ns.used "$A")" $((4 * MIB)) \
	"alpha's / shows its usage"
assert_eq "$(getfattr --only-values -n user.maru.ns.quota "$A")" $((4 * MIB)) \
	"alpha's / shows its quota"
assert_eq "$(getfattr --only-values -n user.maru.ns.tenant "$A")" alpha "ns.tenant on /"
head -c $MIB /dev/urandom >"$A/a5" || fail "alpha writing a5"
wait_for 5 test ! -e "$A/a1" || fail "alpha's oldest file was not evicted"
[ -e "$A/a2" ] && [ -e "$A/a5" ] || fail "alpha lost more than its oldest"
kept beta/b1
gone alpha/a1				# the administrator sees the same
assert_eq "$(getfattr --only-values -n user.maru.ns.used "$A")" "$(ns alpha used)" \
	"alpha's and the administrator's usage agree"
mkdir "$A/sub"
assert_fails_with "No such attribute" "ns.quota below the root" \
	getfattr -n user.maru.ns.quota "$A/sub"
assert_fails_with "No space left" "a reservation past the quota" \
	fallocate -l 5M "$A/big"
kept beta/b1
assert_eq "$(tstat evictions_total beta)" 0 "beta's evictions"
marufs_umount "$A"
marufs_umount "$ADM"
marud_stop
