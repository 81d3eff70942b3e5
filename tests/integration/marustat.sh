#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# marustat: the iostat-style command against a real marud and mount. Its
# totals line moves by the files written (creates, publishes, write ops,
# MB on the mount's data path), its interval lines' rates add up to the
# same workload, occupancy agrees with df, evictions show when a small
# pool overflows, and bad sources fail with a clear message and status 1
# (usage errors 2). It reads a mount, both HTTP endpoints and marud's
# STATS through libmaru.
. "$(dirname "$0")/lib/common.sh"

[ -x "${MARUSTAT:-}" ] || fail "MARUSTAT not set to the built marustat"
dp=${MARU_DATA:-shm}
[ "$dp" != auto ] || dp=shm

# col FILE NAME [LINE]: the value of column NAME (by the header) on data
# line LINE (default: the last one) of marustat's output in FILE.
col()
{
	awk -v n="$2" -v want="${3:-0}" '
		$1 == "time" { for (i = 1; i <= NF; i++) if ($i == n) c = i; next }
		{ rows++; v[rows] = $c }
		END { if (!c || !rows) exit 1; print v[want ? want : rows] }' "$1"
}

# fails_rc RC TEXT CMD...: CMD exits with RC and says TEXT on stderr.
fails_rc()
{
	local want=$1 text=$2 rc=0
	shift 2
	"$@" >/dev/null 2>"$T/err" || rc=$?
	assert_eq "$rc" "$want" "exit status of '$*' ($(cat "$T/err"))"
	grep -q -- "$text" "$T/err" || fail "'$*' did not say '$text': $(cat "$T/err")"
}

# A 32 MiB pool: 40 MiB of unleased files later make it evict.
P1=$(pick_port)
marud_start --size 32M --metrics-listen "127.0.0.1:$P1"
P2=$(pick_port)
marufs_mount -o "metrics=127.0.0.1:$P2"

"$MARUSTAT" -p "$MNT" >"$T/t0" || fail "marustat on the mount failed"
[ "$(grep -c . "$T/t0")" = 2 ] || fail "totals: header and one line expected: $(cat "$T/t0")"
for f in lookup open create read write pub shm_MB tcp_MB rdma_MB hit% evict occ% p50 p99; do
	col "$T/t0" "$f" >/dev/null || fail "no column $f: $(cat "$T/t0")"
done

# 5 files of 1 MiB in 64 KiB writes, read back once.
for i in 1 2 3 4 5; do
	dd if=/dev/urandom of="$MNT/f$i" bs=64k count=16 status=none
	cat "$MNT/f$i" >/dev/null
done
"$MARUSTAT" -p "$MNT" >"$T/t1" || fail "marustat (after writes) failed"
d() { echo $(( $(col "$T/t1" "$1" | cut -d. -f1) - $(col "$T/t0" "$1" | cut -d. -f1) )); }
assert_eq "$(d create)" 5 "creates counted"
assert_eq "$(d pub)" 5 "publishes counted"
[ "$(d write)" -ge 5 ] || fail "write ops moved by $(d write), wanted >= 5"
mb=$(awk -v a="$(col "$T/t0" "${dp}_MB")" -v b="$(col "$T/t1" "${dp}_MB")" 'BEGIN { print b - a }')
awk -v m="$mb" 'BEGIN { exit !(m >= 5.0 && m <= 12.0) }' ||
	fail "${dp}_MB moved by $mb MiB for 5 MiB written and 5 read"
# occupancy is df's used / size (published files stay in the pool)
read -r blocks bfree < <(stat -f -c '%b %f' "$MNT")
occ=$(col "$T/t1" occ%)
awk -v o="$occ" -v b="$blocks" -v f="$bfree" 'BEGIN { u = 100 * (b - f) / b; exit !(o - u < 0.3 && u - o < 0.3) }' ||
	fail "occ% $occ is not df's $(( 100 * (blocks - bfree) / blocks ))%"

# The latency columns come from the FUSE request histogram.
[ "$(col "$T/t1" p99)" != - ] || fail "no p99 after a workload: $(cat "$T/t1")"
# The same figures over HTTP: the mount's endpoint, and marud's (whose
# publishes are the pool's).
"$MARUSTAT" -p "127.0.0.1:$P2" >"$T/h2" || fail "marustat on the mount's endpoint failed"
assert_eq "$(col "$T/h2" create)" "$(col "$T/t1" create)" "creates over HTTP"
assert_eq "$(col "$T/h2" shm_MB)" "$(col "$T/t1" shm_MB)" "shm MB over HTTP"
"$MARUSTAT" -p "http://127.0.0.1:$P1/metrics" >"$T/h1" || fail "marustat on marud's endpoint failed"
assert_eq "$(col "$T/h1" pub)" "$(stat_value marud_publishes_total)" "marud's publishes over HTTP"
assert_eq "$(col "$T/h1" shm_MB)" - "marud does not see shm bytes"
[ "$(col "$T/h1" p50)" != - ] || fail "no p50 from marud's request histogram: $(cat "$T/h1")"

# And from marud itself through libmaru, by the pool's URI: marud's
# figures, without marustat's own client's.
"$MARUSTAT" -p "$MARU_URI" >"$T/p1" || fail "marustat -p $MARU_URI failed"
assert_eq "$(col "$T/p1" pub)" "$(stat_value marud_publishes_total)" "publishes through libmaru"
assert_eq "$(col "$T/p1" shm_MB)" - "marustat's own client's bytes are left out"

# Interval lines: rates over 1 s whose sum is the workload done meanwhile.
# (5 lines: the 4 files are done well before the last one, even on a
# loaded machine, where an interval may also stretch past its second)
"$MARUSTAT" -p "$MNT" 1 5 >"$T/iv" &
spid=$!
on_exit "kill $spid 2>/dev/null"
sleep 0.3
for i in 6 7 8 9; do
	dd if=/dev/urandom of="$MNT/f$i" bs=64k count=16 status=none
done
wait "$spid" || fail "marustat 1 5 failed"
assert_eq "$(grep -vc '^time' "$T/iv")" 5 "five interval lines"
pubs=$(awk '$1 == "time" { for (i = 1; i <= NF; i++) if ($i == "pub") c = i; next } { s += $c } END { print s }' "$T/iv")
awk -v s="$pubs" 'BEGIN { exit !(s >= 2.5 && s <= 4.5) }' || fail "pub/s over 5 lines sums to $pubs, wanted 4: $(cat "$T/iv")"
grep -q '\.[0-9]' "$T/iv" || fail "interval lines are not rates: $(cat "$T/iv")"

# A small pool that overflows: evictions appear in the column.
for i in $(seq 10 19); do
	dd if=/dev/zero of="$MNT/big$i" bs=1M count=4 status=none || fail "write big$i"
done
"$MARUSTAT" -p "$MNT" >"$T/t2" || fail "marustat (after overflow) failed"
[ "$(col "$T/t2" evict)" -gt 0 ] || fail "no evictions reported after 40 MiB into 32 MiB: $(cat "$T/t2")"
assert_eq "$(col "$T/t2" evict)" "$(stat_value marud_evictions_total)" "evictions = marud_evictions_total"

# Errors: not a mount, a subdirectory of one, nothing listening, not metrics.
mkdir -p "$T/plain" "$MNT/sub"
fails_rc 1 "not a marufs mount" "$MARUSTAT" -p "$T/plain"
fails_rc 1 "not a marufs mount" "$MARUSTAT" -p "$MNT/sub"
fails_rc 1 "No such file" "$MARUSTAT" -p "$T/none"
port=$(pick_port)
fails_rc 1 "cannot reach 127.0.0.1 port $port" "$MARUSTAT" -p "127.0.0.1:$port"
fails_rc 1 'answered "HTTP/1.[01] 404' "$MARUSTAT" -p "http://127.0.0.1:$P1/nothing"
fails_rc 1 "https is not supported" "$MARUSTAT" -p "https://127.0.0.1:$port/metrics"
fails_rc 1 "cannot connect to marud" "$MARUSTAT" -p "maru+unix://$T/no.sock"
fails_rc 2 "bad interval" "$MARUSTAT" -p "$MNT" 0
fails_rc 2 "bad count" "$MARUSTAT" -p "$MNT" 1 x
