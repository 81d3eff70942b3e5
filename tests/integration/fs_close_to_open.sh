#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_close_to_open: marufs-design(7) §4.2 across two mounts of one pool, with no
# retries and no sleeps. Mount B first looks a name up and finds it missing
# (the kernel caches that negative entry); mount A then creates, writes and
# closes it; a stat and a read on B issued right after A's close returned
# must see the new file with its size and bytes, every time. Likewise a
# rename on A is seen by B at once (old name gone, new name there, after B
# had cached both), and an unlink on A makes B's stat fail with ENOENT. Both
# directions (B's negative entry in a subdirectory too). marud's STATS must
# show both mounts' event streams acknowledging. Renames racing in one
# directory on both mounts (each mount's notifier stuck behind the directory
# lock of its own rename) must not each sit out marud's bound: marud lets
# such a pair go at once. Finally, with mount B's
# marufs stopped (SIGSTOP), a publish on A still returns, after marud's
# bound (set short here); B is then dropped from the wait, so a second
# publish and a rename return at once; marud counts the missed deadline
# and the drop, and B rejoins once it runs again and catches up.
. "$(dirname "$0")/lib/common.sh"

PUBLISH_MS=400
OTHER_MS=50
marud_start --ack-timeout-publish-ms "$PUBLISH_MS" --ack-timeout-ms "$OTHER_MS"
marufs_mount
marufs_mount

mkdir "$MNT/sub"
wait_for 5 test -d "$MNT2/sub" || fail "subdirectory not visible on the second mount"

python3 - "$MNT" "$MNT2" <<'PY' || fail "close-to-open across mounts"
import errno, os, sys

ROUNDS = 300
mnt_a, mnt_b = sys.argv[1], sys.argv[2]


def missing(path, what):
    try:
        os.stat(path)
    except FileNotFoundError:
        return
    raise AssertionError(f"{what}: {path} exists")


def publish(path, data):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def seen(path, data, what):
    st = os.stat(path)
    assert st.st_size == len(data), f"{what}: {path} size {st.st_size}, not {len(data)}"
    with open(path, "rb") as f:
        got = f.read()
    assert got == data, f"{what}: {path} holds other bytes"


for i in range(ROUNDS):
    # alternate directions and directories so both mounts' notifiers are tested
    a, b = (mnt_a, mnt_b) if i % 2 == 0 else (mnt_b, mnt_a)
    d = "sub/" if i % 3 == 0 else ""
    name, name2 = f"{d}n{i}", f"{d}r{i}"
    data = os.urandom(1000 + i)
    what = f"round {i}"

    missing(f"{b}/{name}", what + " before publish")
    missing(f"{b}/{name2}", what + " before rename")
    publish(f"{a}/{name}", data)
    seen(f"{b}/{name}", data, what + " after publish")

    os.rename(f"{a}/{name}", f"{a}/{name2}")
    missing(f"{b}/{name}", what + " old name after rename")
    seen(f"{b}/{name2}", data, what + " new name after rename")

    os.unlink(f"{a}/{name2}")
    missing(f"{b}/{name2}", what + " after unlink")
print(f"{ROUNDS} rounds of publish, rename, unlink seen at once on the other mount")
PY

acking=$(stat_value marud_ack_subscribers)
[ "$acking" -ge 2 ] || fail "expected both mounts to acknowledge events, marud says $acking"
timeouts=$(stat_value marud_ack_timeouts_total)
log "acknowledging subscribers: $acking, ack timeouts: $timeouts"

# Write-then-rename from both mounts into one directory, as engines on two
# nodes do: the pairs of renames that wait for each other's mount are let go
# at once, so hardly any wait runs into marud's bound.
python3 - "$MNT" "$MNT2" <<'PY' >"$T/race.out" || fail "concurrent renames"
import os, sys, threading, time
mounts, secs, counts = sys.argv[1:3], 2.0, [0, 0]
def worker(m, k):
    end = time.monotonic() + secs
    i = 0
    while time.monotonic() < end:
        tmp = f"{mounts[m]}/race.{m}.{k}.tmp"
        with open(tmp, "wb") as f:
            f.write(b"r" * 100)
        os.rename(tmp, f"{mounts[m]}/race{i % 8}")
        counts[m] += 1
        i += 1
th = [threading.Thread(target=worker, args=(m, k)) for m in (0, 1) for k in range(2)]
[t.start() for t in th]
[t.join() for t in th]
print(counts[0] + counts[1])
PY
renames=$(cat "$T/race.out")
raced=$(stat_value marud_ack_timeouts_total)
log "concurrent renames: $renames, ack timeouts $((raced - timeouts))"
[ $(((raced - timeouts) * 10)) -le "$renames" ] ||
	fail "$((raced - timeouts)) of $renames racing renames waited out marud's bound"
timeouts=$raced

# A mount that stops acknowledging delays the others by one bound, once.
drops=$(stat_value marud_ack_drops_total)
rejoins=$(stat_value marud_ack_rejoins_total)
on_exit "kill -CONT $MARUFS_PID2 2>/dev/null"
kill -STOP "$MARUFS_PID2"
python3 - "$MNT" "$PUBLISH_MS" <<'PY' || { kill -CONT "$MARUFS_PID2"; fail "bounded waits"; }
import os, sys, time
a, pub_ms = sys.argv[1], int(sys.argv[2])
def publish(name):
    t = time.monotonic()
    with open(f"{a}/{name}", "wb") as f:
        f.write(b"x" * 4096)
    return (time.monotonic() - t) * 1000
pub = publish("stalled")
pub2 = publish("stalled3")
t = time.monotonic()
os.rename(f"{a}/stalled", f"{a}/stalled2")
ren = (time.monotonic() - t) * 1000
print(f"with the other mount stopped: publish {pub:.0f} ms, then {pub2:.0f} ms, "
      f"rename {ren:.0f} ms")
assert pub_ms * 0.9 <= pub < pub_ms + 3000, f"publish returned after {pub:.0f} ms"
assert pub2 < pub_ms / 2, f"second publish waited {pub2:.0f} ms for a dropped mount"
assert ren < pub_ms / 2, f"rename waited {ren:.0f} ms for a dropped mount"
PY
kill -CONT "$MARUFS_PID2"
after=$(stat_value marud_ack_timeouts_total)
[ "$after" -ge $((timeouts + 1)) ] ||
	fail "ack timeouts went from $timeouts to $after, expected at least 1 more"
[ "$(stat_value marud_ack_drops_total)" -ge $((drops + 1)) ] ||
	fail "marud did not count the stopped mount's drop"
rejoined() { [ "$(stat_value marud_ack_rejoins_total)" -ge "$1" ]; }
wait_for 10 rejoined $((rejoins + 1)) ||
	fail "the stopped mount did not rejoin once it ran again"
# B caught up on what it missed while stopped.
wait_for 5 test -e "$MNT2/stalled2" || fail "the stopped mount never caught up"
[ ! -e "$MNT2/stalled" ] || fail "the stopped mount still sees the old name"

marufs_umount "$MNT2"
marufs_umount
marud_stop
