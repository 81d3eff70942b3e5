#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tenant_rotate: SIGHUP re-reads the key file under load. A removed key's
# connections are closed within a second (with a log line) and its mount
# can no longer reach marud; the other tenant's writes go on without an
# error; a key added works at once; a bad file keeps the old keys and says
# why; marud's pid and the pool generation stay.
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/lib/tenants.sh"
skip_unless_fuse

keys_write "alice /alice rw" "bob /bob rw"
marud_start --key-file "$T/keys"
PID0=$MARUD_PID
ALICE_KEY=$(key_client alice /alice rw)
BOB_KEY=$(key_client bob /bob rw)
marufs_mount -o "key_file=$(key_client admin),data=tcp"
ADM=$LAST_MNT
marufs_mount -o "key_file=$ALICE_KEY,data=tcp"
A=$LAST_MNT
marufs_mount -o "key_file=$BOB_KEY,data=tcp"
B=$LAST_MNT
echo before >"$B/b"

# alice writes and reads back without pause the whole time
(
	i=0
	while [ ! -e "$T/stop" ]; do
		echo "chunk $i" >"$A/c$((i % 50))" || { echo "write $i failed" >>"$T/load.err"; }
		[ "$(cat "$A/c$((i % 50))")" = "chunk $i" ] || echo "read $i wrong" >>"$T/load.err"
		i=$((i + 1))
	done
	echo "$i" >"$T/load.count"
) &
LOAD=$!
sleep 1

# bob removed, carol added
keys_write "alice /alice rw" "carol /carol rw"
t0=$(date +%s.%N)
kill -HUP "$MARUD_PID"
wait_for 1 grep -q "key 'bob' was removed from the key file: closing" "$T/marud.log" ||
	fail "no close of bob's connections within 1 s of SIGHUP"
t1=$(date +%s.%N)
log "bob's connections closed $(echo "$t1 - $t0" | bc) s after SIGHUP"
grep -q "key file $T/keys: 1 key removed or changed, [1-9][0-9]* connections\? closed" "$T/marud.log" ||
	fail "no summary line of the removal"
# bob's mount can no longer reach its tree: its reconnect is refused
assert_fails timeout 10 cat "$B/b"
wait_for 10 grep -q "AUTH names key 'bob', which the key file does not hold" "$T/marud.log" ||
	fail "bob's reconnect was not refused by name"
# carol mounts at once
marufs_mount -o "key_file=$(key_client carol /carol rw),data=tcp"
C=$LAST_MNT
echo hello >"$C/x"
assert_eq "$(cat "$C/x")" hello "carol writes right after the reload"

# a bad key file keeps the keys that run
printf 'marud-keys 1\nkey alice root=/alice rights=rx secret=zzzzzzzzzzzzzzzzzzzzz\n' >"$T/keys"
chmod 600 "$T/keys"
kill -HUP "$MARUD_PID"
wait_for 2 grep -q "key file reload failed, keeping the old keys: $T/keys:2: rights must be rw or ro" \
	"$T/marud.log" || fail "bad key file not refused with file:line"
echo still >"$C/y"
assert_eq "$(cat "$C/y")" still "carol still works after a bad file"

touch "$T/stop"
wait "$LOAD"
[ ! -s "$T/load.err" ] || fail "alice's load saw errors: $(head "$T/load.err")"
log "alice: $(cat "$T/load.count") write+read rounds, no error, across two reloads"
assert_eq "$(cat "$ADM/carol/y")" still "the administrator's mount outlived the tenant reloads"

# rotating the administrator's secret closes the administrator's connections
ADMIN_SECRET=rotated-admin-secret-0123456789
keys_write "alice /alice rw" "carol /carol rw"
kill -HUP "$MARUD_PID"
wait_for 1 grep -q "the administrator key changed: closing" "$T/marud.log" ||
	fail "the old administrator key's connections not closed within 1 s"
assert_fails timeout 10 cat "$ADM/carol/y"
marufs_mount -o "key_file=$(key_client admin),data=tcp"
assert_eq "$(cat "$LAST_MNT/carol/y")" still "the new administrator key mounts at once"
marufs_umount "$LAST_MNT"
marufs_kill "$ADM"
assert_eq "$MARUD_PID" "$PID0" "marud was not restarted"
! grep -q "restart\|serving, generation" <(grep -v "^===" "$T/marud.log" | tail -n +8) ||
	fail "something restarted: $(grep "restart\|serving" "$T/marud.log")"

marufs_umount "$C"
fusermount3 -u "$B" 2>/dev/null || true
marufs_kill "$B"
marufs_umount "$A"
marud_stop
