#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/fs_hints.sh: hints end to end, with a real marud running
# the tier extension (a file: pool behind a 32 MiB DRAM budget) and a real
# marufs mount (data=tcp, so marud's mapping serves every byte):
# .maru/hints lines bring hinted files into the cache (mincore says so) and a
# bad line fails the write with EINVAL and a log line; user.maru.hint on a
# directory hints its files; the tier holds its budget while 96 MiB are
# written and read, and every byte reads back after it dropped pages; the
# first lookup of a name becomes one read hint per window; a change of the
# memory generation gives a new pool generation, EIO on an old descriptor
# and an empty directory.
. "$(dirname "$0")/lib/common.sh"
skip_unless_fuse
skip_unless_cmd setfattr
: "${TIER_EXT:?TIER_EXT must name the tier module}"

BUDGET=$((32 << 20))
POOL=$T/pool
marud_start --pool "file:$POOL" --size 256M --region-extension "$TIER_EXT" \
	--region-extension-config "budget=32M,sweep_ms=10"
grep -q "region extension tier loaded" "$T/marud.log" || fail "tier not loaded"
marufs_mount -o data=tcp -o entry_timeout=0 -o attr_timeout=0
# extents are read through a mount without lookup hints: getfattr's lookup
# of a chunk must not itself hint it back into the cache
marufs_mount -o data=tcp -o lookup_hints=off
MX=$LAST_MNT

mkdir "$MNT/kv"
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
	head -c $((8 << 20)) /dev/urandom >"$T/src$i"
	cp "$T/src$i" "$MNT/kv/c$i"
done
extent_of() { getfattr --absolute-names --only-values -n user.maru.extent "$MX/kv/$1"; }
# below LIMIT resident bytes in the pool (all of it, or the extents given)
under() { [ "$("$TOOLS/page_resident" "$POOL" ${2:+"$2"})" -lt "$1" ]; }
at_least() { [ "$("$TOOLS/page_resident" "$POOL" "$2")" -ge "$1" ]; }

# the budget holds: 96 MiB written through a 32 MiB cache
wait_for 5 under $((BUDGET + (4 << 20) + 1)) || fail "tier over budget"

# a bad line fails the write and says why; nothing is queued
q0=$(stat_value marufs_hint_queue_total)
if printf 'rea r1 kv/c0\n' >"$MNT/.maru/hints" 2>/dev/null; then
	fail "an unknown verb was accepted"
fi
if printf 'read r1 kv/c0 /abs\n' >"$MNT/.maru/hints" 2>/dev/null; then
	fail "an absolute path was accepted"
fi
if printf 'read r1 kv/nope\n' >"$MNT/.maru/hints" 2>/dev/null; then
	fail "a missing file was accepted"
fi
grep -q "bad line 'read r1 kv/c0 /abs'" "$T/marufs-1.log" || fail "no log line for a bad line"
assert_eq "$(stat_value marufs_hint_queue_total)" "$q0" "a bad line queued nothing"

# a read hint brings an evicted chunk back into the cache
wait_for 5 under $((1 << 20)) "$(extent_of c0)" || fail "c0 was not evicted"
h0=$(stat_value marud_hints_total)
printf 'read r1 kv/c0 kv/c1\n' >"$MNT/.maru/hints"
wait_for 5 at_least $((16 << 20)) "$(extent_of c0),$(extent_of c1)" ||
	fail "c0 and c1 not resident after the hint"
[ "$(stat_value marud_hints_total)" -gt "$h0" ] || fail "marud counted no hint"
printf 'promote r1\nread_end r1\n' >"$MNT/.maru/hints"

# user.maru.hint on a directory: all of its files (more than the budget
# holds, so only what fits is brought in, in order)
setfattr -n user.maru.hint -v read "$MNT/kv"
setfattr -n user.maru.hint -v read_end "$MNT/kv"

# nothing is lost when the tier drops pages: every byte reads back
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
	cmp -s "$T/src$i" "$MNT/kv/c$i" || fail "kv/c$i differs after the tier dropped pages"
done
# reads fault pages in between sweeps; the sweep brings it back under
wait_for 2 under $((BUDGET + (4 << 20) + 1)) || fail "budget exceeded"

# lookup hints: the first lookup of a name, once per window
mkdir "$MNT/kv2"
head -c 4096 /dev/urandom >"$MNT/kv2/a"
head -c 4096 /dev/urandom >"$MNT/kv2/b"
l0=$(stat_value marufs_lookup_hints_total)
b0=$(stat_value marufs_lookup_hint_batches_total)
stat "$MNT/kv2/a" "$MNT/kv2/b" >/dev/null
stat "$MNT/kv2/a" >/dev/null	# again within the window: no new hint
sleep 0.2
assert_eq "$(stat_value marufs_lookup_hints_total)" "$((l0 + 2))" "two names, two lookup hints"
# one batch for the directory; two when the 3 ms it gathers for ran out
# between the two lookups (a preempted stat on a loaded 2-core machine)
bn=$(stat_value marufs_lookup_hint_batches_total)
[ "$bn" -ge "$((b0 + 1))" ] && [ "$bn" -le "$((b0 + 2))" ] ||
	fail "batches for two lookups in one directory: $((bn - b0))"
# once a was loaded (opened and released), its next lookup is a new
# request's: it hints again inside the window; b, never loaded, does not
cat "$MNT/kv2/a" >/dev/null
lookup_again() {
	stat "$MNT/kv2/a" "$MNT/kv2/b" >/dev/null
	[ "$(stat_value marufs_lookup_hints_total)" -ge "$((l0 + 3))" ]
}
wait_for 2 lookup_again || fail "a loaded name did not hint at its next lookup"
sleep 0.2
assert_eq "$(stat_value marufs_lookup_hints_total)" "$((l0 + 3))" "a hints again, b does not"
# only a regular file's lookup hints: not a directory's (every path walk
# goes through it), nor a symlink's or a FIFO's (no bytes to bring in)
mkdir "$MNT/kv3"
ln -s a "$MNT/kv3/sym"
mkfifo "$MNT/kv3/fifo"
stat "$MNT/kv3" >/dev/null
stat "$MNT/kv3/sym" "$MNT/kv3/fifo" >/dev/null
sleep 0.2
assert_eq "$(stat_value marufs_lookup_hints_total)" "$((l0 + 3))" "a lookup of no regular file hinted"

# the memory generation changes: new generation, EIO, empty directory
g0=$(stat_value marud_generation)
c0=$(stat_value marufs_generation_changes_total)
exec 3<"$MNT/kv/c2"
setfattr -n user.maru.tier.gen -v 0123456789abcdef "$POOL"
wait_for 10 grep -q "memory reset" "$T/marud.log" || fail "marud did not restart fresh"
wait_for 10 generation_moved "$g0" || fail "no new generation"
after_memory_reset "the tier's generation changed" "$c0"

marufs_umount "$MX"
marufs_umount
marud_stop
