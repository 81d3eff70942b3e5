#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# pin_tenant: pins of scoped sessions (tenants, marud.conf(5)). A tenant's
# pinned bytes are capped by pin-tenant-max-bytes (default: half its quota;
# no cap of its own without a quota) under the pool's cap: over it, ENOSPC
# while the pool would still take the pin and the tenant's first pins stay;
# one tenant's cap does not hold another tenant or the administrator; a ro
# tenant reads a pin but cannot set one (EROFS); a tenant cannot pin a
# version outside its root by a forged id (ENOENT, libmaru's maru_pin_set).
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/lib/tenants.sh"
skip_unless_fuse
skip_unless_cmd setfattr
[ -x "$TOOLS/maru_pin" ] || fail "no maru_pin tool in $TOOLS"

pin() { setfattr -n user.maru.pin -v "$1" "$2"; }
left() { getfattr --absolute-names --only-values -n user.maru.pin "$1"; }
two_mib() { head -c $((2 << 20)) /dev/urandom >"$1" || fail "write $1"; }

keys_write "alice /t/alice rw 8M" "bob /t/bob rw" "carol /t/carol ro"
marud_start --size 64M --key-file "$T/keys"
marufs_mount -o "key_file=$(key_client admin),data=tcp"
ADM=$MNT
marufs_mount -o "key_file=$(key_client alice),data=tcp"
A=$LAST_MNT
marufs_mount -o "key_file=$(key_client bob),data=tcp"
B=$LAST_MNT
marufs_mount -o "key_file=$(key_client carol /t/carol ro),data=tcp"
C=$LAST_MNT

# alice: quota 8M, so 4M of pins
for f in a1 a2 a3; do two_mib "$A/$f"; done
pin 60 "$A/a1" || fail "alice's first pin"
pin 60 "$A/a2" || fail "alice's second pin (4 MiB: at her cap)"
out=$(setfattr -n user.maru.pin -v 60 "$A/a3" 2>&1) && fail "alice pinned past her cap"
[[ "$out" == *"No space left on device"* ]] || fail "alice over her cap, not ENOSPC: $out"
[ "$(left "$A/a1")" -ge 59 ] && [ "$(left "$A/a2")" -ge 59 ] ||
	fail "the refusal touched alice's other pins"
assert_eq "$(left "$A/a3")" 0 "a3 is not pinned"
# the administrator can pin it (the pool cap, 32M, has room), and bob, with
# no quota, is held by the pool's cap only
pin 60 "$ADM/t/alice/a3" || fail "the administrator's pin of a3"
for f in b1 b2 b3; do
	two_mib "$B/$f"
	pin 60 "$B/$f" || fail "bob's pin of $f (no quota, no cap of his own)"
done
pin 0 "$ADM/t/alice/a3" || fail "unpin a3"
pin 0 "$A/a1" || fail "alice unpins a1"
pin 60 "$A/a3" || fail "alice pins a3 after freeing room under her cap"

# carol is read-only: she reads pins, she cannot set one
two_mib "$ADM/t/carol/c1"
pin 60 "$ADM/t/carol/c1" || fail "the administrator pins carol's file"
[ "$(left "$C/c1")" -ge 59 ] || fail "carol cannot read the pin: $(left "$C/c1")"
out=$(setfattr -n user.maru.pin -v 0 "$C/c1" 2>&1) && fail "a ro tenant unpinned"
[[ "$out" == *"Read-only file system"* ]] || fail "ro tenant unpin: not EROFS: $out"

# a forged id outside alice's root, through libmaru
ino=$(getfattr --absolute-names --only-values -n user.maru.version "$ADM/t/bob/b1")
r=$(MARU_DATA=tcp MARU_KEY_FILE=$T/alice.key "$TOOLS/maru_pin" "$MARU_URI" "#$ino" 60) || true
assert_eq "$r" "error ENOENT" "alice pinning bob's version by its id"
r=$(MARU_DATA=tcp MARU_KEY_FILE=$T/alice.key "$TOOLS/maru_pin" "$MARU_URI" a2) || fail "alice's libmaru read: $r"
[ "$r" -ge 58 ] || fail "alice reads her pin through libmaru: $r"

for m in "$C" "$B" "$A"; do marufs_umount "$m"; done
marufs_umount "$ADM"
marud_stop
