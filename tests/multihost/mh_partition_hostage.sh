#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mh_partition_hostage: one unreachable worker never slows the others (issue
# 22, "close-to-open without hostages"). Hosts: pool (marud), w1 (mount A, the
# worker that keeps working) and w2 (mount B, cut off). A creates, writes and
# closes files in a loop before, during and after B's partition; the p99 of a
# create+close during and after must stay within 2x the unpartitioned p99
# (with a floor of MH_P99_FLOOR_MS, 10 ms: on this shared 2-core machine the
# scheduler alone moves a 1 ms p99 by more than that; an unreachable mount
# held hostage costs marud's ack timeout, 1000 ms, per publish).
# The partition lasts MH_CUT_S (60 s, as the issue asks; the whole suite still
# runs in about 2 minutes), the loop after the heal 15 s (the issue saw the
# slowness last 49 s after the link came back).
# After the heal, B must give no stale answer: a file A rewrote and one A
# removed during the partition, both cached on B before it, read fresh on B
# as soon as B answers an uncached lookup again.
# Real: TCP between namespaces, marud, both mounts. Emulated: the partition
# (every frame to and from w2 dropped on the bridge).
. "$(dirname "$0")/lib.sh"
: "${MH_CUT_S:=60}"
: "${MH_P99_FLOOR_MS:=10}"
mh_init
mh_host pool
mh_host w1
mh_host w2
mh_marud_start pool
mh_mount w1
A=$LAST_MNT
mh_mount w2
B=$LAST_MNT

echo v1 >"$A/probe"
echo doomed >"$A/gone"
assert_eq "$(cat "$B/probe")" v1 "B reads probe before the cut"
assert_eq "$(cat "$B/gone")" doomed "B reads gone before the cut"
stat "$B/probe" "$B/gone" >/dev/null

mh_tool createloop "$A" base 5 "$T/lat.base"
mh_cut w2
mh_tool createloop "$A" during "$MH_CUT_S" "$T/lat.during" &
loop=$!
sleep 2
echo v2 >"$A/probe"
rm "$A/gone"
wait "$loop" || fail "the create loop on A failed during the partition"
mh_heal w2
mh_tool createloop "$A" after 15 "$T/lat.after"

base=$(mh_p99 "$T/lat.base")
during=$(mh_p99 "$T/lat.during")
after=$(mh_p99 "$T/lat.after")
limit=$(awk -v b="$base" -v f="$MH_P99_FLOOR_MS" 'BEGIN { l = 2 * b; if (l < f) l = f; print l }')
log "create+close p99 (ms): unpartitioned $base, during $during, after $after; limit $limit;" \
	"ops $(wc -l <"$T/lat.base")/$(wc -l <"$T/lat.during")/$(wc -l <"$T/lat.after")"
awk -v d="$during" -v l="$limit" 'BEGIN { exit !(d <= l) }' ||
	fail "p99 during the partition $during ms > $limit ms (unpartitioned $base ms)"
awk -v d="$after" -v l="$limit" 'BEGIN { exit !(d <= l) }' ||
	fail "p99 after the heal $after ms > $limit ms (unpartitioned $base ms)"

# B back: a name it never saw must come from marud; then nothing stale
echo marker >"$A/marker"
wait_for 30 test -e "$B/marker" || fail "B did not answer a new name 30 s after the heal"
assert_eq "$(cat "$B/probe")" v2 "B's first read of probe after the heal"
[ ! -e "$B/gone" ] || fail "B still shows a file removed during the partition"
cmp <(ls "$A") <(ls "$B") || fail "A and B list different names after the heal"

marufs_umount "$A"
marufs_umount "$B"
marud_stop
