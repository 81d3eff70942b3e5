#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_grace: a client's connections dropped and restored, within and
# beyond the grace period (marufs-design(7) §2, §7), through a proxy the case cuts
# (lib/cutproxy.py resets every connection and refuses new ones).
#  within: transparent: the client reconnects, reclaims its session by
#    token, and its lease and half-written pending version work on (calls
#    made during the outage wait it out); once on each data path, and on a
#    marufs mount whose open files survive the cut.
#  beyond: marud ends the session after the grace period (lease released,
#    pending abandoned) and another client reuses the memory; the cut-off
#    client must neither read the reused bytes through its old lease nor
#    write into them through its old pending version; reconnected, its old
#    handles fail with EIO, the pending version was never published, and
#    new chunks work. The other client's chunks stay whole.
# Every run ends with the books balanced and nothing pending or orphaned.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

GRACE=2
G=$T/g
mkdir -p "$G"
marud_start --size 32M --grace $GRACE
python3 "$SRCDIR/tests/integration/lib/cutproxy.py" "$T/proxy.sock" "$MARUD_SOCK" \
	>"$T/proxy.log" 2>&1 &
PROXY=$!
on_exit "kill $PROXY"
wait_up "$PROXY" 10 test -S "$T/proxy.sock" || fail "proxy did not start"
PURI=maru+unix://$T/proxy.sock
net_cut() { kill -USR1 "$PROXY"; }
net_restore() { kill -USR2 "$PROXY"; }

run_tool()
{
	local dp=$1 mode=$2
	rm -f "$G"/*
	MARU_DATA=$dp "$TOOLS/fault_grace" "$PURI" "$mode" "$G" >"$T/grace.out" 2>&1 &
	TOOL=$!
	wait_up "$TOOL" 20 test -e "$G/ready" || fail "fault_grace: $(cat "$T/grace.out")"
}

tool_ok()
{
	bg_wait "$TOOL" 30
	[ "$EXIT_RC" = 0 ] || fail "fault_grace ($*): $(cat "$T/grace.out")"
	grep -q "$2: ok" "$T/grace.out" || fail "fault_grace ($*) said no ok: $(cat "$T/grace.out")"
}

for dp in shm tcp; do
	# ---- within the grace period ----
	run_tool $dp within
	net_cut
	touch "$G/go"
	sleep 1
	net_restore
	tool_ok $dp within
	wait_settled 10
	log "data=$dp: drop of 1 s within a ${GRACE} s grace: transparent"

	# ---- beyond it ----
	run_tool $dp beyond
	net_cut
	# the session ends: its lease released, its pending version abandoned
	[ "$(mstat marud_leases)" -gt 0 ] || fail "no lease held before the grace period ended"
	wait_for $((GRACE + 8)) eval '[ "$(mstat marud_leases)" = 0 ]' ||
		fail "lease not released after the grace period"
	wait_settled 5
	# another client takes the memory the lease and the pending version held
	for i in 1 2 3 4 5 6 7; do
		"$FT" put "$MARU_URI" "fill$i.bin" $((4 << 20)) $((100 + i)) >/dev/null ||
			fail "fill$i.bin"
	done
	touch "$G/go"
	wait_up "$TOOL" 30 test -e "$G/tried" || fail "fault_grace (beyond): $(cat "$T/grace.out")"
	for i in 1 2 3 4 5 6 7; do
		v=$(verdict "$FT" verify "$MARU_URI" "fill$i.bin")
		case "$v" in
		"ok $((100 + i))" | missing) ;;
		*) fail "fill$i.bin after the cut-off client's attempts: $v" ;;
		esac
	done
	net_restore
	touch "$G/go2"
	tool_ok $dp beyond
	wait_settled 10
	log "data=$dp: drop beyond the grace period: old handles EIO, nothing stale"
	marud_stop
	marud_start --size 32M --grace $GRACE
done

# ---- a marufs mount through the proxy: open files survive a short cut ----
marufs_mount -u "$PURI"
M=$LAST_MNT
marufs_mount
"$FT" fwrite "$M/r.bin" $((4 << 20)) 21 >/dev/null || fail "r.bin"
rm -f "$T/ready" "$T/go" "$T/wready"
"$FT" fhold "$M/r.bin" "$T/ready" "$T/go" >"$T/hold.out" 2>&1 &
reader=$!
"$FT" fwrite "$M/w.bin" $((4 << 20)) 22 $((2 << 20)) "$T/wready" >"$T/w.out" 2>&1 &
writer=$!
wait_up "$reader" 20 test -e "$T/ready" || fail "reader: $(cat "$T/hold.out")"
wait_up "$writer" 20 test -e "$T/wready" || fail "writer: $(cat "$T/w.out")"
net_cut
sleep 1
net_restore
touch "$T/go"
bg_wait "$reader" 20
assert_eq "$(tail -n 1 "$T/hold.out" | cut -d' ' -f2-)" "ok 21" "lease read after the cut"
kill "$writer"; wait "$writer" 2>/dev/null || true
"$FT" fwrite "$M/w2.bin" $((4 << 20)) 23 >/dev/null || fail "write after the cut"
expect_verdict "ok 23" "other mount sees the write made after the cut" "$FT" fverify "$MNT2/w2.bin"
marufs_umount "$MNT2"
marufs_umount "$M"
wait_settled 10
marud_stop
