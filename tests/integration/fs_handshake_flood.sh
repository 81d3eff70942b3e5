#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_handshake_flood: connections that never authenticate cannot hold marud
# hostage (marud(8), HANDSHAKE LIMITS). On loopback TCP with a key: 2,000
# idle connections from ten source addresses and 200 slow ones from two
# more (half announce an 8 MiB AUTH frame, half trickle the AUTH header a
# byte a second), every one marud closes opened again, for the whole case
# (lib/hsflood.py). Meanwhile:
#  - a new mount with the right key comes up within a second (the time
#    without the flood is measured first and printed beside it);
#  - a mount whose sockets are reset (ss -K) reconnects and reads its file;
#  - marud's thread count (/proc/PID/task) stays bounded, and so do its
#    open descriptors (handshake-max, not the flood's size);
#  - no connection of the flood stays open longer than the handshake
#    deadline, and one idle connection alone is closed at it (5 s);
#  - the refusals are logged with counts: a few lines, not one per
#    connection;
# and the words: the mount's log names its data path ("tcp"), marud's -d
# lines carry the time, and a client without a key and one with the wrong
# key get different messages (client and marud).
#
# Real: marud, marufs, TCP sockets over loopback (127.0.0.x sources),
# socket resets (ss -K, SOCK_DESTROY). Nothing is emulated; the multi-host
# version of this case (another network namespace) is in the multihost suite.
. "$(dirname "$0")/lib/common.sh"

skip_unless_fuse
skip_unless_cmd python3 ss
ss -K -tn 'dport = :1' >/dev/null 2>&1 || skip "ss -K (SOCK_DESTROY) not available"

ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 4096 ] || skip "fd limit $(ulimit -n) too low for the flood"

FLOOD_S=16
head -c 64 /dev/urandom >"$T/key"
chmod 600 "$T/key"
head -c 64 /dev/urandom >"$T/other"
chmod 600 "$T/other"
PORT=$(pick_port)
URI=maru://127.0.0.1:$PORT

marud_start --key-file "$T/key" --listen "unix:$MARUD_SOCK" --listen "tcp://127.0.0.1:$PORT"

ms_now() { echo $(($(date +%s%N) / 1000000)); }

# mount_timed: mount with the key over tcp, and one listing through it;
# MOUNT_MS: how long that took. (Not in a subshell: the harness must know
# the mount to take it down.)
mount_timed()
{
	local t0
	t0=$(ms_now)
	marufs_mount -u "$URI" -o data=tcp -o "key_file=$T/key"
	ls "$LAST_MNT" >/dev/null || fail "ls $LAST_MNT"
	MOUNT_MS=$(($(ms_now) - t0))
}

ntasks() { ls "/proc/$MARUD_PID/task" | wc -l; }
nfds() { ls "/proc/$MARUD_PID/fd" | wc -l; }

# --- before the flood ---
mount_timed	# $MNT
quiet_ms=$MOUNT_MS
echo hello >"$MNT/held.txt" || fail "write through the first mount"
grep -q "(data path tcp," "$T/marufs-1.log" ||
	fail "the mount's log does not name its data path: $(grep mounted "$T/marufs-1.log")"
grep -qE '^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z marud: ' \
	"$T/marud.log" || fail "marud -d lines carry no time: $(head -n 3 "$T/marud.log")"
tasks0=$(ntasks)
fds0=$(nfds)
log "before the flood: mount up in ${quiet_ms} ms, marud has $tasks0 threads, $fds0 fds"
refused0=$(grep -c "refused" "$T/marud.log" || true)

# --- the flood ---
idle_src=$(echo 127.0.0.{2..11} | tr ' ' ,)
slow_src=127.0.0.12,127.0.0.13
python3 "$SRCDIR/tests/integration/lib/hsflood.py" 127.0.0.1 "$PORT" "$FLOOD_S" 1 \
	2000 "$idle_src" 200 "$slow_src" >"$T/flood.out" 2>&1 &
FLOOD_PID=$!
on_exit "kill $FLOOD_PID 2>/dev/null; wait $FLOOD_PID 2>/dev/null"
# how long marud holds each of the flood's connections, seen from its side
python3 "$SRCDIR/tests/integration/lib/heldwatch.py" "$PORT" "$FLOOD_PID" 0.5 127.0.0.1 \
	>"$T/held.out" 2>&1 &
WATCH_PID=$!
on_exit "kill $WATCH_PID 2>/dev/null"

# sample marud's threads and fds for the whole flood
(
	max_t=0 max_f=0
	while proc_alive "$FLOOD_PID"; do
		t=$(ls "/proc/$MARUD_PID/task" 2>/dev/null | wc -l)
		f=$(ls "/proc/$MARUD_PID/fd" 2>/dev/null | wc -l)
		[ "$t" -gt "$max_t" ] && max_t=$t
		[ "$f" -gt "$max_f" ] && max_f=$f
		echo "$max_t $max_f" >"$T/peak"
		sleep 0.2
	done
) &
SAMPLER_PID=$!
on_exit "kill $SAMPLER_PID 2>/dev/null"

wait_for 10 grep -q "^t=3 " "$T/flood.out" || fail "the flood did not start: $(cat "$T/flood.out")"
log "flood: $(tail -n 1 "$T/flood.out")"

# a new mount with the right key comes up
mount_timed	# $MNT2
flood_ms=$MOUNT_MS
limit_ms=$((quiet_ms * 2 > 1000 ? quiet_ms * 2 : 1000))
log "during the flood: a new mount up in ${flood_ms} ms (${quiet_ms} ms without it)"
[ "$flood_ms" -le "$limit_ms" ] ||
	fail "a new mount took ${flood_ms} ms under the flood (limit ${limit_ms} ms)"
echo two >"$MNT2/new.txt" || fail "write through the mount made during the flood"

# the first mount's sockets are reset: it reconnects
mount_ports() # the local ports of the first mount's sockets to marud
{
	ss -tnpH state established "( dport = :$PORT )" |
		awk -v pid="pid=${MARUFS_PID}," 'index($0, pid) { n = split($3, a, ":"); print a[n] }' |
		sort -n | tr '\n' ' '
}
ports=$(mount_ports)
[ -n "$ports" ] || fail "no tcp socket of the first mount (pid $MARUFS_PID) found"
for p in $ports; do
	ss -K -tn "( sport = :$p and dport = :$PORT )" >/dev/null
done
for p in $ports; do
	[ -z "$(ss -tnH state established "( sport = :$p and dport = :$PORT )")" ] ||
		fail "ss -K did not reset port $p"
done
log "reset $(echo $ports | wc -w) socket(s) of the first mount (ports $ports)"
t0=$(ms_now)
wait_for 10 grep -q two "$MNT/new.txt" 2>/dev/null ||
	fail "the reset mount did not reconnect under the flood: $(tail -n 5 "$T/marufs-1.log")"
log "the reset mount read a new file after $(($(ms_now) - t0)) ms"
assert_eq "$(cat "$MNT/held.txt")" hello "the reset mount reads its old file"
now_ports=$(mount_ports)
[ -n "$now_ports" ] || fail "the reset mount has no socket to marud"
for p in $ports; do
	case " $now_ports " in *" $p "*) fail "the reset mount still uses port $p" ;; esac
done
log "it reconnected on ports $now_ports"

wait_exit "$FLOOD_PID" $((FLOOD_S + 20)) || fail "the flood tool did not end"
[ "$EXIT_RC" = 0 ] || fail "the flood tool failed: $(tail -n 5 "$T/flood.out")"
wait "$SAMPLER_PID" 2>/dev/null
wait "$WATCH_PID" || fail "heldwatch: $(cat "$T/held.out")"
read -r max_tasks max_fds <"$T/peak"
done_line=$(grep '^done ' "$T/flood.out")
log "flood: $done_line; marud peaked at $max_tasks threads (from $tasks0), $max_fds fds (from $fds0); held at most: $(cat "$T/held.out")"
closed=$(echo "$done_line" | sed -n 's/.* closed=\([0-9]*\).*/\1/p')
maxheld=$(sed -n 's/^maxheld=\([0-9]*\).*/\1/p' "$T/held.out")
[ "${closed:-0}" -ge 2000 ] ||
	fail "marud closed only ${closed:-0} of the flood's connections"
# marud held none past the handshake deadline (5 s; its timer runs at least
# once a second, the samples are 0.5 s apart)
[ "${maxheld:-99}" -le 6 ] ||
	fail "marud held a connection that never authenticated ${maxheld} s"
# bounded: the loops plus a few connection threads of the real mounts
[ "$max_tasks" -le $((tasks0 + 12)) ] ||
	fail "marud's threads grew from $tasks0 to $max_tasks under the flood"
# descriptors: handshake-max (256) unauthenticated, as many closed but not
# yet ended, the mounts' own
[ "$max_fds" -le $((fds0 + 2 * 256 + 32)) ] ||
	fail "marud held $max_fds fds under the flood (from $fds0)"

# the refusals: counted, a few lines (windows of 10 s), not one per connection
sleep 1
lines=$(($(grep -c "refused" "$T/marud.log") - refused0))
log "$lines refusal lines for $closed closed connections"
grep -qE "refused [0-9]+ connections from 127\.0\.0\.[0-9]+ in the last 10 s: " "$T/marud.log" ||
	fail "no counted refusal line: $(grep refused "$T/marud.log" | tail -n 5)"
grep -q "handshake limit per source address" "$T/marud.log" ||
	fail "no refusal for the per-source limit"
grep -q "frame before the handshake over its size cap" "$T/marud.log" ||
	fail "no refusal for the 8 MiB AUTH frame"
[ "$lines" -le 120 ] || fail "$lines refusal lines: not rate-limited"

# one idle connection alone (no flood to push it out): closed at the 5 s deadline
python3 - 127.0.0.1 "$PORT" >"$T/idle.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])),
                             source_address=("127.0.0.20", 0))
t = time.monotonic()
s.settimeout(15)
try:
    b = s.recv(1)
except OSError:
    b = b""
print(f"closed={not b} after={time.monotonic() - t:.1f}")
PY
IDLE_PID=$!
on_exit "kill $IDLE_PID 2>/dev/null"

# no key and the wrong key: told apart on both sides
assert_fails "a client without a key" env -u MARU_KEY_FILE "$TOOLS/maru_stats" "$URI"
grep -q "no key: marud requires one" "$T/assert_fails.err" ||
	fail "the client without a key was not told so: $(cat "$T/assert_fails.err")"
MARU_KEY_FILE=$T/other assert_fails "a client with the wrong key" "$TOOLS/maru_stats" "$URI"
grep -q "wrong key" "$T/assert_fails.err" ||
	fail "the client with the wrong key was not told so: $(cat "$T/assert_fails.err")"
wait_for 3 grep -q "client sent no key" "$T/marud.log" || fail "marud did not log the missing key"
wait_for 3 grep -q "refused a connection from 127.0.0.1: wrong key" "$T/marud.log" ||
	fail "marud did not log the wrong key"

wait "$IDLE_PID" || fail "the idle connection: $(cat "$T/idle.out")"
log "an idle connection alone: $(cat "$T/idle.out")"
grep -qE "closed=True after=(4\.[5-9]|5\.[0-9]|6\.[0-5])" "$T/idle.out" ||
	fail "an idle connection was not closed at the 5 s deadline: $(cat "$T/idle.out")"
wait_for 3 grep -q "127.0.0.20: handshake not done by its deadline" "$T/marud.log" ||
	fail "no refusal line for the handshake deadline"

assert_eq "$(cat "$MNT2/held.txt")" hello "the second mount reads"
marufs_umount "$MNT2"
marufs_umount "$MNT"
marud_stop
