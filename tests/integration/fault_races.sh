#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_races: two writers racing on one name, and rename racing with
# unlink, each with a reader watching the contested name.
#  libmaru (fault_race, one session per actor, started at a barrier each
#  round, both data paths): both racing publishes succeed and the name ends
#  with one of the two chunks, whole; of a rename and an unlink of the same
#  name exactly one succeeds (the other gets ENOENT) and the new name exists
#  exactly when the rename won; a rename over a name being unlinked leaves
#  that name missing or with the renamed bytes, never the old ones.
#  marufs (three mounts of one pool): the same races between processes on
#  two mounts, judged on all three after both returned; the third mount's
#  reader never sees a partial chunk.
# The pool is all free again afterwards.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

ROUNDS=${FAULT_RACE_ROUNDS:-60}
marud_start --size 64M
for mode in writers rename target; do
	for dp in shm tcp; do
		MARU_DATA=$dp "$TOOLS/fault_race" "$MARU_URI" $mode "$ROUNDS" >"$T/race.out" 2>&1 ||
			fail "fault_race $mode (data=$dp): $(cat "$T/race.out")"
		log "$(tail -n 1 "$T/race.out") (data=$dp)"
	done
done
wait_settled 10 "$(mstat marud_pool_capacity_bytes)"

marufs_mount
M1=$LAST_MNT
marufs_mount
M2=$LAST_MNT
marufs_mount
M3=$LAST_MNT

# the watcher: whole chunks only, on the third mount, until told to stop
watch_names()
{
	while [ ! -e "$T/stop" ]; do
		"$FT" fverify "$M3/w.bin" "$M3/y.bin" >>"$T/watch.out" 2>&1 || true
	done
}
rm -f "$T/stop"
: >"$T/watch.out"
watch_names &
watcher=$!
on_exit "touch '$T/stop'"

rounds=$((ROUNDS / 4))
for r in $(seq 1 "$rounds"); do
	"$FT" fwrite "$M1/w.bin" $(((r % 4 + 1) << 20)) $((r * 10 + 1)) >"$T/a.out" 2>&1 &
	a=$!
	"$FT" fwrite "$M2/w.bin" $(((r % 3 + 1) << 20)) $((r * 10 + 2)) >"$T/b.out" 2>&1 &
	b=$!
	wait "$a" || fail "writer on mount 1, round $r: $(cat "$T/a.out")"
	wait "$b" || fail "writer on mount 2, round $r: $(cat "$T/b.out")"
	v1=$(verdict "$FT" fverify "$M1/w.bin")
	case "$v1" in
	"ok $((r * 10 + 1))" | "ok $((r * 10 + 2))") ;;
	*) fail "round $r: w.bin holds '$v1'" ;;
	esac
	for m in "$M2" "$M3"; do
		expect_verdict "$v1" "round $r: mounts agree on w.bin" "$FT" fverify "$m/w.bin"
	done
done
log "marufs: $rounds rounds of two writers on one name"

renamed=0
for r in $(seq 1 "$rounds"); do
	"$FT" fwrite "$M1/x.bin" 100000 $((r * 10 + 9)) >/dev/null || fail "x.bin round $r"
	mv "$M1/x.bin" "$M1/y.bin" 2>"$T/mv.err" &
	a=$!
	rm "$M2/x.bin" 2>"$T/rm.err" &
	b=$!
	ra=0
	rb=0
	wait "$a" || ra=1
	wait "$b" || rb=1
	[ $((ra + rb)) = 1 ] ||
		fail "round $r: mv ($ra: $(cat "$T/mv.err")) and rm ($rb: $(cat "$T/rm.err")) must not both succeed or both fail"
	for m in "$M1" "$M2" "$M3"; do
		expect_verdict missing "round $r: x.bin after the race ($m)" "$FT" fverify "$m/x.bin"
		if [ $ra = 0 ]; then
			expect_verdict "ok $((r * 10 + 9))" "round $r: y.bin after mv won" \
				"$FT" fverify "$m/y.bin"
		else
			expect_verdict missing "round $r: y.bin after rm won" "$FT" fverify "$m/y.bin"
		fi
	done
	[ $ra = 0 ] && renamed=$((renamed + 1))
	rm -f "$M1/y.bin"
done
log "marufs: $rounds rounds of mv against rm (mv won $renamed)"

touch "$T/stop"
wait "$watcher" || true
if grep -q " BAD " "$T/watch.out"; then
	fail "the watcher saw a partial chunk: $(grep " BAD " "$T/watch.out" | head -n 3)"
fi
log "watcher: $(grep -c " ok " "$T/watch.out") whole reads, no partial one"
rm -f "$M1/w.bin"
marufs_umount "$M3"
marufs_umount "$M2"
marufs_umount "$M1"
wait_settled 10 "$(mstat marud_pool_capacity_bytes)"
marud_stop
