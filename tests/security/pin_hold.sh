#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# pin_hold: a TTL pin (user.maru.pin, marufs-xattr(7)) keeps a file's version
# from eviction under pool pressure until its deadline, then the file is
# evictable again, first in line; reading the attribute gives the seconds
# left (0 unpinned), 0 unpins, a longer pin than pin-max-seconds is clamped,
# a new version published under the name starts unpinned (the pin belongs
# to the version), and the pool's stats count pinned bytes and pins.
. "$(dirname "$0")/../integration/lib/common.sh"
skip_unless_fuse
skip_unless_cmd setfattr

pin() { setfattr -n user.maru.pin -v "$1" "$2"; }
left() { getfattr --absolute-names --only-values -n user.maru.pin "$1"; }
# fill N: write N MiB of new files into the pool (pressure)
fill()
{
	local i
	for i in $(seq 1 "$1"); do
		head -c $((1 << 20)) /dev/zero >"$MNT/lru$FILLS.$i" || fail "pressure write $i"
	done
	FILLS=$((FILLS + 1))
}
FILLS=0

marud_start --size 16M -D pin-max-seconds=30
marufs_mount
head -c $((2 << 20)) /dev/urandom >"$T/p"
cp "$T/p" "$MNT/p"
head -c $((128 << 10)) /dev/zero >"$MNT/r"	# over 64 KiB: no kept lease holds it

assert_eq "$(left "$MNT/p")" 0 "an unpinned file reads 0"
pin 4 "$MNT/p" || fail "pin 4"
l=$(left "$MNT/p")
[ "$l" -ge 3 ] && [ "$l" -le 4 ] || fail "seconds left after pin 4: $l"
assert_eq "$(stat_value marud_pins)" 1 "one pin in stats"
[ "$(stat_value marud_pool_pinned_bytes)" -ge $((2 << 20)) ] ||
	fail "pinned bytes in stats: $(stat_value marud_pool_pinned_bytes)"

# pressure: 3x the pool; the pinned file stays, older unpinned ones go
fill 40
cmp "$T/p" "$MNT/p" || fail "a pinned file was evicted or changed under pressure"
gone() { [ ! -e "$1" ]; }
wait_for 5 gone "$MNT/r" || fail "nothing unpinned was evicted: $(ls "$MNT" | tr '\n' ' ')"
[ "$(stat_value marud_evictions_total)" -gt 0 ] || fail "no evictions under pressure"

# expiry: lazily, at the next eviction, and the version is first in line
sleep 4.2
assert_eq "$(left "$MNT/p")" 0 "seconds left after the deadline"
fill 2
wait_for 5 gone "$MNT/p" || fail "an expired pin still held its file under pressure"
assert_eq "$(stat_value marud_pins)" 0 "no pin left in stats"
[ "$(stat_value marud_pin_expired_total)" -ge 1 ] || fail "the expiry was not counted"

# 0 unpins; a request over pin-max-seconds is clamped
cp "$T/p" "$MNT/q"
pin 1000 "$MNT/q" || fail "pin 1000"
l=$(left "$MNT/q")
[ "$l" -ge 29 ] && [ "$l" -le 30 ] || fail "pin 1000 not clamped to pin-max-seconds 30: $l"
pin 0 "$MNT/q" || fail "pin 0"
assert_eq "$(left "$MNT/q")" 0 "0 unpins"
assert_eq "$(stat_value marud_pins)" 0 "unpinned: no pin in stats"
pin 20 "$MNT/q" || fail "pin again"
setfattr -x user.maru.pin "$MNT/q" || fail "removexattr unpins"
assert_eq "$(left "$MNT/q")" 0 "removed: unpinned"
assert_fails setfattr -x user.maru.pin "$MNT/q"
assert_fails pin abc "$MNT/q"
assert_fails pin -1 "$MNT/q"
assert_fails pin 5 "$MNT"

# the pin belongs to the version: a rename keeps it, a new version under
# the name starts unpinned and the old version's pin is gone with it
pin 20 "$MNT/q" || fail "pin q"
mv "$MNT/q" "$MNT/q2" || fail "rename"
[ "$(left "$MNT/q2")" -ge 19 ] || fail "a renamed version lost its pin"
echo new >"$MNT/q2"
assert_eq "$(left "$MNT/q2")" 0 "a new version under the name is not pinned"
assert_eq "$(stat_value marud_pins)" 0 "the replaced version's pin is gone"
wait_accounting_ok
marufs_umount
marud_stop
