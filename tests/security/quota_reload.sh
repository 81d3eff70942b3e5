#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# quota_reload: SIGHUP re-reads the key file and its quotas: a lowered
# quota shows at once (ns.quota, stats, a log line with the usage recounted)
# and leaves the tenant over it; its next write evicts its own oldest files
# down to the new quota, another tenant's stay. A raised one lets it grow.
. "$(dirname "$0")/quota_lib.sh"
ALPHA_QUOTA=8M
quota_setup

put beta/b1
for i in 1 2 3 4 5 6; do put alpha/a$i; done
assert_eq "$(ns alpha used)" $((6 * MIB)) "alpha's usage before the reload"
keys_write "alpha /alpha rw 4M" "beta /beta rw $BETA_QUOTA"
marud_signal HUP
wait_for 5 test "$(ns alpha quota)" = $((4 * MIB)) || fail "ns.quota after SIGHUP: $(ns alpha quota)"
assert_eq "$(tstat quota_bytes alpha)" $((4 * MIB)) "stats quota after SIGHUP"
grep -q "tenant alpha: quota $((4 * MIB)) bytes, used $((6 * MIB))" "$T/marud.log" ||
	fail "no line with alpha's new quota and usage"
put alpha/a7
for f in a1 a2 a3; do gone alpha/$f; done
kept alpha/a4 alpha/a5 alpha/a6 alpha/a7 beta/b1
assert_eq "$(ns alpha used)" $((4 * MIB)) "alpha back within its quota"
keys_write "alpha /alpha rw 16M" "beta /beta rw $BETA_QUOTA"
marud_signal HUP
wait_for 5 test "$(ns alpha quota)" = $((16 * MIB)) || fail "ns.quota after raising it"
put alpha/a8 4
kept alpha/a4 alpha/a5 alpha/a6 alpha/a7 alpha/a8
assert_eq "$(ns alpha used)" $((8 * MIB)) "alpha grew under the raised quota"
accounting_ok
marufs_umount
marud_stop
