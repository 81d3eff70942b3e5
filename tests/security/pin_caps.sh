#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# pin_caps: pinned bytes are capped per pool (pin-max-bytes). A pin that
# would pass the cap fails with ENOSPC -- through setxattr, through a `pin`
# line of .maru/hints (the write() fails) and through libmaru's
# maru_pin_set -- and never evicts or shortens another pin: the pin already
# held keeps its file through pool pressure. Renewing a pinned version
# needs no new room; unpinning makes room. pin-max-bytes 0 refuses every pin.
. "$(dirname "$0")/../integration/lib/common.sh"
skip_unless_fuse
skip_unless_cmd setfattr
[ -x "$TOOLS/maru_pin" ] || fail "no maru_pin tool in $TOOLS"

pin() { setfattr -n user.maru.pin -v "$1" "$2"; }
left() { getfattr --absolute-names --only-values -n user.maru.pin "$1"; }
gone() { [ ! -e "$1" ]; }

marud_start --size 16M -D pin-max-bytes=3M
marufs_mount
head -c $((2 << 20)) /dev/urandom >"$T/a"
head -c $((2 << 20)) /dev/urandom >"$T/b"
cp "$T/a" "$MNT/a"
cp "$T/b" "$MNT/b"

pin 60 "$MNT/a" || fail "the first 2 MiB pin fits under 3 MiB"
out=$(setfattr -n user.maru.pin -v 60 "$MNT/b" 2>&1) && fail "a pin over the cap was granted"
[[ "$out" == *"No space left on device"* ]] || fail "over the cap, not ENOSPC: $out"
assert_eq "$(left "$MNT/b")" 0 "the refused pin is not there"
[ "$(left "$MNT/a")" -ge 59 ] || fail "the refusal touched the other pin: $(left "$MNT/a")"
[ "$(stat_value marud_pin_refused_total)" -ge 1 ] || fail "the refusal was not counted"

# the same through .maru/hints and through libmaru
printf 'pin 60 b\n' >"$T/line"
out=$(cat "$T/line" 2>&1 >"$MNT/.maru/hints") && fail "a pin line over the cap was taken"
[[ "$out" == *"No space left on device"* ]] || fail "hints pin line over the cap, not ENOSPC: $out"
assert_eq "$("$TOOLS/maru_pin" "$MARU_URI" b 60)" "error ENOSPC" "maru_pin_set over the cap"
pin 30 "$MNT/a" || fail "renewing a pinned version needs no room"

# pressure: the pin held keeps its file, the refused one does not
for i in $(seq 1 40); do
	head -c $((1 << 20)) /dev/zero >"$MNT/lru$i" || fail "pressure write $i"
done
cmp "$T/a" "$MNT/a" || fail "the pinned file was evicted"
wait_for 5 gone "$MNT/b" || fail "the file whose pin was refused was kept anyway"

# unpinning makes room
cp "$T/b" "$MNT/b"
pin 0 "$MNT/a" || fail "unpin a"
pin 60 "$MNT/b" || fail "a pin after the unpin made room"
wait_accounting_ok
marufs_umount
marud_stop

marud_start --size 16M -D pin-max-bytes=0
marufs_mount
M=$LAST_MNT	# the second mount of this case
echo x >"$M/x"
out=$(setfattr -n user.maru.pin -v 5 "$M/x" 2>&1) && fail "pin-max-bytes 0 granted a pin"
[[ "$out" == *"No space left on device"* ]] || fail "pin-max-bytes 0: $out"
marufs_umount "$M"
marud_stop
