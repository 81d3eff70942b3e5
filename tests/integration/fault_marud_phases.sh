#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_marud_phases: marud stopped by a fail point at each phase of a
# chunk's life, then restarted on the same pool (marufs-design(7) §7: clients see the
# new generation and reconnect by themselves; what was in flight fails with
# ESTALE through libmaru and EIO through marufs, never with stale or partial
# bytes; new opens work; the pool's books balance; what was published
# before the kill comes back, warm restart). A publish that took effect
# before the kill (publish.after) is not in flight: libmaru asks the new
# marud, which has it published, and the call (the close) succeeds.
#
#   marud.create.after     the pending version exists, its reply is not sent
#   marud.write.mid        half of a WRITE frame's payload is in pool memory
#   marud.publish.before   bytes hashed, the name not yet rebound
#   marud.publish.after    the name rebound, the reply not sent
#   marud.read.mid         half of a READ reply is on the wire
#
# Killed (abort): once with a libmaru client over tcp (the data path whose
# bytes marud moves) and, for the phases a mount reaches, with a writer on a
# marufs mount. Stopped (sleep): while marud hangs in write.mid and
# publish.before, a reader on another client still sees the old version,
# whole; afterwards the new one, whole.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"
skip_unless_failpoints

SIZE=$((4 << 20))

# died_at PHASE: marud stopped, and at that fail point (its last words).
died_at()
{
	marud_died
	tail -n 3 "$T/marud.log" | grep -q "failpoint marud.$1: killing" ||
		fail "marud died, but not at marud.$1"
}

# kill_phase PHASE: libmaru victim over tcp. The first put (old.bin) passes
# the fail point once; the second (or, for reads, the first read) stops marud.
# For write.mid old.bin goes over shm, which sends no WRITE frame: how many
# frames a tcp put takes is libmaru's choice (streams cut it into 1 MiB
# frames), so the first WRITE frame marud sees is the victim's.
kill_phase()
{
	local phase=$1 nth=2 olddp=tcp pid out
	[ "$phase" = read.mid ] && nth=1
	[ "$phase" = write.mid ] && nth=1 olddp=shm
	MARU_FAILPOINT="marud.$phase=$nth*abort" marud_start --size 64M --grace 2
	MARU_DATA=$olddp "$FT" put "$MARU_URI" old.bin $SIZE 1 >/dev/null ||
		fail "$phase: storing old.bin"
	if [ "$phase" = read.mid ]; then
		MARU_DATA=tcp "$FT" verify "$MARU_URI" old.bin >"$T/victim.out" 2>&1 &
	else
		MARU_DATA=tcp "$FT" put "$MARU_URI" new.bin $SIZE 2 >"$T/victim.out" 2>&1 &
	fi
	pid=$!
	died_at "$phase"
	marud_restart kill
	bg_wait "$pid" 20
	out=$(cat "$T/victim.out")
	case "$phase:$out" in
	publish.after:*" error "*)
		fail "$phase: the publish took effect, only its reply was lost, yet: '$out'" ;;
	publish.after:*) [ "$EXIT_RC" = 0 ] || fail "$phase: the put ended $EXIT_RC: '$out'" ;;
	*" error ESTALE") ;;
	*) fail "$phase: the call in flight ended with '$out', expected ESTALE" ;;
	esac
	# warm restart: what was published before the kill comes back whole
	# (publish.after: the name was rebound, only the reply was lost);
	# nothing half-made survives, under any name
	local want=missing names=1
	[ "$phase" = publish.after ] && want="ok 2" names=2
	expect_verdict "$want" "$phase: new.bin after restart" "$FT" verify "$MARU_URI" new.bin
	expect_verdict "ok 1" "$phase: old.bin after restart" "$FT" verify "$MARU_URI" old.bin
	[ "$(mstat marud_names)" = $names ] || fail "$phase: $(mstat marud_names) names after restart, want $names"
	wait_settled 10 $(($(mstat marud_pool_capacity_bytes) - names * SIZE))
	# and new chunks work on both data paths
	for dp in tcp shm; do
		MARU_DATA=$dp "$FT" put "$MARU_URI" "after-$dp.bin" $SIZE 3 >/dev/null ||
			fail "$phase: put after restart (data=$dp)"
		expect_verdict "ok 3" "$phase: read after restart (data=$dp)" \
			env MARU_DATA=$dp "$FT" verify "$MARU_URI" "after-$dp.bin"
	done
	wait_settled 10
	marud_stop
}

# mount_phase PHASE: a writer on a marufs mount (shm data path) is the
# victim; the second mount and the writer's own must not show anything of
# it, old descriptors fail with EIO, new files work without remounting.
mount_phase()
{
	local phase=$1 pid out
	MARU_FAILPOINT="marud.$phase=1*abort" marud_start --size 64M --grace 2
	marufs_mount
	local m1=$LAST_MNT
	marufs_mount
	local m2=$LAST_MNT
	"$FT" fwrite "$m1/new.bin" $SIZE 5 >"$T/victim.out" 2>&1 &
	pid=$!
	died_at "$phase"
	marud_restart kill
	bg_wait "$pid" 30
	out=$(cat "$T/victim.out")
	case "$phase:$out" in
	publish.after:*" error "*)
		fail "$phase: the publish took effect, only its reply was lost, yet: '$out'" ;;
	publish.after:*) [ "$EXIT_RC" = 0 ] || fail "$phase: the writer ended $EXIT_RC: '$out'" ;;
	*" error EIO") ;;
	*) fail "$phase: the mount's writer ended with '$out' (exit $EXIT_RC), expected EIO" ;;
	esac
	# published before the kill (publish.after): back whole; else nothing
	local want=missing
	[ "$phase" = publish.after ] && want="ok 5"
	for m in "$m1" "$m2"; do
		wait_for 10 eval "[ \"\$(verdict \"$FT\" fverify \"$m/new.bin\")\" = '$want' ]" ||
			fail "$phase: $m/new.bin: $(verdict "$FT" fverify "$m/new.bin")"
	done
	"$FT" fwrite "$m1/after.bin" $SIZE 6 >/dev/null || fail "$phase: write after restart"
	expect_verdict "ok 6" "$phase: other mount after restart" "$FT" fverify "$m2/after.bin"
	wait_settled 10
	marufs_umount "$m2"
	marufs_umount "$m1"
	marud_stop
}

# stall_phase PHASE: marud hangs (sleep) in PHASE of a tcp put replacing
# old.bin; a reader meanwhile sees the old chunk whole, then the new one.
stall_phase()
{
	local phase=$1 nth=2 olddp=tcp pid
	# write.mid: the old chunk over shm, as in kill_phase
	[ "$phase" = write.mid ] && nth=1 olddp=shm
	MARU_FAILPOINT="marud.$phase=$nth*sleep:1500" marud_start --size 64M --grace 2
	MARU_DATA=$olddp "$FT" put "$MARU_URI" x.bin $SIZE 1 >/dev/null || fail "$phase: old x.bin"
	MARU_DATA=tcp "$FT" put "$MARU_URI" x.bin $SIZE 2 >"$T/victim.out" 2>&1 &
	pid=$!
	sleep 0.5
	proc_alive "$pid" || fail "$phase: the put did not stall at the fail point"
	for dp in shm tcp; do
		expect_verdict "ok 1" "$phase: reader (data=$dp) while marud is stopped" \
			env MARU_DATA=$dp "$FT" verify "$MARU_URI" x.bin
	done
	bg_wait "$pid" 20
	assert_eq "$EXIT_RC" 0 "$phase: stalled put: $(cat "$T/victim.out")"
	expect_verdict "ok 2" "$phase: after the stall" "$FT" verify "$MARU_URI" x.bin
	wait_settled 10
	marud_stop
}

for phase in create.after write.mid publish.before publish.after read.mid; do
	kill_phase "$phase"
	log "killed at marud.$phase: ok"
done
for phase in create.after publish.before publish.after; do
	mount_phase "$phase"
	log "marufs writer, marud killed at marud.$phase: ok"
done
for phase in write.mid publish.before; do
	stall_phase "$phase"
	log "stalled at marud.$phase: ok"
done
