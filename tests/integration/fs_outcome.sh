#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_outcome: what a caller of a marufs mount is told when the network to
# marud fails, and when. Mount A reaches marud through a proxy the case
# cuts (lib/cutproxy.py: every connection reset, new ones refused; real
# sockets, an emulated network); mount B reaches marud directly and is the
# witness of what became visible. The callers are real processes
# (lib/outcome.py).
#  reply lost: marud published (a fail point holds its reply 1.5 s), the
#    link is cut and restored meanwhile: close returns 0 and the file is
#    whole on B (libmaru resends the PUBLISH, answered from marud's reply
#    cache).
#  never applied: the link is cut before close and stays cut: close returns
#    ETIMEDOUT within timeout_ms and nothing is visible on B.
#  failed write: data=tcp, the link cut in the middle of a 2 MiB file: the
#    next write fails (ETIMEDOUT), close returns it too, nothing partial is
#    visible on B, ever; A writes again once the link is back.
#  bounds: with the link cut, nine calls at once of each kind (stat,
#    create, mkdir, unlink, rename, readdir) each return within timeout_ms;
#    a process blocked in one dies at once of SIGKILL (FUSE INTERRUPT);
#    a forked child's close of a write descriptor returns at once.
#  injected error, restart: marud fails a WRITE mid-payload (a fail point),
#    or restarts while a file is half written: the close fails with EIO, and
#    so do the writes after a restart (an injected refusal of a frame
#    written behind may be told by the close alone), nothing is visible on
#    the witness.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"
skip_unless_failpoints

TMO=3000
OUT=$SRCDIR/tests/integration/lib/outcome.py
MARU_FAILPOINT="marud.publish.after=1*sleep:1500" marud_start --size 64M -v
python3 "$SRCDIR/tests/integration/lib/cutproxy.py" "$T/proxy.sock" "$MARUD_SOCK" \
	>"$T/proxy.log" 2>&1 &
PROXY=$!
on_exit "kill $PROXY"
wait_up "$PROXY" 10 test -S "$T/proxy.sock" || fail "proxy did not start"
net_cut()
{
	kill -USR1 "$PROXY"
	wait_for 5 eval '[ "$(tail -n 1 "$T/proxy.log")" = cut ]' || fail "proxy not cut"
}
net_restore()
{
	kill -USR2 "$PROXY"
	wait_for 5 eval '[ "$(tail -n 1 "$T/proxy.log")" = up ]' || fail "proxy not up"
}
# The link back, and the mount using it: after an outage of a whole
# timeout_ms, calls fail at once until a try of marud 250 ms after the last.
heal()
{
	net_restore
	wait_for 10 eval 'stat -f "$A" >/dev/null 2>&1 && touch "$A/ping.$1" 2>/dev/null' ||
		fail "the mount did not come back ($1)"
}
marufs_mount -u "maru+unix://$T/proxy.sock" -o timeout_ms=$TMO -o data=tcp
A=$LAST_MNT
marufs_mount
B=$LAST_MNT

# field N of the line of $1 starting with $2
field() { awk -v k="$2" -v n="$3" '$1 == k { print $n }' "$1" | tail -n 1; }

# ---- reply lost after marud published ----
rm -f "$T/r" "$T/g"
python3 "$OUT" write "$A/lost.bin" $((1 << 20)) 11 "$T/r" "$T/g" end >"$T/w1.out" 2>&1 &
W=$!
wait_up "$W" 20 test -e "$T/r" || fail "writer: $(cat "$T/w1.out")"
touch "$T/g"
# marud published (the name shows on B) and holds its reply 1.5 s
wait_for 5 test -e "$B/lost.bin" || fail "lost.bin never showed on B: $(cat "$T/w1.out")"
net_cut
sleep 0.3
net_restore
bg_wait "$W" 20
assert_eq "$(field "$T/w1.out" close 2)" 0 "close of a file whose PUBLISH reply was lost: $(cat "$T/w1.out")"
assert_eq "$(python3 "$OUT" check "$B/lost.bin" $((1 << 20)) 11)" ok "lost.bin on B"
grep -q "PUBLISH reqid [0-9]* answered from the reply cache" "$T/marud.log" ||
	fail "the PUBLISH was not resent and answered from marud's reply cache"
log "PUBLISH applied, reply lost to a cut: close 0 after $(field "$T/w1.out" close 3) ms, file whole"

# ---- never applied ----
rm -f "$T/r" "$T/g"
python3 "$OUT" write "$A/never.bin" $((1 << 20)) 12 "$T/r" "$T/g" end >"$T/w2.out" 2>&1 &
W=$!
wait_up "$W" 20 test -e "$T/r" || fail "writer: $(cat "$T/w2.out")"
net_cut
touch "$T/g"
bg_wait "$W" 20
heal never
took=$(field "$T/w2.out" close 3)
assert_eq "$(field "$T/w2.out" close 2)" ETIMEDOUT "close with the link cut: $(cat "$T/w2.out")"
[ "$took" -le $((TMO + 1000)) ] || fail "close took $took ms, timeout_ms $TMO"
assert_eq "$(python3 "$OUT" check "$B/never.bin" $((1 << 20)) 12)" missing "never.bin on B"
log "PUBLISH never reached marud: close ETIMEDOUT after $took ms, nothing visible"

# ---- a write fails: the version is poisoned ----
rm -f "$T/r" "$T/g"
python3 "$OUT" write "$A/cut.bin" $((2 << 20)) 13 "$T/r" "$T/g" half >"$T/w3.out" 2>&1 &
W=$!
wait_up "$W" 20 test -e "$T/r" || fail "writer: $(cat "$T/w3.out")"
net_cut
touch "$T/g"
bg_wait "$W" 30
heal cut
grep -q "^write [0-9]* ETIMEDOUT" "$T/w3.out" || fail "no write failed with the link cut: $(cat "$T/w3.out")"
assert_eq "$(field "$T/w3.out" close 2)" ETIMEDOUT "close after a failed write: $(cat "$T/w3.out")"
assert_eq "$(python3 "$OUT" check "$B/cut.bin" $((2 << 20)) 13)" missing "cut.bin on B after the heal"
grep -q "cut.bin (version [0-9]*, directory [0-9]*): a write of" "${MARUFS_LOG_OF[$A]}" ||
	fail "the mount's log does not name cut.bin and what failed"
python3 "$OUT" write "$A/after.bin" $((1 << 20)) 14 >"$T/w4.out" 2>&1 || true
assert_eq "$(field "$T/w4.out" close 2)" 0 "a write after the heal: $(cat "$T/w4.out")"
assert_eq "$(python3 "$OUT" check "$B/after.bin" $((1 << 20)) 14)" ok "after.bin on B"
sleep 1
assert_eq "$(python3 "$OUT" check "$B/cut.bin" $((2 << 20)) 13)" missing "cut.bin on B, later"
log "write failed mid-file: close ETIMEDOUT, nothing partial visible, the mount writes again"

# ---- bounds with the link cut ----
# Each kind on a fresh outage: a create that reaches marud first ends the
# last one (after a whole timeout_ms of outage, calls fail at once).
mkdir "$A/d" && touch "$A/d/f.0" || fail "setup"
fresh_cut()
{
	heal "$1"
	[ "$1" != listdir ] || mkdir "$A/d/$1".{0..8} || fail "setup listdir"
	net_cut
}
for op in stat create mkdir unlink rename listdir; do
	fresh_cut $op
	python3 "$OUT" timed $op 9 "$A/d/$op" >"$T/t-$op.out" 2>&1 || fail "timed $op"
	max=$(field "$T/t-$op.out" max 2)
	[ -n "$max" ] && [ "$max" -le $((TMO + 300)) ] ||
		fail "$op: nine at once, the slowest took ${max:-?} ms: $(cat "$T/t-$op.out")"
	log "link cut: nine ${op}s at once, slowest ${max} ms (timeout_ms $TMO)"
done
fresh_cut killed
python3 "$OUT" killed "$A/d/blocked" >"$T/k.out" 2>&1 || fail "killed: $(cat "$T/k.out")"
died=$(field "$T/k.out" died 2)
assert_eq "$(field "$T/k.out" died 3)" killed "the stat was not blocked when SIGKILL came"
[ "$died" -lt 1000 ] || fail "a process blocked on the cut pool took $died ms to die of SIGKILL"
log "link cut: a blocked stat killed, dead $died ms after SIGKILL"
rm -f "$T/r" "$T/g1" "$T/g"
heal forked
python3 "$OUT" forked "$A/forked.bin" "$T/r" "$T/g1" "$T/g" >"$T/f.out" 2>&1 &
W=$!
wait_up "$W" 20 test -e "$T/r" || fail "forked: $(cat "$T/f.out")"
net_cut
touch "$T/g1"
wait_for 10 grep -q child-close "$T/f.out" || fail "child close: $(cat "$T/f.out")"
net_restore
touch "$T/g"
bg_wait "$W" 20
assert_eq "$(field "$T/f.out" child-close 2)" 0 "child's close"
took=$(field "$T/f.out" child-close 3)
[ "$took" -lt 300 ] || fail "the child's close of its copy took $took ms with the link cut"
assert_eq "$(field "$T/f.out" close 2)" 0 "the writer's close: $(cat "$T/f.out")"
assert_eq "$(python3 "$OUT" check "$B/forked.bin" 4096 5)" ok "forked.bin on B"
log "link cut: a forked child's close of a write descriptor took $took ms"

marufs_umount "$B"
marufs_umount "$A"
marud_stop

# ---- an injected transfer error, a marud restart: mount C writes over
# tcp, mount D is the witness ----
MARU_FAILPOINT="marud.write.mid=3*error:EIO" marud_start --size 64M
marufs_mount -o timeout_ms=$TMO -o data=tcp
C=$LAST_MNT
marufs_mount
D=$LAST_MNT
python3 "$OUT" write "$C/inj.bin" $((2 << 20)) 15 >"$T/w5.out" 2>&1 || true
# over tcp writes go behind the caller: the refusal may be told by a later
# write or only by the close (libmaru(3), marufs(8)), but by nothing else
! grep -q "^write [0-9]* [A-Z]" "$T/w5.out" || grep -q "^write [0-9]* EIO" "$T/w5.out" ||
	fail "a write failed otherwise than EIO: $(cat "$T/w5.out")"
assert_eq "$(field "$T/w5.out" close 2)" EIO "close after an injected WRITE error: $(cat "$T/w5.out")"
assert_eq "$(python3 "$OUT" check "$D/inj.bin" $((2 << 20)) 15)" missing "inj.bin on D"
log "marud failed a WRITE mid-payload: close EIO, nothing visible"

rm -f "$T/r" "$T/g"
python3 "$OUT" write "$C/restart.bin" $((2 << 20)) 16 "$T/r" "$T/g" half >"$T/w6.out" 2>&1 &
W=$!
wait_up "$W" 20 test -e "$T/r" || fail "writer: $(cat "$T/w6.out")"
marud_restart
touch "$T/g"
bg_wait "$W" 30
grep -q "^write [0-9]* EIO" "$T/w6.out" || fail "no write failed after the restart: $(cat "$T/w6.out")"
assert_eq "$(field "$T/w6.out" close 2)" EIO "close after a restart mid-write: $(cat "$T/w6.out")"
wait_for 20 eval 'python3 "$OUT" check "$D/restart.bin" $((2 << 20)) 16 | grep -qx missing' ||
	fail "restart.bin on D: $(python3 "$OUT" check "$D/restart.bin" $((2 << 20)) 16)"
wait_for 20 eval 'python3 "$OUT" write "$C/again.bin" 4096 17 2>/dev/null | grep -q "^close 0"' ||
	fail "no write on C after the restart"
assert_eq "$(python3 "$OUT" check "$D/again.bin" 4096 17)" ok "again.bin on D"
log "marud restarted mid-write: write and close EIO, nothing visible; C writes again"

marufs_umount "$D"
marufs_umount "$C"
marud_stop
