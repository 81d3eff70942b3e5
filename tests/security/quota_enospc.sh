#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# quota_enospc: when nothing of its own is evictable (its files open, so
# leased) a tenant's write past its quota fails with ENOSPC, evicting
# nothing of anyone's, with one log line naming the tenant, its usage and
# its quota; the refusal is counted. Another tenant's files, older and
# unleased, stay. A reservation larger than the quota is refused at once.
# Closing the files makes room again (by eviction).
. "$(dirname "$0")/quota_lib.sh"
quota_setup

put beta/b1
put alpha/a1 2
put alpha/a2 2
exec 3<"$MNT/alpha/a1" 4<"$MNT/alpha/a2"
assert_fails_with "No space left" "a write past alpha's quota" try_put alpha/a3
kept alpha/a1 alpha/a2 beta/b1
grep -q "quota: tenant alpha: ENOSPC .* of quota $((4 * MIB)) bytes" "$T/marud.log" ||
	fail "no log line naming alpha, its usage and its quota"
[ "$(tstat enospc_total alpha)" -ge 1 ] || fail "the refusal was not counted"
assert_eq "$(ns alpha enospc)" "$(tstat enospc_total alpha)" "ns.enospc and stats"
# One too big for the quota even with nothing else: refused at once (one
# reservation of its whole size), nothing evicted.
exec 3<&- 4<&-
assert_fails_with "No space left" "a file larger than the quota" \
	fallocate -l 5M "$MNT/alpha/big"
kept alpha/a1 alpha/a2
# Unleased again (in the order their releases reach marud), one of them
# makes room for a third.
put alpha/a3 2
wait_for 5 test ! -e "$MNT/alpha/a1" -o ! -e "$MNT/alpha/a2" || fail "nothing of alpha's evicted"
[ -e "$MNT/alpha/a1" ] || [ -e "$MNT/alpha/a2" ] || fail "both of alpha's files evicted for one"
kept alpha/a3 beta/b1
accounting_ok
marufs_umount
marud_stop
