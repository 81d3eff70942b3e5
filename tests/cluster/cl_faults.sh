#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cl_faults: pools failing, draining, leaving, joining and partitioned
# away, under load, through real cluster mounts (marufs maru+etcd://). Three
# etcd members, the pools and two workers are hosts of their own (network
# namespaces, real TCP); each worker has a cluster mount and runs a
# bounded writer/reader loop on it (cl_faults_load.py: distinct names,
# written, read back and compared, every call timed, errors counted by
# errno). w1 also mounts each pool directly, to see where names went.
# Everything is real: etcd, marud, marufs, FUSE; the partition is a rule
# on the bridge (tests/multihost/lib.sh). Checked, with the timelines
# printed (ms from the event):
#  - SIGKILL of a pool: its names fail with ETIMEDOUT within timeout_ms
#    until the mounts saw it leave, then miss (ENOENT, marufs-cluster(7));
#    calls on the other pools' names do not fail, but for at most two per
#    worker and fault that wait out one timeout on the lost pool (a gap,
#    each within timeout_ms + 500); restarted on the same pool file it
#    rejoins, its names read back exact through both mounts, and no call
#    of the load fails after it (a file open on another pool publishes);
#  - drain (drain = yes, SIGHUP): no new name lands on it once the mounts
#    saw it, its names still read; SIGTERM: its names miss, others serve;
#  - join: a new pool takes new names at once; every name published
#    before the join still reads exact through both mounts;
#  - w1 cut from one pool only: calls for that pool's names fail with
#    ETIMEDOUT (marufs(8)'s error for a pool out of reach; the issue says
#    EIO) within timeout_ms, the other pools' names read, w2 reads them
#    all (gap: w1's creates of new names fail while placement settles,
#    see the partition's judge); the cut removed, w1 heals by itself;
#  - at the end every name the loads verified (but those of the pool that
#    left) reads back exact through both mounts.
. "$(dirname "$0")/lib.sh"

: "${CL_TOOL:?}"
LOAD=$SRCDIR/tests/cluster/cl_faults_load.py
TMO=2000
TTL=3
NMAX=4000
NPRE=30
cl_init
cl_etcd_cluster e1 e2 e3
mh_host w1
mh_host w2
CL=maru+etcd://$CL_ETCD/$CL_CLUSTER
echo "cluster-ttl = $TTL" >"$T/p2.conf"
cl_pool_start p1 -D cluster-ttl=$TTL
cl_pool_start p2 -f "$T/p2.conf"
cl_pool_start p3 -D cluster-ttl=$TTL
t_formed=$(date +%s)
tool()
{
	mh_run w1 "$CL_TOOL" "$@"
}
tool wait "$CL" 3 >/dev/null || fail "the client does not see 3 pools"

declare -A D=() URI=() PRE_POOL=() LOAD_PID=()
cl_mount_in w1 "$CL" "timeout_ms=$TMO"
M1=$LAST_MNT
cl_mount_in w2 "$CL" "timeout_ms=$TMO"
M2=$LAST_MNT
direct()
{
	URI[$1]=maru://${MH_ADDR[$1]}:$MH_PORT
	cl_mount_in w1 "${URI[$1]}" "timeout_ms=$TMO"
	D[$1]=$LAST_MNT
}
for p in p1 p2 p3; do
	direct "$p"
done
pool_of()
{
	local p
	for p in "${!D[@]}"; do
		if [ -e "${D[$p]}/$1" ]; then echo "$p"; fi
	done
}
pre_on()	# POOL: the indices of the pre files there
{
	local i
	for i in "${!PRE_POOL[@]}"; do
		if [ "${PRE_POOL[$i]}" = "$1" ]; then echo "$i"; fi
	done | sort -n
}
errno_of()
{
	case "$1" in
	*"No such file"*) echo ENOENT ;;
	*"Input/output"*) echo EIO ;;
	*"timed out"*) echo ETIMEDOUT ;;
	*"Stale file"*) echo ESTALE ;;
	*"refused"*) echo ECONNREFUSED ;;
	*) echo "other:$1" ;;
	esac
}
# try_read FILE SRC: ERR (ok, wrong or the errno) and DUR (ms) of one cat
try_read()
{
	local t0
	t0=$(mh_now_ms)
	if cat "$1" >"$T/rd" 2>"$T/rd.err"; then
		if cmp -s "$T/rd" "$2"; then ERR=ok; else ERR=wrong; fi
	else
		ERR=$(errno_of "$(cat "$T/rd.err")")
	fi
	DUR=$(($(mh_now_ms) - t0))
}
# until_read FILE SRC WANT SECONDS: poll until a read gives WANT; SEEN has
# the other outcomes, SLOW the slowest read; 1 when WANT never came
until_read()
{
	local deadline=$((SECONDS + $4))
	SEEN=
	SLOW=0
	while :; do
		try_read "$1" "$2"
		[ "$DUR" -le "$SLOW" ] || SLOW=$DUR
		[ "$ERR" = "$3" ] && return 0
		[[ " $SEEN " == *" $ERR "* ]] || SEEN+=" $ERR"
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}
# read_pre MNT POOL...: the pre files on those pools read exact within TMO
read_pre()
{
	local m=$1 p i
	shift
	WORST=0
	for p in "$@"; do
		for i in $(pre_on "$p"); do
			try_read "$m/pre/f$i" "$T/src/f$i"
			[ "$ERR" = ok ] || fail "pre/f$i (on $p) through $m: $ERR"
			[ "$DUR" -le "$TMO" ] || fail "pre/f$i (on $p) through $m took $DUR ms"
			[ "$DUR" -le "$WORST" ] || WORST=$DUR
		done
	done
}
# miss_pre MNT POOL: the pre files on POOL are misses (ENOENT)
miss_pre()
{
	local i
	for i in $(pre_on "$2"); do
		try_read "$1/pre/f$i" "$T/src/f$i"
		assert_eq "$ERR" ENOENT "pre/f$i (on lost $2) through $1"
	done
}
owners()	# TAG: each load name's owner now, $T/own-TAG-w1 and -w2
{
	local w
	for w in w1 w2; do
		tool owner "$CL" $(seq -f "ld/$w-%g" 0 $((NMAX - 1))) >"$T/own-$1-$w" ||
			fail "cl_tool owner"
	done
}
# judge TAG VICTIM FROM TO ALLOWED [ERR:N]: both loads' calls in [FROM, TO]
judge()
{
	local w out
	for w in w1 w2; do
		out=$(python3 "$LOAD" judge "$T/load-$w.log" "$T/own-$1-$w" "$2" "$3" "$4" \
			"$TMO" "$5" "${6:--:0}") || fail "load of $w, $1 window: $out"
		log "load of $w, $1 window ($(($4 - $3)) ms): $out"
	done
}
load_names_on()	# POOL WORKER: indices of that worker's load names there
{
	ls "${D[$1]}/ld" | sed -n "s/^$2-\([0-9]*\)$/\1/p" | sort -n
}
created_ms()	# WORKER INDEX: when its successful create began
{
	awk -v i="$2" '$2 == i && $3 == "create" && $4 == "0" { print $1; exit }' \
		"$T/load-$1.log"
}

# names published before the faults, each pool holding some
mkdir "$M1/pre" "$M1/ld" "$T/src" || fail "mkdir through the cluster mount"
for i in $(seq 1 $NPRE); do
	head -c $((2048 + i * 1031)) /dev/urandom >"$T/src/f$i"
	cp "$T/src/f$i" "$M1/pre/f$i" || fail "cp pre/f$i"
	PRE_POOL[$i]=$(pool_of "pre/f$i")
done
for p in p1 p2 p3; do
	[ -n "$(pre_on "$p")" ] || fail "none of the $NPRE pre files on $p"
done
read_pre "$M2" p1 p2 p3

# 1. the load: one bounded loop per worker, each on its own mount
for w in w1 w2; do
	m=$M1
	[ "$w" = w1 ] || m=$M2
	mh_bg "$w" python3 "$LOAD" run "$m/ld" "$w-" $NMAX "$T/stop" "$T/load-$w.log" \
		2>"$T/load-$w.err"
	LOAD_PID[$w]=$MH_LAST_PID
done
on_exit "touch '$T/stop'"
for w in w1 w2; do
	# (the log may not exist yet: cat prints nothing, grep -c then 0)
	wait_for 10 eval '[ "$(cat "$T/load-$w.log" 2>/dev/null | grep -c "^ok ")" -gt 20 ]' ||
		fail "the load of $w does not run: $(cat "$T/load-$w.err")"
done

# 2. p3 killed under the load, then restarted on the same pool file
owners k3
f=$(pre_on p3 | sed -n 1p)
t0=$(mh_now_ms)
cl_pool_signal p3 KILL
cl_pool_wait_exit p3
try_read "$M1/pre/f$f" "$T/src/f$f"
log "kill: pre/f$f (on p3) just after SIGKILL: $ERR in $DUR ms"
wait_for 15 eval '! tool pools "$CL" | grep -q "${URI[p3]}"' ||
	fail "p3 still in the membership 15 s after SIGKILL"
log "kill: p3 left the membership at +$(($(mh_now_ms) - t0)) ms (ttl $TTL s)"
until_read "$M1/pre/f$f" "$T/src/f$f" ENOENT 10 ||
	fail "pre/f$f on killed p3 through w1: never ENOENT (saw$SEEN)"
log "kill: pre/f$f misses (ENOENT) through w1 at +$(($(mh_now_ms) - t0)) ms" \
	"(before:$SEEN, slowest $SLOW ms)"
[ "$SLOW" -le $((TMO + 500)) ] || fail "a read of killed p3's name took $SLOW ms"
until_read "$M2/pre/f$f" "$T/src/f$f" ENOENT 5 ||
	fail "pre/f$f on killed p3 through w2: never ENOENT (saw$SEEN)"
log "kill: pre/f$f misses (ENOENT) through w2 at +$(($(mh_now_ms) - t0)) ms"
for m in "$M1" "$M2"; do
	miss_pre "$m" p3
	read_pre "$m" p1 p2
	log "kill: the pre files of p1 and p2 read through $m, slowest $WORST ms"
done
sleep 1
t1=$(mh_now_ms)
judge k3 "${URI[p3]}" "$t0" "$t1" ETIMEDOUT,ENOENT ETIMEDOUT:2

cl_pool_start p3 -D cluster-ttl=$TTL
t0=$(mh_now_ms)
tool wait "$CL" 3 >/dev/null || fail "p3 did not rejoin"
log "restart: p3 back in the membership at +$(($(mh_now_ms) - t0)) ms"
until_read "$M1/pre/f$f" "$T/src/f$f" ok 10 ||
	fail "pre/f$f through w1 after p3's restart: $ERR (saw$SEEN)"
log "restart: pre/f$f reads exact through w1 at +$(($(mh_now_ms) - t0)) ms (before:$SEEN)"
until_read "$M2/pre/f$f" "$T/src/f$f" ok 5 ||
	fail "pre/f$f through w2 after p3's restart: $ERR (saw$SEEN)"
log "restart: pre/f$f reads exact through w2 at +$(($(mh_now_ms) - t0)) ms"
for m in "$M1" "$M2"; do
	read_pre "$m" p1 p2 p3
done
sleep 1
# no call fails after the warm restart (before route_sub read the
# membership again for a pool it last saw gone, creates failed with ESTALE
# for up to 0.2 s, and a close on another pool with EIO)
judge k3 none "$t1" "$(mh_now_ms)" -

# 3. p2 drained under the load, then it leaves (SIGTERM)
for w in w1 w2; do
	load_names_on p2 "$w" >"$T/p2-before-$w"
done
echo "drain = yes" >>"$T/p2.conf"
t0=$(mh_now_ms)
cl_pool_signal p2 HUP
wait_for 5 eval 'tool pools "$CL" | grep "${URI[p2]}" | grep -q draining' ||
	fail "the client does not see p2 draining"
t_seen=$(($(mh_now_ms) - t0))
log "drain: the client sees p2 draining at +$t_seen ms"
sleep 1.5
for i in $(seq 1 20); do
	echo "d$i" >"$M1/pre/d$i" && echo "e$i" >"$M2/pre/e$i" || fail "new names with p2 draining"
done
on_p2=$(ls "${D[p2]}/pre" | grep -c '^[de][0-9]' || true)
assert_eq "$on_p2" 0 "new names (of 40) on draining p2"
last=0
for w in w1 w2; do
	load_names_on p2 "$w" | comm -13 "$T/p2-before-$w" - >"$T/p2-new-$w"
	for i in $(cat "$T/p2-new-$w"); do
		c=$(($(created_ms "$w" "$i") - t0))
		[ "$c" -le "$last" ] || last=$c
	done
done
log "drain: the last load name that landed on p2 was created at +$last ms"
[ "$last" -le $((t_seen + 1500)) ] ||
	fail "a load name created at +$last ms landed on p2 (draining seen at +$t_seen ms)"
for m in "$M1" "$M2"; do
	read_pre "$m" p1 p2 p3
done
log "drain: the pre files of draining p2 read exact through both mounts"

for w in w1 w2; do
	load_names_on p2 "$w" >"$T/skip-$w"
done
fusermount3 -uz "${D[p2]}"
unset "D[p2]"
t0=$(mh_now_ms)
cl_pool_signal p2 TERM
cl_pool_wait_exit p2
assert_eq "$EXIT_RC" 0 "p2's exit status after SIGTERM"
f=$(pre_on p2 | sed -n 1p)
until_read "$M1/pre/f$f" "$T/src/f$f" ENOENT 5 ||
	fail "pre/f$f on p2 after it left, through w1: never ENOENT (saw$SEEN)"
log "leave: pre/f$f (on p2) misses (ENOENT) through w1 at +$(($(mh_now_ms) - t0)) ms" \
	"(before:$SEEN, slowest $SLOW ms)"
for m in "$M1" "$M2"; do
	miss_pre "$m" p2
	read_pre "$m" p1 p3
done
sleep 1
judge k3 "${URI[p2]}" "$t0" "$(mh_now_ms)" ETIMEDOUT,ENOENT ETIMEDOUT:2

# 4. p4 joins under the load (after the first pools formed the cluster:
# those that join within 30 s of the first are its founders, never new)
while [ "$(date +%s)" -lt $((t_formed + 31)) ]; do sleep 0.5; done
t0=$(mh_now_ms)
cl_pool_start p4 -D cluster-ttl=$TTL
tool wait "$CL" 3 >/dev/null || fail "the client does not see p1, p3 and p4"
log "join: the client sees p4 at +$(($(mh_now_ms) - t0)) ms"
direct p4
sleep 1.5
for i in $(seq 1 30); do
	echo "j$i" >"$M1/pre/j$i" || fail "new name j$i after the join"
done
n=$(ls "${D[p4]}/pre" | grep -c '^j' || true)
log "join: $n of 30 new names went to p4"
[ "$n" -ge 3 ] || fail "p4 took $n of 30 new names"
first=
for w in w1 w2; do
	for i in $(load_names_on p4 "$w" | sed -n 1p); do
		c=$(($(created_ms "$w" "$i") - t0))
		[ -n "$first" ] && [ "$first" -le "$c" ] || first=$c
	done
done
[ -n "$first" ] || fail "no load name on p4"
log "join: the first load name on p4 was created at +$first ms"
for m in "$M1" "$M2"; do
	read_pre "$m" p1 p3
	for w in w1 w2; do
		out=$(python3 "$LOAD" check "$m/ld" "$w-" "$T/load-$w.log" "$T/skip-$w") ||
			fail "$w's load names through $m after the join: $out"
		log "join: $w's load names through $m: $out"
	done
done
judge k3 none "$t0" "$(mh_now_ms)" -

# 5. w1 cut from p1 only
owners part
mkdir "$M2/part"
for i in $(seq 1 12); do
	head -c 3000 /dev/urandom >"$T/src/x$i"
	cp "$T/src/x$i" "$M2/part/x$i" || fail "cp part/x$i"
done
declare -A X_POOL=()
x=
for i in $(seq 1 12); do
	X_POOL[$i]=$(pool_of "part/x$i")
	[ -n "$x" ] || [ "${X_POOL[$i]}" != p1 ] || x=$i
done
[ -n "$x" ] || fail "none of 12 part files on p1"
# w1 knows the directory (not its files): its lookup needs no pool in
# particular, the file's needs p1
ls "$M1/part" >/dev/null
t0=$(mh_now_ms)
cl_cut_pair w1 p1
try_read "$M1/part/x$x" "$T/src/x$x"
log "partition: part/x$x (on p1) through w1: $ERR in $DUR ms"
assert_eq "$ERR" ETIMEDOUT "part/x$x through w1 cut from p1"
[ "$DUR" -le $((TMO + 500)) ] || fail "part/x$x through w1 cut from p1 took $DUR ms"
for i in $(seq 1 12); do
	p=${X_POOL[$i]}
	[ "$p" != p1 ] || continue
	try_read "$M1/part/x$i" "$T/src/x$i"
	[ "$ERR" = ok ] && [ "$DUR" -le "$TMO" ] ||
		fail "part/x$i (on $p) through w1 cut from p1: $ERR in $DUR ms"
done
for i in $(seq 1 12); do
	try_read "$M2/part/x$i" "$T/src/x$i"
	[ "$ERR" = ok ] || fail "part/x$i through w2 with w1 cut from p1: $ERR"
done
sleep 3
t1=$(mh_now_ms)
cl_heal_pair w1
until_read "$M1/part/x$x" "$T/src/x$x" ok 15 ||
	fail "w1 does not heal: part/x$x $ERR 15 s after the cut ended (saw$SEEN)"
log "partition: part/x$x reads exact through w1 at +$(($(mh_now_ms) - t1)) ms after the heal"
# gap: p3 (back) and p4 (new) are within settle_s, so a miss at a name's
# owner also asks where it was placed before, p1 for all: with p1 cut off
# w1's lookups of new names, and so its creates, fail with ETIMEDOUT
# (measured 3-4 of w1's creates in the 9 s of the cut)
judge part "${URI[p1]}" "$t0" "$t1" ETIMEDOUT ETIMEDOUT:8
sleep 2
t2=$(mh_now_ms)

# the end: both loads stop; nothing failed after the heal; every name
# published (but p2's, which left) reads exact through both mounts
touch "$T/stop"
for w in w1 w2; do
	wait_exit "${LOAD_PID[$w]}" 10 || fail "the load of $w does not stop"
	assert_eq "$EXIT_RC" 0 "the load of $w"
	log "load of $w: $(grep -c '^ok ' "$T/load-$w.log") names written and read back"
done
judge part none "$t2" "$(mh_now_ms)" -
for m in "$M1" "$M2"; do
	for w in w1 w2; do
		out=$(python3 "$LOAD" check "$m/ld" "$w-" "$T/load-$w.log" "$T/skip-$w") ||
			fail "$w's load names through $m at the end: $out"
	done
	read_pre "$m" p1 p3
done
echo "PASS: cl_faults"
