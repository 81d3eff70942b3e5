# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/lib/common.sh: the harness every integration case sources.
# It owns the per-case scratch directory ($T), starting and stopping a real marud
# on a private shm pool, mounting and unmounting real marufs instances, and the
# EXIT trap that always unmounts, kills what the case left running (daemons and
# background jobs), removes the pool files, and keeps $T plus the logs when the
# case failed.
#
# Usage in a case (tests/integration/<name>.sh):
#
#	#!/bin/bash
#	. "$(dirname "$0")/lib/common.sh"
#	skip_unless_fuse
#	marud_start
#	marufs_mount
#	echo hi > "$MNT/a"
#	assert_eq "$(cat "$MNT/a")" hi "read back"
#	marufs_umount
#	marud_stop
#
# Environment (set by tests/integration/meson.build): MARUD, MARUFS, TOOLS,
# EXAMPLES, SRCDIR. Exit 0 = pass, 1 = fail, 77 = skip. MARU_IT_KEEP=1 keeps $T
# even when the case passes. MARU_WRAP_DAEMONS="valgrind --error-exitcode=99 ..."
# runs every marud and marufs under that command (words split on blanks); a
# daemon the wrapper finds errors in then fails marud_stop / marufs_umount by
# its exit status.
# MARU_DATA=rdma|tcp|shm mounts every marufs with -o data=$MARU_DATA (unless
# the case names data= itself); with rdma, marud_start adds an rdma listener
# (rdma://${MARU_RDMA_ADDR:-127.0.0.1}:$MARU_RDMA_PORT). MARU_RDMA_PRELOAD="LD_PRELOAD=.../
# libsoftverbs.so" runs marud, marufs and run_rdma with the software verbs
# device (tests/softverbs), in a namespace of this case (SOFTVERBS_NS).
# On a real device (rdma_hw.sh) MARU_RDMA_ADDR is its IPv4 address, and
# MARU_RDMA_KEY_FILE a shared key given to marud and every marufs (marud
# serves a peer that is not loopback only with a key).

set -euo pipefail

: "${SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}"
: "${MARUD:=marud}"
: "${MARUFS:=marufs}"
: "${TOOLS:=}"
: "${EXAMPLES:=}"
export SRCDIR MARUD MARUFS TOOLS EXAMPLES

T=$(mktemp -d /tmp/maru-it.XXXXXX)
export T

# Seconds to wait for a daemon to come up or go away.
: "${MARU_IT_TIMEOUT:=10}"

MARU_POOL_SEQ=0		# makes each pool name of this case unique
MARUD_PID=
MARUD_POOL=
MARUD_ARGS=()
MARUD_SOCK=$T/marud.sock
MARU_URI=maru+unix://$MARUD_SOCK
export MARUD_PID MARU_URI

MARUFS_SEQ=0		# mount counter: 1 -> $T/mnt, N -> $T/mntN
WRAP=()			# MARU_WRAP_DAEMONS, split into words
if [ -n "${MARU_WRAP_DAEMONS:-}" ]; then
	read -r -a WRAP <<<"$MARU_WRAP_DAEMONS"
fi
RDMA_ENV=()		# MARU_RDMA_PRELOAD as an env(1) prefix
if [ -n "${MARU_RDMA_PRELOAD:-}" ]; then
	export SOFTVERBS_NS="maru-it-$$"
	RDMA_ENV=(env "$MARU_RDMA_PRELOAD")
	# the cases' own libmaru tools need the device too
	export "${MARU_RDMA_PRELOAD?}"
fi
: "${MARU_RDMA_PORT:=18515}"
declare -A MARUFS_PID_OF=()	# mountpoint -> marufs pid
declare -A MARUFS_LOG_OF=()	# mountpoint -> marufs log
CLEANUP_CMDS=()		# extra commands for the EXIT trap (on_exit)

# ---- reporting ----

# fail MSG: the EXIT trap then prints every log of $T and keeps it.
fail()
{
	echo "FAIL: $*" >&2
	exit 1
}

skip()
{
	echo "SKIP: $*" >&2
	exit 77
}

log()
{
	echo "# $*" >&2
}

# assert_eq ACTUAL EXPECTED MSG
assert_eq()
{
	if [ "$1" != "$2" ]; then
		fail "${3:-assert_eq}: got '$1', expected '$2'"
	fi
}

# assert_ne A B MSG
assert_ne()
{
	if [ "$1" = "$2" ]; then
		fail "${3:-assert_ne}: both are '$1'"
	fi
}

# assert_fails MSG CMD...: CMD must exit non-zero.
assert_fails()
{
	local msg=$1
	shift
	if "$@" 2>"$T/assert_fails.err"; then
		fail "$msg: '$*' succeeded"
	fi
}

# assert_fails_with ERRTEXT MSG CMD...: CMD must fail and say ERRTEXT on stderr
# (e.g. "No such file", "No space left", "File exists").
assert_fails_with()
{
	local text=$1 msg=$2
	shift 2
	if "$@" 2>"$T/assert_fails.err"; then
		fail "$msg: '$*' succeeded"
	fi
	grep -q -- "$text" "$T/assert_fails.err" ||
		fail "$msg: '$*' failed without '$text': $(cat "$T/assert_fails.err")"
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds; 1 on timeout.
wait_for()
{
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			return 1
		fi
		sleep 0.1
	done
}

# on_exit CMD...: run CMD (as one string, eval'd) from the EXIT trap, first.
on_exit()
{
	CLEANUP_CMDS+=("$*")
}

# ---- skips ----

skip_unless_fuse()
{
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	command -v fusermount3 >/dev/null || skip "no fusermount3"
}

skip_unless_cmd()
{
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || skip "no $c"
	done
}

# ---- processes ----

# proc_alive PID: true while PID runs (a zombie child counts as dead).
proc_alive()
{
	local state
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	state=$(sed -e 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# wait_exit PID SECONDS: wait for a child to exit and set EXIT_RC to its exit
# status. Returns 1 when it still runs after SECONDS. (Not usable inside $(...):
# only the shell that started a child can reap it.)
wait_exit()
{
	local pid=$1
	EXIT_RC=
	wait_for "$2" eval '! proc_alive '"$pid" || return 1
	EXIT_RC=0
	wait "$pid" 2>/dev/null || EXIT_RC=$?
}

# wait_up PID SECONDS CMD...: poll CMD until it succeeds; 1 on timeout or as
# soon as PID has died.
wait_up()
{
	local pid=$1 deadline=$((SECONDS + $2))
	shift 2
	until "$@"; do
		proc_alive "$pid" || return 1
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

show_log()
{
	if [ -s "$1" ]; then
		echo "----- $1 (last 100 lines) -----" >&2
		tail -n 100 "$1" >&2
		echo "----- end of $1 -----" >&2
	fi
}

# ---- marud ----

# args_have OPT ARGS...: true if OPT (as "--opt", "--opt=..." or "-D opt=...")
# is among ARGS.
args_have()
{
	local opt=$1 prev='' a
	shift
	for a in "$@"; do
		case "$a" in
		"--$opt" | "--$opt="*) return 0 ;;
		"$opt="*) [ "$prev" = -D ] && return 0 ;;
		"-D$opt="*) return 0 ;;
		esac
		prev=$a
	done
	return 1
}

# marud_start [extra marud args]: start marud -d on a fresh shm pool
# (shm:maru-it-$$-N, --size 256M unless given) listening on unix:$T/marud.sock
# only. Sets MARUD_PID, MARUD_POOL, MARU_URI. Log: $T/marud.log (appended).
marud_start()
{
	local args=("$@")

	[ -z "$MARUD_PID" ] || fail "marud_start: marud $MARUD_PID already runs"
	if ! args_have pool "${args[@]}"; then
		MARU_POOL_SEQ=$((MARU_POOL_SEQ + 1))
		MARUD_POOL=shm:maru-it-$$-$MARU_POOL_SEQ
		args+=(--pool "$MARUD_POOL")
	fi
	args_have size "${args[@]}" || args+=(--size 256M)
	args_have listen "${args[@]}" || args+=(--listen "unix:$MARUD_SOCK")
	if [ "${MARU_DATA:-}" = rdma ]; then
		args+=(--listen "rdma://${MARU_RDMA_ADDR:-127.0.0.1}:$MARU_RDMA_PORT")
		[ -z "${MARU_RDMA_KEY_FILE:-}" ] || args+=(--key-file "$MARU_RDMA_KEY_FILE")
	fi
	MARUD_ARGS=("${args[@]}")
	marud_launch
}

# marud_launch: (re)start marud with the arguments of the last marud_start.
marud_launch()
{
	rm -f "$MARUD_SOCK"
	echo "=== $(date +%T) marud -d ${MARUD_ARGS[*]}" >>"$T/marud.log"
	"${WRAP[@]}" "${RDMA_ENV[@]}" "$MARUD" -d "${MARUD_ARGS[@]}" >>"$T/marud.log" 2>&1 &
	MARUD_PID=$!
	if ! wait_up "$MARUD_PID" "$MARU_IT_TIMEOUT" test -S "$MARUD_SOCK"; then
		proc_alive "$MARUD_PID" || fail "marud exited at start"
		fail "marud did not create $MARUD_SOCK in ${MARU_IT_TIMEOUT}s"
	fi
	export MARUD_PID MARU_URI
}

# marud_stop: SIGTERM, wait, require a clean exit (status 0).
marud_stop()
{
	local pid=$MARUD_PID

	[ -n "$pid" ] || fail "marud_stop: marud is not running"
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_exit "$pid" "$MARU_IT_TIMEOUT"; then
		kill -KILL "$pid" 2>/dev/null || true
		fail "marud did not exit ${MARU_IT_TIMEOUT}s after SIGTERM"
	fi
	MARUD_PID=
	if [ "$EXIT_RC" != 0 ]; then
		fail "marud exited with status $EXIT_RC after SIGTERM"
	fi
}

# marud_kill: SIGKILL marud (crash); the pool file stays.
marud_kill()
{
	[ -n "$MARUD_PID" ] || fail "marud_kill: marud is not running"
	kill -KILL "$MARUD_PID" 2>/dev/null || true
	wait "$MARUD_PID" 2>/dev/null || true
	MARUD_PID=
}

# marud_restart [kill]: stop marud (cleanly, or SIGKILL with "kill") and start
# it again on the same pool and socket: a new pool generation.
marud_restart()
{
	if [ "${1:-}" = kill ]; then
		marud_kill
	else
		marud_stop
	fi
	marud_launch
}

# marud_signal SIG: send SIG (HUP, USR1, ...) to marud; it must survive it.
marud_signal()
{
	[ -n "$MARUD_PID" ] || fail "marud_signal: marud is not running"
	kill "-$1" "$MARUD_PID"
	sleep 0.2
	proc_alive "$MARUD_PID" || fail "marud died on SIG$1"
}

# pick_port: print a TCP port on 127.0.0.1 that was free a moment ago.
pick_port()
{
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- marufs ----

# marufs_mount [-u URI] [-o opts]: mount marufs -f on a new mountpoint and wait
# for it. The first mount is $MNT=$T/mnt (pid $MARUFS_PID), the second
# $MNT2=$T/mnt2 ($MARUFS_PID2), and so on. $LAST_MNT is the newest one.
# Log: $T/marufs-N.log.
marufs_mount()
{
	local uri=$MARU_URI opts=() n mnt logf pid opt

	OPTIND=1
	while getopts "u:o:" opt; do
		case "$opt" in
		u) uri=$OPTARG ;;
		o) opts+=(-o "$OPTARG") ;;
		*) fail "marufs_mount: usage: marufs_mount [-u URI] [-o opts]" ;;
		esac
	done
	shift $((OPTIND - 1))
	[ $# -eq 0 ] || fail "marufs_mount: unexpected argument '$1'"
	skip_unless_fuse
	if [ -n "${MARU_DATA:-}" ] && [[ " ${opts[*]} " != *data=* ]]; then
		opts+=(-o "data=$MARU_DATA")
	fi
	[ -z "${MARU_RDMA_KEY_FILE:-}" ] || opts+=(-o "key_file=$MARU_RDMA_KEY_FILE")

	MARUFS_SEQ=$((MARUFS_SEQ + 1))
	n=$MARUFS_SEQ
	if [ "$n" -eq 1 ]; then
		mnt=$T/mnt
	else
		mnt=$T/mnt$n
	fi
	logf=$T/marufs-$n.log
	mkdir -p "$mnt"
	echo "=== $(date +%T) marufs -f ${opts[*]} $uri $mnt" >>"$logf"
	"${WRAP[@]}" "${RDMA_ENV[@]}" "$MARUFS" -f "${opts[@]}" "$uri" "$mnt" >>"$logf" 2>&1 &
	pid=$!
	MARUFS_PID_OF[$mnt]=$pid
	MARUFS_LOG_OF[$mnt]=$logf
	if ! wait_up "$pid" "$MARU_IT_TIMEOUT" mountpoint -q "$mnt"; then
		proc_alive "$pid" || fail "marufs exited before mounting $mnt"
		fail "$mnt not mounted after ${MARU_IT_TIMEOUT}s"
	fi
	if [ "$n" -eq 1 ]; then
		MNT=$mnt
		MARUFS_PID=$pid
		export MNT MARUFS_PID
	else
		printf -v "MNT$n" '%s' "$mnt"
		printf -v "MARUFS_PID$n" '%s' "$pid"
		export "MNT$n" "MARUFS_PID$n"
	fi
	LAST_MNT=$mnt
	export LAST_MNT
}

# marufs_umount [MNT]: fusermount3 -u, then require the marufs daemon to exit 0.
marufs_umount()
{
	local mnt=${1:-${MNT:-}} pid logf

	[ -n "$mnt" ] && [ -n "${MARUFS_PID_OF[$mnt]:-}" ] ||
		fail "marufs_umount: '$mnt' is not a harness mount"
	pid=${MARUFS_PID_OF[$mnt]}
	logf=${MARUFS_LOG_OF[$mnt]}
	# A process that just closed a file may hold the mount busy for a moment.
	if ! wait_for 5 fusermount3 -u "$mnt" 2>>"$logf"; then
		fail "fusermount3 -u $mnt failed"
	fi
	if ! wait_exit "$pid" "$MARU_IT_TIMEOUT"; then
		fail "marufs for $mnt still runs ${MARU_IT_TIMEOUT}s after unmount"
	fi
	unset "MARUFS_PID_OF[$mnt]"
	if [ "$EXIT_RC" != 0 ]; then
		fail "marufs for $mnt exited with status $EXIT_RC"
	fi
}

# marufs_kill [MNT]: SIGKILL the marufs daemon of MNT (crash), then detach the
# dead mount so the path is usable again.
marufs_kill()
{
	local mnt=${1:-${MNT:-}} pid

	pid=${MARUFS_PID_OF[$mnt]:-}
	[ -n "$pid" ] || fail "marufs_kill: '$mnt' is not a harness mount"
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	unset "MARUFS_PID_OF[$mnt]"
	fusermount3 -uz "$mnt" 2>/dev/null || true
}

# ---- stats and accounting ----

# maru_stats [MNT]: print the Prometheus stats text. From the mount's
# .maru/stats when MNT (or $MNT) is mounted, otherwise through the hook
# $MARU_STATS_CMD (or $TOOLS/maru_stats when built) run as "CMD $MARU_URI".
maru_stats()
{
	local mnt=${1:-${MNT:-}} tool=${MARU_STATS_CMD:-}

	if [ -n "$mnt" ] && mountpoint -q "$mnt"; then
		cat "$mnt/.maru/stats"
		return
	fi
	if [ -z "$tool" ] && [ -n "$TOOLS" ] && [ -x "$TOOLS/maru_stats" ]; then
		tool=$TOOLS/maru_stats
	fi
	[ -n "$tool" ] || fail "maru_stats: no mount and no stats tool (set MARU_STATS_CMD)"
	$tool "$MARU_URI"
}

# generation_moved G: the mount's .maru/stats shows a marud generation other than G.
generation_moved()
{
	local g
	g=$(awk '$1 == "marud_generation" { print $2 }' "$MNT/.maru/stats" 2>/dev/null) || return 1
	[ -n "$g" ] && [ "$g" != "$1" ]
}

# after_memory_reset WHAT C0: after marud treated the pool as reset (WHAT says
# why) and the mount applied the new generation (its
# marufs_generation_changes_total passed C0: cached names and pages dropped),
# the descriptor open on fd 3 reads EIO (and is closed), the mount's root is
# empty and marud still runs.
after_memory_reset()
{
	local c0=$2
	applied() { [ "$(stat_value marufs_generation_changes_total)" -gt "$c0" ]; }
	wait_for 10 applied || fail "the mount never applied the new generation ($1)"
	if dd of=/dev/null bs=64k count=1 <&3 2>"$T/dd.err"; then
		fail "an old descriptor read after the memory reset ($1)"
	fi
	grep -q "Input/output error" "$T/dd.err" || fail "old descriptor ($1): $(cat "$T/dd.err")"
	exec 3<&-
	assert_eq "$(ls "$MNT")" "" "the directory starts empty after $1"
	proc_alive "$MARUD_PID" || fail "marud is gone after $1"
}

# stat_value NAME [MNT]: value of the first sample of metric NAME (labels
# ignored); fails when the metric is absent. Call it as v=$(stat_value NAME):
# inside another command's arguments its failure would go unnoticed.
stat_value()
{
	local v
	# awk reads to the end: an early exit could SIGPIPE the writer.
	v=$(maru_stats "${2:-}" | awk -v m="$1" \
		'v == "" && ($1 == m || index($1, m "{") == 1) { v = $NF } END { print v }')
	[ -n "$v" ] || fail "metric $1 missing from stats"
	echo "$v"
}

# accounting_check [MNT]: true when the stats say free + used + pending +
# orphaned == capacity (marud exports the verdict as "marud_accounting_ok 1").
accounting_check()
{
	[ "$(maru_stats "${1:-}" | awk '$1 == "marud_accounting_ok" { v = $2 } END { print v }')" = 1 ]
}

# accounting_ok [MNT]: fail unless the accounting is exact.
accounting_ok()
{
	if ! accounting_check "${1:-}"; then
		maru_stats "${1:-}" >&2 || true
		fail "pool accounting is not exact (marud_accounting_ok != 1)"
	fi
}

# wait_accounting_ok [SECONDS] [MNT]: accounting may settle after a close or a
# grace period; poll until exact.
wait_accounting_ok()
{
	local secs=${1:-$MARU_IT_TIMEOUT}
	wait_for "$secs" accounting_check "${2:-}" || accounting_ok "${2:-}"
}

# marud_accounting_ok: the same check without a mount (needs the stats hook).
marud_accounting_ok()
{
	accounting_ok /nonexistent
}

# ---- the EXIT trap ----

harness_cleanup()
{
	local status=$? c mnt pid busy=0

	set +e
	trap - EXIT
	for c in "${CLEANUP_CMDS[@]}"; do
		eval "$c" >/dev/null 2>&1
	done
	for mnt in "${!MARUFS_LOG_OF[@]}"; do
		mountpoint -q "$mnt" && fusermount3 -uz "$mnt" 2>/dev/null
	done
	for pid in "${MARUFS_PID_OF[@]}" $MARUD_PID; do
		proc_alive "$pid" && kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${MARUFS_PID_OF[@]}" $MARUD_PID; do
		if ! wait_for 3 eval '! proc_alive '"$pid"; then
			kill -KILL "$pid" 2>/dev/null
		fi
		wait "$pid" 2>/dev/null
	done
	# whatever else the case left in the background (readers, coprocesses):
	# a leftover holding the case's stdout would keep meson waiting
	for pid in $(jobs -p); do
		kill -KILL "$pid" 2>/dev/null
	done
	rm -f /dev/shm/maru-it-$$-*
	for mnt in "${!MARUFS_LOG_OF[@]}"; do
		mountpoint -q "$mnt" && busy=1
	done
	if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
		for c in "$T"/*.log; do
			[ -e "$c" ] && show_log "$c"
		done
		echo "kept $T (exit status $status)" >&2
	elif [ "$busy" -eq 0 ] && [ "${MARU_IT_KEEP:-0}" = 0 ]; then
		rm -rf --one-file-system "$T"
	fi
	exit "$status"
}
trap harness_cleanup EXIT
