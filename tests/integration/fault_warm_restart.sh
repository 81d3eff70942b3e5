#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_warm_restart: the directory survives marud restarts (issue 14,
# marufs-design(7) §7 "marud restarted"). A 4 MiB chunk copied in through one mount
# comes back byte-identical after SIGTERM + start on the same shm pool, on
# both mounts, without remounting; a descriptor of the old generation gets
# EIO while new opens work. Then marud is SIGKILLed at each phase of a
# publish, a rename, an unlink and an eviction (the journal's fail points
# marud.journal.OP.{before,torn,after}: change made in memory, its record
# half written, its record durable) and restarted: every name published
# before the kill and not removed is there with identical bytes, nothing
# half-published appears, the books balance. --fresh starts empty.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

SIZE=$((4 << 20))
head -c $SIZE /dev/urandom >"$T/chunk"

gen_of() { awk '$1 == "generation" { print $2 }' "$1/.maru/pool"; }

# ---- SIGTERM, two mounts, old fds ----
marud_start --size 128M
marufs_mount
m1=$LAST_MNT
marufs_mount
m2=$LAST_MNT
mkdir "$m1/ns" || fail "mkdir ns"
cp "$T/chunk" "$m1/ns/chunk.bin" || fail "cp into the pool"
cmp "$T/chunk" "$m2/ns/chunk.bin" || fail "second mount before the restart"
# a descriptor of the old generation, held by a process marud does not inherit
python3 "$SRCDIR/tests/integration/lib/oldfd.py" "$m1/ns/chunk.bin" "$T/ready" "$T/go" >"$T/oldfd.out" 2>&1 &
py=$!
wait_for 10 test -e "$T/ready" || fail "old-descriptor reader never got ready"
g1=$(gen_of "$m1")
g2=$(gen_of "$m2")
marud_restart
grep -q "recovery: 1 names, 1 directories" "$T/marud.log" || fail "marud did not say what it recovered"
for m in "$m1" "$m2"; do
	g=$g1
	[ "$m" = "$m2" ] && g=$g2
	wait_for 15 eval "[ \"\$(gen_of '$m')\" != '$g' ]" || fail "$m never saw the new generation"
done
touch "$T/go"
wait "$py" || fail "old-descriptor reader: $(cat "$T/oldfd.out")"
assert_eq "$(cat "$T/oldfd.out")" EIO "old descriptor after the restart"
[ -d "$m1/ns" ] || fail "ns/ is gone after the restart"
cmp "$T/chunk" "$m1/ns/chunk.bin" || fail "chunk differs after the restart (mount 1)"
cmp "$T/chunk" "$m2/ns/chunk.bin" || fail "chunk differs after the restart (mount 2)"
echo after >"$m2/ns/after.txt" || fail "write after the restart"
assert_eq "$(cat "$m1/ns/after.txt")" after "other mount after the restart"
accounting_check || fail "accounting after the restart"
marufs_umount "$m2"
marufs_umount "$m1"
marud_stop
log "SIGTERM restart: ns/ and the chunk came back byte-identical on two mounts: ok"

# ---- --fresh ----
marud_launch_fresh()
{
	MARUD_ARGS+=(--fresh)
	marud_launch
	unset 'MARUD_ARGS[${#MARUD_ARGS[@]}-1]'
}
marud_launch_fresh
[ "$(mstat marud_names)" = 0 ] || fail "--fresh kept $(mstat marud_names) names"
marud_stop
log "--fresh: empty: ok"

# ---- marud -n reads the pool's metadata ----
"$MARUD" -n --pool "$MARUD_POOL" >"$T/n.out" 2>&1 || fail "marud -n: $(cat "$T/n.out")"
grep -q "^pool metadata: " "$T/n.out" || fail "marud -n said nothing of the metadata: $(cat "$T/n.out")"

# ---- SIGKILL at each phase ----
# kill_at OP PHASE NTH SETUP VICTIM: run SETUP (puts before the kill), arm
# marud.journal.OP.PHASE for its NTH hit, run VICTIM in the background,
# expect marud to die there, restart, and hand over to the checks.
FT=$TOOLS/fault_tool
put() { MARU_DATA=tcp "$FT" put "$MARU_URI" "$1" $SIZE "$2" >/dev/null || fail "put $1"; }
check() { expect_verdict "$2" "$OP.$PH: $1 after restart" "$FT" verify "$MARU_URI" "$1"; }

kill_phase()
{
	OP=$1 PH=$2
	local nth=$3 pid
	MARU_FAILPOINT="marud.journal.$OP.$PH=$nth*abort" marud_start --size 64M --grace 1
	marufs_mount
	local m=$LAST_MNT
	case "$OP" in
	publish)
		put keep.bin 1
		put gone.bin 2
		MARU_DATA=tcp "$FT" put "$MARU_URI" new.bin $SIZE 3 >/dev/null 2>&1 &
		;;
	rename)
		put keep.bin 1
		(mv "$m/keep.bin" "$m/moved.bin" 2>/dev/null) &
		;;
	unlink)
		put keep.bin 1
		put gone.bin 2
		(rm "$m/gone.bin" 2>/dev/null) &
		;;
	evict)
		# 62 MiB of data: the 16th 4 MiB chunk evicts e0, the oldest
		for i in $(seq 0 14); do put "e$i.bin" $((i + 10)); done
		MARU_DATA=tcp "$FT" put "$MARU_URI" e15.bin $SIZE 25 >/dev/null 2>&1 &
		;;
	esac
	pid=$!
	marud_died
	tail -n 3 "$T/marud.log" | grep -q "failpoint marud.journal.$OP.$PH: killing" ||
		fail "marud died, but not at marud.journal.$OP.$PH"
	# the mount stays: it must find the restarted marud by itself
	marud_restart kill
	wait "$pid" 2>/dev/null || true
	local done=0
	[ "$PH" = after ] && done=1
	case "$OP" in
	publish)
		check keep.bin "ok 1"
		check gone.bin "ok 2"
		if [ $done = 1 ]; then check new.bin "ok 3"; else check new.bin missing; fi
		;;
	rename)
		# recorded (after): moved. Not recorded, the mount may still redo
		# the rename once it reconnects: then either name, never both
		local k v
		k=$(verdict "$FT" verify "$MARU_URI" keep.bin)
		v=$(verdict "$FT" verify "$MARU_URI" moved.bin)
		if [ $done = 1 ] || [ "$k" = missing ]; then
			assert_eq "$k/$v" "missing/ok 1" "$OP.$PH: keep.bin/moved.bin"
		else
			assert_eq "$k/$v" "ok 1/missing" "$OP.$PH: keep.bin/moved.bin"
		fi
		;;
	unlink)
		check keep.bin "ok 1"
		# not recorded: gone.bin whole, unless the reconnected mount redid rm
		if [ $done = 1 ]; then
			check gone.bin missing
		else
			local g
			g=$(verdict "$FT" verify "$MARU_URI" gone.bin)
			[ "$g" = "ok 2" ] || [ "$g" = missing ] || fail "$OP.$PH: gone.bin: $g"
		fi
		;;
	evict)
		if [ $done = 1 ]; then check e0.bin missing; else check e0.bin "ok 10"; fi
		for i in $(seq 1 14); do check "e$i.bin" "ok $((i + 10))"; done
		check e15.bin missing
		;;
	esac
	wait_settled 10
	accounting_check || fail "$OP.$PH: accounting after the restart"
	# the mount that lived through the kill lists the recovered names
	wait_for 15 eval "ls '$m' | grep -q '\.bin\$'" || fail "$OP.$PH: the mount shows no names: $(ls -la $m 2>&1)"
	marufs_umount "$m"
	marud_stop
	log "SIGKILL at marud.journal.$OP.$PH: ok"
}

skip_unless_failpoints
for ph in before torn after; do
	kill_phase publish "$ph" 3
	kill_phase rename "$ph" 1
	kill_phase unlink "$ph" 1
	kill_phase evict "$ph" 1
done
