#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_dir_attrs: the directory attributes a mount keeps (fs/dattr.c). With
# default_permissions the kernel drops a directory's attributes at every
# create in it and asks again before the next lookup there; marufs answers
# from what the last publish's reply said of the directory, so a create
# costs marud three requests (lookup, create, publish), not four. What it
# answers must be what marud has: the same size, mtime and ctime as a fresh
# mount sees, and a change made by another mount (whose close waits for this
# mount's acknowledgement of its event) must never be answered from before
# it. A mount that only writes acknowledges its event stream from the start:
# its own publishes' events need no acknowledgement and get none.
. "$(dirname "$0")/lib/common.sh"

N=60
marud_start
marufs_mount
A=$MNT
mkdir "$A/d"

stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$1/.maru/stats"; }
# marud requests less what reading the stats costs (two reads measure it)
reqs() { stat_of "$1" maru_client_requests_total; }
z0=$(reqs "$A"); z1=$(reqs "$A"); r0=$(reqs "$A"); h0=$(stat_of "$A" marufs_dir_attr_hits_total)
for i in $(seq $N); do echo "$i" >"$A/d/f$i"; done
r1=$(reqs "$A"); h1=$(stat_of "$A" marufs_dir_attr_hits_total)
per=$(( (r1 - r0 - (z1 - z0)) ))
log "$N creates: $per marud requests, $((h1 - h0)) directory GETATTRs answered here"
[ "$per" -le $((3 * N + 3)) ] || fail "$N creates took $per marud requests (> 3 each)"
[ $((h1 - h0)) -ge $((N - 2)) ] || fail "only $((h1 - h0)) of $N directory GETATTRs answered here"
# own publishes: events flagged own, none acked by itself; yet a mount
# that only ever publishes acknowledges its stream (A acked its mkdir's)
[ "$(stat_of "$A" marufs_events_own_total)" -ge "$N" ] ||
	fail "events of own publishes not flagged: $(grep events "$A/.maru/stats")"
marufs_mount
W=$LAST_MNT
for i in $(seq 5); do echo "$i" >"$W/d/w$i"; done
assert_eq "$(stat_of "$W" marud_ack_subscribers)" 2 "a write-only mount's stream acknowledges"
marufs_umount "$W"
N=$((N + 5))

# what it answers is marud's: a fresh mount asks marud
attrs() { stat -c '%s %h %a %u %g %.9Y %.9Z' "$1"; }
marufs_mount
B=$LAST_MNT
assert_eq "$(attrs "$A/d")" "$(attrs "$B/d")" "directory attributes after $N creates"
assert_eq "$(stat -c %s "$A/d")" "$N" "entries after $N creates"

# another mount's change is never answered from before it
for i in $(seq 20); do
	echo a >"$A/d/a$i"		# A keeps the directory as this publish left it
	echo b >"$B/d/b$i"		# returns once A applied its event
	want=$((N + 2 * i))
	assert_eq "$(stat -c %s "$A/d")" "$want" "round $i: entries seen on A after B's create"
done
rm "$B/d/f1"
echo c >"$A/d/c1"
rm "$B/d/c1"
assert_eq "$(stat -c %s "$A/d")" "$((N + 39))" "entries seen on A after B's removals"

# the mount's own other changes: unlink, mkdir, rename, chmod
rm "$A/d/f2"
assert_eq "$(stat -c %s "$A/d")" "$((N + 38))" "entries after an unlink here"
mkdir "$A/d/sub"
assert_eq "$(stat -c '%s %h' "$A/d")" "$((N + 39)) 3" "entries and links after a mkdir here"
mv "$A/d/f3" "$A/d/sub/f3"
assert_eq "$(stat -c %s "$A/d")" "$((N + 38))" "entries after a rename out here"
chmod 750 "$A/d"
assert_eq "$(stat -c %a "$A/d")" 750 "mode after a chmod here"
marufs_mount
C=$LAST_MNT
assert_eq "$(attrs "$A/d")" "$(attrs "$C/d")" "directory attributes at the end"
marufs_umount "$C"
marufs_umount "$B"
marufs_umount "$A"
marud_stop
