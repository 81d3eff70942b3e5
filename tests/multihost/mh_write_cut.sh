#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mh_write_cut: a failed write never publishes (issue 22, "a failed write
# poisons its version"). Hosts: pool (marud), w1 (mount A, the writer, with
# timeout_ms=3000) and w2 (mount B). Two writers on A each write the first MiB
# of a 2 MiB file, then w1's link is cut and they write the second MiB. The
# first closes while the link is still cut, the second after the heal, once A
# answers again (the issue's case: its write failed, its close returned 0 and
# a 1 MiB file became visible everywhere). Both closes must return an error,
# within a bound, and no mount ever shows either file.
# Real: TCP between namespaces, marud, both mounts. Emulated: the cut (every
# frame to and from w1 dropped on the bridge).
. "$(dirname "$0")/lib.sh"
mh_init
mh_host pool
mh_host w1
mh_host w2
mh_marud_start pool
mh_mount w1 -o timeout_ms=3000
A=$LAST_MNT
mh_mount w2
B=$LAST_MNT

declare -A WPID
for f in big1 big2; do
	mkdir "$T/$f"
	mh_tool writecut "$A/$f" "$T/$f" >"$T/$f.out" 2>&1 &
	WPID[$f]=$!
	wait_for 10 test -e "$T/$f/ready" || fail "writer $f did not write its first MiB"
done
mh_cut w1
touch "$T/big1/go" "$T/big2/go"
# timeout_ms is 3 s: a write or a close may take that, not much more
for f in big1 big2; do
	wait_for 10 test -e "$T/$f/wrote" || fail "the second write of $f still blocks after 10 s"
done
touch "$T/big1/close"
wait_exit "${WPID[big1]}" 10 || fail "close of big1 on the cut mount still blocks after 10 s"
[ "$EXIT_RC" = 0 ] || fail "writer big1: $(cat "$T/big1.out")"
# (A, the writer's own mount, shows big2 while it is open: POSIX)
[ ! -e "$B/big1" ] && [ ! -e "$B/big2" ] || fail "B shows a file cut off mid-write during the cut"

mh_heal w1
echo after >"$B/marker"
wait_for 30 test -e "$A/marker" || fail "A did not answer a new name 30 s after the heal"
touch "$T/big2/close"
wait_exit "${WPID[big2]}" 10 || fail "close of big2 after the heal still blocks after 10 s"
[ "$EXIT_RC" = 0 ] || fail "writer big2: $(cat "$T/big2.out")"
for f in big1 big2; do
	res=$(cat "$T/$f.out")
	log "writer $f: $res"
	case "$res" in
	*"close=0") fail "close of $f returned 0 after a write cut off mid-file ($res)" ;;
	"write="*" close="*) ;;
	*) fail "writer $f said '$res'" ;;
	esac
	for m in "$A" "$B"; do
		[ ! -e "$m/$f" ] || fail "$m shows $f after the heal: $(stat -c %s "$m/$f") bytes"
	done
done
# the mount writes again after the heal
head -c $((2 << 20)) /dev/urandom >"$T/chunk"
cp "$T/chunk" "$A/big1"
cmp "$T/chunk" "$B/big1" || fail "a write on A after the heal reads differently on B"

marufs_umount "$A"
marufs_umount "$B"
marud_stop
