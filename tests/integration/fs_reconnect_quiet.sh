#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_reconnect_quiet: after a partition longer than --grace, the mount gets
# a new session, and whatever it still asks of its old session's versions
# (a READ under the old lease, an ABANDON of the old pending version) is
# refused as before, but marud does not warn about it: it is what a client
# does after a reconnect, not an attack (logged at debug level only, which
# -v shows). A request of that kind on a session that was never reclaimed
# still warns (fault_security covers that).
#
# Real: marud, marufs, the refusals. Emulated: the partition, by
# lib/cutproxy.py between the mount and marud's unix socket (it resets
# every connection and refuses new ones while cut).
. "$(dirname "$0")/lib/common.sh"

skip_unless_fuse
marud_start --grace 1 -v
python3 "$SRCDIR/tests/integration/lib/cutproxy.py" "$T/proxy.sock" "$MARUD_SOCK" \
	>"$T/proxy.out" 2>&1 &
PROXY=$!
on_exit "kill $PROXY"
wait_up "$PROXY" 10 test -S "$T/proxy.sock" || fail "proxy did not start"

marufs_mount -u "maru+unix://$T/proxy.sock" -o data=tcp
head -c 100000 /dev/urandom >"$MNT/a.bin" || fail "write a.bin"
exec 7<"$MNT/a.bin"
exec 8>"$MNT/pending.bin"
echo part >&8
from=$(wc -l <"$T/marud.log")

kill -USR1 "$PROXY"	# cut, for longer than the grace: the session ends
wait_for 10 grep -q "grace period over, ending it" "$T/marud.log" ||
	fail "marud did not end the cut mount's session (-v shows it)"
kill -USR2 "$PROXY"
wait_for 10 grep -q "^up" "$T/proxy.out" || fail "the proxy did not come back"
# what the client still does with its old handles, as its first calls after
# the heal (they reconnect it); their errors are the client's business
head -c 10 <&7 >/dev/null 2>&1 || true
exec 7<&-
exec 8>&-	# closes the old pending version: its ABANDON, if it is sent
wait_for 10 ls "$MNT" >/dev/null || fail "the mount did not come back after the cut"
sleep 0.5

tail -n +"$from" "$T/marud.log" >"$T/after.log"
if grep -q "refused: not this session's to do that with" "$T/after.log"; then
	fail "marud warned about a reconnected client's old versions: $(grep refused "$T/after.log")"
fi
n=$(grep -c "refused: of the session this client had before it reconnected" "$T/after.log" || true)
log "$n request(s) of the old session refused quietly (debug level)"
marufs_umount
marud_stop
