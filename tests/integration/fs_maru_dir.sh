#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_maru_dir: the virtual .maru/ directory of a marufs mount: stats
# (Prometheus text with marud's and marufs's own metrics), pool (static
# facts), events (a blocking stream of "seq time event path" lines that
# poll(2) wakes up on), and that the directory cannot be written, removed or
# shadowed.
. "$(dirname "$0")/lib/common.sh"

marud_start
marufs_mount
marufs_mount

assert_eq "$(ls "$MNT/.maru" | tr '\n' ' ')" "events hints pool stats " ".maru listing"
[ -d "$MNT/.maru" ] && [ ! -e "$MNT/sub/.maru" ] || fail ".maru lookup"

# pool
assert_eq "$(awk '$1 == "uri" { print $2 }' "$MNT/.maru/pool")" "$MARU_URI" "pool uri"
# the path the mounts were asked for (MARU_DATA, as the rdma suite sets it;
# auto on this host is shm)
want_dp=${MARU_DATA:-shm}
[ "$want_dp" != auto ] || want_dp=shm
assert_eq "$(awk '$1 == "data_path" { print $2 }' "$MNT/.maru/pool")" "$want_dp" "data path in use"
[[ "$(awk '$1 == "uuid" { print $2 }' "$MNT/.maru/pool")" =~ ^[0-9a-f-]{36}$ ]] || fail "pool uuid"
[ "$(awk '$1 == "capacity" { print $2 }' "$MNT/.maru/pool")" -ge $((256 << 20)) ] || fail "pool capacity"
for k in align path generation coherence; do
	grep -q "^$k " "$MNT/.maru/pool" || fail "pool lacks $k"
done

# stats: marud's metrics plus marufs's counters, which move
echo x >"$MNT/counted"
cat "$MNT/counted" >/dev/null
[ "$(stat_value marud_pool_capacity_bytes)" -gt 0 ] || fail "marud metrics missing"
pubs=$(stat_value marufs_publishes_total)
[ "$pubs" -ge 1 ] || fail "publishes not counted"
grep -q '^marufs_fuse_ops_total{op="lookup"} [0-9]' "$MNT/.maru/stats" || fail "ops by type"
grep -q '^marufs_lookups_total{result="negative"} ' "$MNT/.maru/stats" || fail "negative lookups"
grep -q '^marufs_invalidations_total{kind="entry"} ' "$MNT/.maru/stats" || fail "invalidations"
echo y >"$MNT/counted2"
[ "$(stat_value marufs_publishes_total)" -gt "$pubs" ] || fail "publish counter did not move"
# stats read in small pieces is one consistent text
assert_eq "$(dd if="$MNT/.maru/stats" bs=7 status=none | grep -c '^# TYPE')" \
	"$(grep -c '^# TYPE' "$MNT/.maru/stats")" "stats read in 7-byte pieces"

# events: a read blocks and returns what happens, on any mount of the pool.
# The reader stops by itself once it has the last event: killing a reader
# blocked in read() makes the kernel send an INTERRUPT, and when that races
# the read's own reply libfuse keeps the interrupt request until the session
# ends, which an ASan build then reports as a leak of libfuse's.
# Its cursor starts at its open: the changes wait until it is open.
python3 - "$MNT2/.maru/events" "$T/events" "$T/events.open" <<'PY' &
import sys
with open(sys.argv[1], "rb", buffering=0) as f, open(sys.argv[2], "wb") as out:
    open(sys.argv[3], "w").close()
    seen = b""
    while b" unlink /ev2\n" not in seen:
        chunk = f.read(65536)
        if not chunk:
            break
        seen += chunk
        out.write(chunk)
        out.flush()
PY
evpid=$!
on_exit "kill $evpid"
wait_for 30 test -e "$T/events.open" || fail "the events reader did not open .maru/events"
echo a >"$MNT/ev1"
mv "$MNT/ev1" "$MNT/ev2"
mkdir "$MNT/evd"
rm "$MNT/ev2"
wait_for 5 grep -q ' unlink /ev2$' "$T/events" || fail "events: $(cat "$T/events")"
wait "$evpid" || fail "the events reader failed"
grep -Eq '^[0-9]+ [0-9]+\.[0-9]{9} publish /ev1$' "$T/events" || fail "publish line: $(cat "$T/events")"
grep -q ' rename /ev1 -> /ev2$' "$T/events" || fail "rename line"
grep -q ' mkdir /evd$' "$T/events" || fail "mkdir line"
awk 'NR > 1 && $1 <= prev { exit 1 } { prev = $1 }' "$T/events" || fail "event seqs not increasing"

# poll(2) and an interrupted blocking read
python3 - "$MNT" <<'PY' || fail "events poll"
import os, select, signal, sys, time
m = sys.argv[1]
fd = os.open(f"{m}/.maru/events", os.O_RDONLY)
p = select.poll()
p.register(fd, select.POLLIN)
assert p.poll(200) == [], "poll says readable with no event"
with open(f"{m}/polled", "w") as f:
    f.write("x")
assert p.poll(5000) == [(fd, select.POLLIN)], "poll did not wake up"
line = os.read(fd, 65536).decode()
assert " publish /polled\n" in line, line
class Alarm(Exception):
    pass
def on_alarm(*a):
    raise Alarm()
signal.signal(signal.SIGALRM, on_alarm)
signal.setitimer(signal.ITIMER_REAL, 0.3)
t = time.time()
try:
    os.read(fd, 65536)
    raise SystemExit("blocking read returned without an event")
except Alarm:
    pass
assert time.time() - t < 3, "read did not notice the signal"
os.close(fd)
PY

# read-only and not replaceable
assert_fails "write to .maru/stats" bash -c "echo x >'$MNT/.maru/stats'"
assert_fails "create in .maru" touch "$MNT/.maru/new"
assert_fails "rm -r .maru" rm -rf "$MNT/.maru"
assert_fails "mkdir .maru" mkdir "$MNT/.maru"
assert_fails "rename over .maru" mv "$MNT/counted" "$MNT/.maru"
[ -f "$MNT/.maru/stats" ] || fail ".maru damaged"

marufs_umount "$MNT2"
marufs_umount
marud_stop
