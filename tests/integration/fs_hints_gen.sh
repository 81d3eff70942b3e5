#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/fs_hints_gen.sh: a region extension's memory generation
# at runtime, with the probe extension (tests/ext/) answering from a file:
#   - it stops answering while marud runs: after the grace period marud logs
#     it and refuses opens, creates and maps with EIO, maps of descriptors
#     opened before included (namespace requests still work, .maru/stats
#     says marud_region_in_use 0), and the mounts drop the leases they keep
#     for reopening small files; when it answers
#     again marud treats the pool as reset (a reset could have gone unseen);
#   - it changes: a new generation, EIO on an old descriptor, an empty
#     directory;
#   - a daemonized marud (no -d) that restarts itself after a reset is still
#     a daemon with the same pid and still logs to syslog (caught here by
#     tools/syslog_shim.so), not to its stderr, which is /dev/null.
. "$(dirname "$0")/lib/common.sh"
skip_unless_fuse
: "${PROBE_EXT:?PROBE_EXT must name the probe module}"

GEN=$T/gen
echo 1 >"$GEN"
marud_start --pool "file:$T/pool" --size 64M --region-extension "$PROBE_EXT" \
	--region-extension-config "log=$T/probe.log,gen=$GEN" \
	--memory-generation-poll-ms 20 --memory-generation-grace-ms 300
marufs_mount -o entry_timeout=0 -o attr_timeout=0
resets() { grep -c "treating the pool as reset" "$T/marud.log" || true; }

# 1. the generation stops answering: opens and maps refused, EIO, a log line
mkdir "$MNT/d"
head -c 65536 /dev/urandom >"$MNT/d/a"
[ "$(stat_value marufs_leases_kept)" -ge 1 ] || fail "the new small file's lease was not kept"
assert_eq "$(stat_value marud_region_in_use)" 1 "the region is in use"
g0=$(stat_value marud_generation)
assert_eq "$("$TOOLS/zc_tool" mappath "$MNT/d/a")" mapped "maru_map while the generation is known"
exec 4<"$MNT/d/a"	# opened while known, mapped below while unknown
assert_eq "$("$TOOLS/zc_tool" mapfd 4)" mapped "maru_map of an open descriptor while known"
rm "$GEN"
wait_for 10 grep -q "memory generation unknown for 300 ms: opens and writes refused" \
	"$T/marud.log" || fail "no log line for an unknown generation"
assert_eq "$(stat_value marud_region_in_use)" 0 "out of use while unknown"
# marud tells the mounts (an overflow event): the lease of d/a this mount
# kept for its next open (libmaru's lease cache) must go, or the open below would not
# reach marud
no_kept() { [ "$(stat_value marufs_leases_kept)" = 0 ]; }
wait_for 10 no_kept || fail "the mount still serves opens from kept leases while unknown"
assert_fails_with "Input/output error" "open while the generation is unknown" cat "$MNT/d/a"
assert_fails_with "Input/output error" "create while the generation is unknown" \
	sh -c ': >"$1"' sh "$MNT/d/b"
assert_eq "$("$TOOLS/zc_tool" mappath "$MNT/d/a")" "refused: Input/output error" \
	"maru_map while the generation is unknown"
# a descriptor opened before: its extents wait for marud's word, which is EIO
assert_eq "$("$TOOLS/zc_tool" mapfd 4)" "refused: Input/output error" \
	"maru_map of a descriptor opened before the generation went unknown"
exec 4<&-
ls "$MNT/d" >/dev/null || fail "namespace requests stop while the generation is unknown"
assert_eq "$(resets)" 0 "no reset while it is unknown"
# 2. it answers again: marud cannot know what happened meanwhile, so: reset
echo 1 >"$GEN"
wait_for 10 grep -q "memory generation back after an unknown period" "$T/marud.log" ||
	fail "no reset when the generation came back"
wait_for 10 generation_moved "$g0" || fail "no new generation after the unknown period"
in_use() { [ "$(stat_value marud_region_in_use)" = 1 ]; }
wait_for 10 in_use || fail "the region stays out of use"
assert_eq "$(ls "$MNT")" "" "the directory starts empty after the unknown period"
proc_alive "$MARUD_PID" || fail "marud is gone"

# 3. the generation changes: new generation, EIO on an old descriptor, empty
head -c 65536 /dev/urandom >"$MNT/c"
g1=$(stat_value marud_generation)
c1=$(stat_value marufs_generation_changes_total)
exec 3<"$MNT/c"
echo 2 >"$GEN"
wait_for 10 grep -q "memory generation 1 -> 2" "$T/marud.log" || fail "no log line for 1 -> 2"
wait_for 10 generation_moved "$g1" || fail "no new generation after 1 -> 2"
after_memory_reset "1 -> 2" "$c1"
marufs_umount
marud_stop

# 4. a daemonized marud keeps daemon mode and its log target across the reset
GEN2=$T/gen2 SOCK2=$T/m2.sock PIDF=$T/m2.pid SLOG=$T/syslog
echo 1 >"$GEN2"
SYSLOG_SHIM_FILE=$SLOG LD_PRELOAD=$TOOLS/syslog_shim.so "$MARUD" --pool "file:$T/pool2" \
	--size 64M --listen "unix:$SOCK2" --pidfile "$PIDF" --region-extension "$PROBE_EXT" \
	--region-extension-config "gen=$GEN2" --memory-generation-poll-ms 20 \
	>"$T/m2.out" 2>&1 || fail "the daemonized marud did not start: $(cat "$T/m2.out")"
P2=$(cat "$PIDF")
on_exit "kill -TERM $P2 2>/dev/null || true"
serving() { grep -c "marud .* serving, generation" "$SLOG" || true; }
served_twice() { [ "$(serving)" = 2 ]; }
assert_eq "$(serving)" 1 "the daemon logged to syslog"
echo 2 >"$GEN2"
wait_for 10 served_twice ||
	fail "the restarted daemon did not log to syslog: $(tail -3 "$SLOG")"
grep -q "memory reset: restarting with an empty directory" "$SLOG" || fail "no reset line in syslog"
assert_eq "$(cat "$PIDF")" "$P2" "the restarted daemon keeps its pid"
proc_alive "$P2" || fail "the restarted daemon is gone"
grep -qx -- -d <(tr '\0' '\n' <"/proc/$P2/cmdline") && fail "the restarted daemon runs with -d"
tr '\0' '\n' <"/proc/$P2/cmdline" | grep -qx -- --fresh || fail "restarted without --fresh"
wait_up "$P2" 10 test -S "$SOCK2" || fail "the restarted daemon has no socket"
"$TOOLS/maru_stats" "maru+unix://$SOCK2" >"$T/m2.stats" 2>&1 ||
	fail "the restarted daemon does not serve: $(cat "$T/m2.stats")"
grep -q "^marud_generation" "$T/m2.stats" || fail "no marud_generation from the restarted daemon"
assert_eq "$(wc -c <"$T/m2.out")" 0 "the daemon wrote to the terminal"
kill -TERM "$P2"
wait_for 10 sh -c "! kill -0 $P2 2>/dev/null" || fail "the daemon did not stop"
grep -q "exiting" "$SLOG" || fail "the daemon's exit was not logged to syslog"
