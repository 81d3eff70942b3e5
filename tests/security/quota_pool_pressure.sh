#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# quota_pool_pressure: the pool is full and every tenant is within its
# quota. A tenant's write evicts files under no tenant root first (though
# another tenant's are older), then its own oldest, and never the other
# tenant's; when only the other tenant's could make room it gets ENOSPC.
# With the one pool-wide LRU of before, beta's oldest files would go first.
. "$(dirname "$0")/quota_lib.sh"
ALPHA_QUOTA=1G
BETA_QUOTA=1G
quota_setup_args=(--size 64M)
quota_setup

cap=$(stat_value marud_pool_capacity_bytes)
mib=$((cap / MIB))
nb=$((mib / 4))				# beta: about half the pool, in 2 MiB files
for i in $(seq 1 "$nb"); do put beta/b$i 2; done
mkdir "$MNT/shared"
put shared/u1 2				# under no tenant root
na=$(((mib - 2 * nb - 2) / 2))
for i in $(seq 1 "$na"); do put alpha/a$i 2; done
free=$(stat_value marud_pool_free_bytes)
[ "$free" -lt $((2 * MIB)) ] || fail "the pool is not full: $free bytes free"
put alpha/x1 2
gone shared/u1
kept alpha/a1 beta/b1
put alpha/x2 2
gone alpha/a1
for i in $(seq 1 "$nb"); do kept beta/b$i; done
# More than alpha's own and the free bytes: only beta's could make room.
own=$(ns alpha evictable)
free=$(stat_value marud_pool_free_bytes)
assert_fails_with "No space left" "a write only beta's files could make room for" \
	fallocate -l $((own + free + 2 * MIB)) "$MNT/alpha/huge"
for i in $(seq 1 "$nb"); do kept beta/b$i; done
kept alpha/a2 alpha/x1 alpha/x2
assert_eq "$(tstat evictions_total beta)" 0 "beta's evictions"
accounting_ok
marufs_umount
marud_stop
