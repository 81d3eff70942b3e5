#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# pin_restart: TTL pins survive a marud restart with the journal (JR_PIN),
# after a clean stop and after SIGKILL, with their wall-clock deadline: the
# seconds left are not extended by the restart, a pin whose deadline passed
# while marud was down comes back unpinned, and the pins held keep their
# files through pool pressure after the restart. Pins are set three ways:
# user.maru.pin, a `pin` line of .maru/hints, and libmaru's maru_pin_set
# (read back with maru_pin_get).
. "$(dirname "$0")/../integration/lib/common.sh"
skip_unless_fuse
skip_unless_cmd setfattr
[ -x "$TOOLS/maru_pin" ] || fail "no maru_pin tool in $TOOLS"

pin() { setfattr -n user.maru.pin -v "$1" "$2"; }
left() { getfattr --absolute-names --only-values -n user.maru.pin "$1" 2>/dev/null; }
gone() { [ ! -e "$1" ]; }
answers() { left "$1" >/dev/null; }

marud_start --size 16M
marufs_mount
for f in a b c d; do
	head -c $((1 << 20)) /dev/urandom >"$T/$f"
	cp "$T/$f" "$MNT/$f"
done
pin 60 "$MNT/a" || fail "pin a"
pin 2 "$MNT/b" || fail "pin b"
printf 'pin 60 c\n' >"$MNT/.maru/hints" || fail "pin line in .maru/hints"
[ "$(left "$MNT/c")" -ge 59 ] || fail "the hints pin line did not pin c: $(left "$MNT/c")"
assert_fails sh -c "printf 'pin x c\n' >'$MNT/.maru/hints'"
assert_fails sh -c "printf 'pin 5\n' >'$MNT/.maru/hints'"
g=$("$TOOLS/maru_pin" "$MARU_URI" d 60) || fail "maru_pin_set: $g"
[ "$g" -ge 59 ] || fail "maru_pin_set granted $g"
g=$("$TOOLS/maru_pin" "$MARU_URI" d) || fail "maru_pin_get: $g"
[ "$g" -ge 59 ] && [ "$g" -le 60 ] || fail "maru_pin_get read $g"
assert_eq "$("$TOOLS/maru_pin" "$MARU_URI" a)" "$(left "$MNT/a")" "libmaru and the xattr agree"
assert_eq "$(stat_value marud_pins)" 4 "four pins"

sleep 2.2		# b's deadline passes; restart with the others held
marud_restart
grep -q "did not apply" "$T/marud.log" && fail "a journal record did not apply: $(grep 'did not apply' "$T/marud.log")"
wait_for 10 answers "$MNT/a" || fail "the mount did not come back after the restart"
for f in a c d; do
	l=$(left "$MNT/$f")
	[ "$l" -ge 50 ] && [ "$l" -le 58 ] ||
		fail "$f: $l seconds left after the restart (wall-clock deadline: 58 at most)"
done
assert_eq "$(left "$MNT/b")" 0 "a pin that ran out before the restart"
assert_eq "$(stat_value marud_pins)" 3 "three pins after the restart"

for i in $(seq 1 40); do
	head -c $((1 << 20)) /dev/zero >"$MNT/lru$i" || fail "pressure write $i"
done
for f in a c d; do
	cmp "$T/$f" "$MNT/$f" || fail "pinned $f was evicted after the restart"
done
wait_for 5 gone "$MNT/b" || fail "b (pin ran out) was kept"

# SIGKILL: the records were durable when the pins returned
pin 0 "$MNT/d" || fail "unpin d"
marud_restart kill
wait_for 10 answers "$MNT/a" || fail "the mount did not come back after SIGKILL"
[ "$(left "$MNT/a")" -ge 40 ] || fail "a lost its pin across SIGKILL"
assert_eq "$(left "$MNT/d")" 0 "an unpin survives SIGKILL too"
assert_eq "$(stat_value marud_pins)" 2 "two pins after SIGKILL"
wait_accounting_ok
marufs_umount
marud_stop
