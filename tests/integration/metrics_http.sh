#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# metrics_http: marud --metrics-listen and marufs -o metrics= serve GET
# /metrics (Prometheus text, every sample labelled with the pool) with the
# families of .maru/stats and the latency histograms; counters, hits and
# misses, evictions (and the age histogram of what was evicted) and the
# histograms move with a workload; promtool check metrics passes on both;
# anything but GET /metrics is 404/405, a request with a body or oversized
# headers is refused, and a non-loopback address is refused unless asked.
. "$(dirname "$0")/lib/common.sh"

command -v promtool >/dev/null || skip "promtool (Debian prometheus) not installed"

# ---- a non-loopback address needs --metrics-remote / -o metrics_remote ----
if "$MARUD" -n --pool "shm:maru-it-$$-n" --listen "unix:$T/n.sock" \
	--metrics-listen "0.0.0.0:9" >"$T/n.out" 2>&1; then
	fail "marud -n accepted metrics-listen 0.0.0.0 without --metrics-remote"
fi
grep -q "metrics-remote" "$T/n.out" || fail "marud's refusal does not say how: $(cat "$T/n.out")"
if "$MARUD" -n --pool "shm:maru-it-$$-n" --listen "unix:$T/n.sock" \
	--metrics-listen "192.0.2.1:9" >"$T/n.out" 2>&1; then
	fail "marud -n accepted a non-loopback metrics address without --metrics-remote"
fi
"$MARUD" -n --pool "shm:maru-it-$$-n" --listen "unix:$T/n.sock" --metrics-remote \
	--metrics-listen "0.0.0.0:9" >"$T/n.out" 2>&1 ||
	grep -q "metrics-listen: 0.0.0.0:9 (remote allowed)" "$T/n.out" ||
	fail "--metrics-remote did not allow 0.0.0.0: $(cat "$T/n.out")"
if "$MARUD" -n --pool "shm:maru-it-$$-n" --listen "unix:$T/n.sock" \
	--metrics-listen "example.org:9" >"$T/n.out" 2>&1; then
	fail "marud -n accepted a host name as metrics address"
fi
rm -f /dev/shm/maru-it-$$-n

P1=$(pick_port)
marud_start --size 48M --metrics-listen "127.0.0.1:$P1"
mkdir -p "$T/refused"
if "$MARUFS" -f -o metrics=0.0.0.0:9 "$MARU_URI" "$T/refused" >"$T/refused.out" 2>&1; then
	fail "marufs mounted with metrics=0.0.0.0 and no metrics_remote"
fi
grep -q "metrics_remote" "$T/refused.out" || fail "marufs's refusal does not say how: $(cat "$T/refused.out")"
mountpoint -q "$T/refused" && fail "marufs mounted $T/refused with a refused metrics address"

P2=$(pick_port)
marufs_mount -o "metrics=localhost:$P2"

scrape() { python3 "$SRCDIR/tests/integration/tools/metrics_http.py" "$@"; }

scrape get "$P1" >"$T/marud.0"
scrape get "$P2" >"$T/mnt.0"
promtool check metrics <"$T/marud.0" || fail "promtool check metrics: marud's /metrics"
promtool check metrics <"$T/mnt.0" || fail "promtool check metrics: marufs's /metrics"

# a workload: files written and read, a miss, a second mount's publish seen here
for i in 1 2 3 4 5 6 7 8; do head -c 65536 /dev/urandom >"$MNT/f$i"; done
cat "$MNT"/f* >/dev/null
[ ! -e "$MNT/absent" ] || fail "absent file exists"
marufs_mount
for i in 1 2 3; do echo "from two $i" >"$MNT2/g$i"; done
wait_for 10 eval '[ -e "$MNT/g3" ]' || fail "mount 1 never saw g3"
cat "$MNT/g3" >/dev/null
cat "$MNT2"/f* >/dev/null	# opens of versions mount 2 has no lease of
# 80 MiB into a 48 MiB pool: the oldest unleased versions are evicted
for i in $(seq 1 20); do head -c $((4 << 20)) /dev/zero >"$MNT2/big$i" || fail "big$i"; done

scrape get "$P1" >"$T/marud.1"
scrape get "$P2" >"$T/mnt.1"
promtool check metrics <"$T/marud.1" || fail "promtool check metrics: marud's /metrics after the workload"
promtool check metrics <"$T/mnt.1" || fail "promtool check metrics: marufs's /metrics after the workload"

# the families, labelled, and what the workload moved (evictions too)
scrape check "$T/marud.0" "$T/marud.1" "$T/mnt.0" "$T/mnt.1" "/dev/shm/${MARUD_POOL#shm:}" ||
	fail "families or counters wrong (above)"

# the endpoint answers nothing else
scrape refusals "$P1" || fail "marud's endpoint answered what it must refuse"
scrape refusals "$P2" || fail "marufs's endpoint answered what it must refuse"

# .maru/stats still holds the same families, unlabelled
grep -q '^marufs_fuse_request_duration_seconds_bucket{op="lookup",le="+Inf"} ' "$MNT/.maru/stats" ||
	fail ".maru/stats lacks the FUSE latency histogram"
grep -q '^marud_request_duration_seconds_count{op="PUBLISH"} ' "$MNT/.maru/stats" ||
	fail ".maru/stats lacks marud's request histogram"

marufs_umount "$MNT2"
# marud away: the mount's endpoint answers at once with its own families,
# maru_client_connected 0 (a scraper must not wait out timeout_ms each time)
marud_kill
scrape get "$P2" >"$T/mnt.away0" 2>/dev/null || true	# the outage is learnt here
t0=$(date +%s%N)
scrape get "$P2" >"$T/mnt.away" || fail "marufs's /metrics with marud away"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
log "marufs's /metrics with marud away: $ms ms"
# half the mount's timeout_ms (5000, the default): not waited out. 374 ms
# here when quiet; 1636 ms once under ASan with the load average at 10
[ "$ms" -lt 2500 ] || fail "marufs's /metrics took $ms ms with marud away (timeout_ms 5000)"
grep -q '^maru_client_connected{[^}]*} 0$' "$T/mnt.away" ||
	fail "no maru_client_connected 0 with marud away: $(grep connected "$T/mnt.away")"
grep -q '^marufs_' "$T/mnt.away" || fail "marufs's own families missing with marud away"
promtool check metrics <"$T/mnt.away" || fail "promtool check metrics: marufs's /metrics, marud away"
marufs_umount "$MNT"
