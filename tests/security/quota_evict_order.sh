#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# quota_evict_order: a tenant writing past its quota (4 MiB) loses its own
# least recently used file first (a file read again moved behind the
# others), one file per MiB it needs, while the pool has room: another
# tenant's older files are never touched. Without per-tenant quotas the
# pool has room and nothing would go; with one pool-wide LRU beta's older
# files would go first.
. "$(dirname "$0")/quota_lib.sh"
quota_setup

put beta/b1
put beta/b2
for f in a1 a2 a3 a4; do
	put alpha/$f
done
assert_eq "$(ns alpha used)" $((4 * MIB)) "alpha's usage at its quota"
cat "$MNT/alpha/a1" >/dev/null		# a1 used again: a2 is now the oldest
put alpha/a5
gone alpha/a2
kept alpha/a1 alpha/a3 alpha/a4 alpha/a5 beta/b1 beta/b2
put alpha/a6 2				# two MiB more: a3 and a4 go, a1 stays
gone alpha/a3
gone alpha/a4
kept alpha/a1 alpha/a5 alpha/a6 beta/b1 beta/b2
assert_eq "$(ns alpha used)" $((4 * MIB)) "alpha's usage after eviction"
assert_eq "$(tstat evictions_total alpha)" 3 "alpha's evictions"
assert_eq "$(tstat evictions_total beta)" 0 "beta's evictions"
assert_eq "$(tstat used_bytes beta)" $((2 * MIB)) "beta's usage"
accounting_ok
marufs_umount
marud_stop
grep -q "accounting exact" "$T/marud.log" || fail "no exact accounting at shutdown"
