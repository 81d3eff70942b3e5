#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# examples/quickstart.sh: one-command local setup. Builds marud and marufs if
# needed, starts marud on an embedded shm pool (Unix socket and pid file under
# /run/marud, loopback TCP on 7450), mounts marufs at /mnt/maru and says how
# to use and stop it. Running it again while mounted only says so.
#
#	examples/quickstart.sh [start]	start (default)
#	examples/quickstart.sh stop	unmount, stop marud, drop the pool
#	examples/quickstart.sh status
#
# Environment (defaults in brackets): MNT [/mnt/maru], BUILD [<source>/build],
# RUNDIR [/run/marud], MARU_POOL [shm:marud-pool], MARU_SIZE [marud's default:
# min(RAM/4, free /dev/shm / 2)], MARU_TCP [tcp://127.0.0.1:7450; empty: none],
# MARUFS_OPTS [allow_other].

set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$SRC/build}
MNT=${MNT:-/mnt/maru}
RUNDIR=${RUNDIR:-/run/marud}
MARU_POOL=${MARU_POOL:-shm:marud-pool}
MARU_SIZE=${MARU_SIZE:-}
MARU_TCP=${MARU_TCP-tcp://127.0.0.1:7450}
MARUFS_OPTS=${MARUFS_OPTS-allow_other}

SOCK=$RUNDIR/marud.sock
PIDFILE=$RUNDIR/marud.pid
MARUD_LOG=$RUNDIR/marud.log
MARUFS_LOG=$RUNDIR/marufs.log
URI=maru+unix://$SOCK

die()
{
	echo "quickstart: $*" >&2
	exit 1
}

# Seconds to wait for each daemon.
WAIT=10

build()
{
	if [ ! -d "$BUILD/meson-private" ]; then
		meson setup "$BUILD" "$SRC"
	fi
	ninja -C "$BUILD"
}

# The pid marud wrote, if that process still runs.
marud_pid()
{
	local pid

	[ -r "$PIDFILE" ] || return 1
	read -r pid <"$PIDFILE" || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

# wait_until PID CMD...: poll CMD for $WAIT seconds while PID lives.
wait_until()
{
	local pid=$1 i
	shift
	for ((i = 0; i < WAIT * 10; i++)); do
		"$@" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

start_marud()
{
	local args=(-d --pool "$MARU_POOL" --listen "unix:$SOCK" --pidfile "$PIDFILE")
	local pid

	if pid=$(marud_pid) && [ -S "$SOCK" ]; then
		echo "marud already runs (pid $pid, socket $SOCK)"
		return
	fi
	[ -z "$MARU_TCP" ] || args+=(--listen "$MARU_TCP")
	[ -z "$MARU_SIZE" ] || args+=(--size "$MARU_SIZE")
	mkdir -p "$RUNDIR"
	rm -f "$SOCK"
	# setsid: the daemons outlive this shell and its terminal.
	setsid "$BUILD/daemon/marud" "${args[@]}" </dev/null >>"$MARUD_LOG" 2>&1 &
	pid=$!
	if ! wait_until "$pid" test -S "$SOCK"; then
		tail -n 20 "$MARUD_LOG" >&2
		die "marud did not start (log: $MARUD_LOG)"
	fi
	echo "marud started (pid $pid, pool $MARU_POOL, socket $SOCK, log $MARUD_LOG)"
}

mount_marufs()
{
	local opts=() pid

	[ -z "$MARUFS_OPTS" ] || opts=(-o "$MARUFS_OPTS")
	mkdir -p "$MNT"
	setsid "$BUILD/fs/marufs" -f "${opts[@]}" "$URI" "$MNT" \
		</dev/null >>"$MARUFS_LOG" 2>&1 &
	pid=$!
	if ! wait_until "$pid" mountpoint -q "$MNT"; then
		tail -n 20 "$MARUFS_LOG" >&2
		die "marufs did not mount $MNT (log: $MARUFS_LOG)"
	fi
	echo "marufs mounted $URI on $MNT (pid $pid, log $MARUFS_LOG)"
}

usage_hint()
{
	cat <<EOF

Try it:
  cp /etc/os-release $MNT/ && ls -l $MNT
  getfattr -d -m '^user\\.maru\\.' $MNT/os-release
  cat $MNT/.maru/stats            # Prometheus metrics; also .maru/pool, .maru/events
  df -h $MNT
Point an engine's file KV cache at a directory of $MNT (see README.md).
Stop:  $0 stop
EOF
}

start()
{
	if mountpoint -q "$MNT"; then
		echo "$MNT is already mounted; nothing to do."
		usage_hint
		return
	fi
	if [ ! -x "$BUILD/daemon/marud" ] || [ ! -x "$BUILD/fs/marufs" ]; then
		build
	fi
	start_marud
	mount_marufs
	usage_hint
}

stop()
{
	local pid i

	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" || die "cannot unmount $MNT (busy? see fuser -vm $MNT)"
		echo "unmounted $MNT"
	fi
	if pid=$(marud_pid); then
		kill -TERM "$pid"
		for ((i = 0; i < WAIT * 10; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && die "marud (pid $pid) still runs"
		echo "stopped marud (pid $pid)"
	fi
	# The directory does not survive a restart anyway: give the RAM back.
	case "$MARU_POOL" in
	shm:*) rm -f "/dev/shm/${MARU_POOL#shm:}" ;;
	esac
	rm -f "$PIDFILE"
}

status()
{
	local pid

	if pid=$(marud_pid); then
		echo "marud: running (pid $pid, socket $SOCK)"
	else
		echo "marud: not running"
	fi
	if mountpoint -q "$MNT"; then
		echo "marufs: mounted on $MNT"
	else
		echo "marufs: not mounted on $MNT"
	fi
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 [start|stop|status]" ;;
esac
