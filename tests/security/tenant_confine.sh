#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tenant_confine: a scoped mount sees its root as / and cannot reach outside
# it: not by "..", absolute or relative symlinks, rename, link, hints, nor
# .maru/events; the administrator's mount sees both tenants' trees.
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/lib/tenants.sh"
skip_unless_fuse

keys_write "alice /t/alice rw" "bob /t/bob rw"
marud_start --key-file "$T/keys"
marufs_mount -o "key_file=$(key_client admin),data=tcp"
ADM=$MNT
marufs_mount -o "key_file=$(key_client alice),data=tcp"
A=$LAST_MNT
marufs_mount -o "key_file=$(key_client bob),data=tcp"
B=$LAST_MNT

# marud made the roots; the administrator sees them where the key file says
[ -d "$ADM/t/alice" ] && [ -d "$ADM/t/bob" ] || fail "tenant roots not made by marud"
echo secret-of-bob >"$B/b.txt"
echo from-alice >"$A/a.txt"
assert_eq "$(cat "$ADM/t/bob/b.txt")" secret-of-bob "admin reads bob's file under /t/bob"
assert_eq "$(cat "$ADM/t/alice/a.txt")" from-alice "admin reads alice's file"
# a scoped mount's root is its tenant root
assert_eq "$(ls "$A" | grep -v '^\.maru$' | tr '\n' ' ')" "a.txt " "alice's / lists her root only"
[ ! -e "$A/t" ] || fail "alice sees the namespace's /t"
[ ! -e "$A/b.txt" ] || fail "alice sees bob's file"

# ".." at the root stays at the root (the kernel's view of the mount)
assert_eq "$(cd "$A/.." && pwd)" "$(dirname "$A")" ".. leaves the mount, not into marud's namespace"
mkdir "$A/d"
assert_eq "$(cat "$A/d/../a.txt")" from-alice "d/.. is alice's root"
assert_fails cat "$A/../t/bob/b.txt"

# symlinks: absolute and relative targets are resolved on the client, in
# the mount: they never name marud's namespace outside the root
ln -s /t/bob/b.txt "$A/abs"
ln -s ../../t/bob/b.txt "$A/d/rel"
assert_fails cat "$A/abs"
assert_fails cat "$A/d/rel"
[ "$(readlink "$ADM/t/alice/abs")" = /t/bob/b.txt ] || fail "symlink target changed"

# rename and link into another tenant cannot be named: bob's tree is not there
assert_fails mv "$A/a.txt" "$A/../mnt3/stolen"
assert_fails ln "$B/b.txt" "$A/b-link"

# events: alice's stream never tells bob's changes
[ -e "$A/.maru/events" ] || fail "no .maru/events on the scoped mount"
if true; then
	timeout 3 cat "$A/.maru/events" >"$T/alice-events" 2>/dev/null &
	EV=$!
	sleep 0.5
	echo bob-again >"$B/b2.txt"
	echo alice-again >"$A/a2.txt"
	wait "$EV" || true
	grep -q 'a2.txt' "$T/alice-events" || fail "alice's own change not in her events: $(cat "$T/alice-events")"
	! grep -q 'b2.txt\|/t/' "$T/alice-events" || fail "bob's change or a real path in alice's events: $(cat "$T/alice-events")"
fi

# hints: paths are resolved in the mount and may not climb out of it
[ -e "$A/.maru/hints" ] || fail "no .maru/hints on the scoped mount"
if true; then
	assert_fails sh -c "echo 'read r1 ../t/bob/b.txt' >'$A/.maru/hints'"
	assert_fails sh -c "echo 'read r1 /t/bob/b.txt' >'$A/.maru/hints'"
	assert_fails sh -c "echo 'read r1 t/bob/b.txt' >'$A/.maru/hints'"
fi

# the protocol level: a client that lies about ids (tools/tenant_probe)
"$TOOLS/tenant_probe" "$MARU_URI" "$(key_client admin)" "$(key_client alice)" confine \
	t/bob b.txt >"$T/probe.out" 2>&1 || fail "tenant_probe: $(cat "$T/probe.out")"
cat "$T/probe.out"

# events held back from a stream are acknowledged for it: no change waited
# for a stream that would never see it
! grep -q "did not acknowledge" "$T/marud.log" ||
	fail "a change waited for a tenant's stream: $(grep "did not acknowledge" "$T/marud.log")"

marufs_umount "$B"
marufs_umount "$A"
marufs_umount "$ADM"
marud_stop
