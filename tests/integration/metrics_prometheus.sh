#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# metrics_prometheus: Debian's prometheus scrapes one marud (job marud) and
# two mounts (job marufs) every second, with the alert rules of
# examples/prometheus loaded. After a workload (writes, reads, misses, a
# publish seen by the other mount, a 32 MiB pool overflowed so it evicts)
# its HTTP API must show every family the endpoints serve, the counters
# the workload moves moved (none reset), the pool gauges equal to df of the
# mount, every rule evaluated without error, and a series for every panel
# query of examples/grafana/marufs.json; promtool check metrics passes on
# all three endpoints. Then the alerts come as they should: a file larger
# than the pool fires MarufsEnospc, a killed mount makes MarufsMountDown
# pending, a stopped marud MarudDown and MarudUnreachableFromMount.
. "$(dirname "$0")/lib/common.sh"

command -v prometheus >/dev/null || skip "prometheus (Debian package) not installed"
command -v promtool >/dev/null || skip "promtool (Debian prometheus) not installed"

api() { python3 "$SRCDIR/tests/integration/tools/prom_api.py" "$1" "$PROM" "${@:2}"; }
scrape() { python3 "$SRCDIR/tests/integration/tools/metrics_http.py" get "$1"; }

P1=$(pick_port)
marud_start --size 32M --metrics-listen "127.0.0.1:$P1"
P2=$(pick_port)
# timeout_ms 500: while marud is away a scrape of a mount waits that long
# for marud's part, which must stay under the 1 s scrape timeout.
marufs_mount -o "metrics=127.0.0.1:$P2" -o timeout_ms=500
P3=$(pick_port)
marufs_mount -o "metrics=127.0.0.1:$P3" -o timeout_ms=500

# ---- prometheus, its storage in $T, on a free port ----
cp "$SRCDIR/examples/prometheus/marufs-rules.yml" "$T/"
cat >"$T/prometheus.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $T/marufs-rules.yml
scrape_configs:
  - job_name: marud
    static_configs:
      - targets: ['127.0.0.1:$P1']
  - job_name: marufs
    static_configs:
      - targets: ['127.0.0.1:$P2', '127.0.0.1:$P3']
EOC
promtool check config "$T/prometheus.yml" >"$T/promcheck.out" 2>&1 ||
	fail "promtool check config: $(cat "$T/promcheck.out")"
P4=$(pick_port)
PROM=http://127.0.0.1:$P4
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom-data" \
	--web.listen-address="127.0.0.1:$P4" --log.level=warn >"$T/prometheus.log" 2>&1 &
PROM_PID=$!
on_exit "kill $PROM_PID 2>/dev/null; wait $PROM_PID 2>/dev/null"
wait_up "$PROM_PID" 60 curl -sf "$PROM/-/ready" -o /dev/null ||
	fail "prometheus not ready: $(tail -5 "$T/prometheus.log")"
all_up() { [ "$(api targets | grep -c ' up$')" = 3 ]; }
wait_for 30 all_up || fail "targets not all up: $(api targets)"

# ---- counters before the workload ----
counters=(
	'marud_publishes_total{job="marud"}'
	'marud_creates_total{job="marud"}'
	'marud_evictions_total{job="marud"}'
	'marud_evicted_bytes_total{job="marud"}'
	'sum(marud_cache_requests_total{job="marud",result="miss"})'
	'sum(marud_cache_requests_total{job="marud",result="hit"})'
	'marud_request_duration_seconds_count{job="marud",op="PUBLISH"}'
	'marud_evicted_age_seconds_count{job="marud"}'
	'marufs_publishes_total{instance="127.0.0.1:'"$P2"'"}'
	'maru_client_bytes_total{instance="127.0.0.1:'"$P2"'",path="shm",dir="write"}'
	'marufs_fuse_request_duration_seconds_count{instance="127.0.0.1:'"$P2"'",op="write"}'
	'sum(marufs_lookups_total{instance="127.0.0.1:'"$P2"'",result="negative"})'
	'marufs_publish_visible_seconds_count{instance="127.0.0.1:'"$P2"'"}'
)
# (a histogram's series of an op appear at its first request: none is 0)
declare -A before
for c in "${counters[@]}"; do
	before[$c]=$(api value "($c) or on() vector(0)") || fail "query $c failed"
done

# ---- workload ----
for i in $(seq 1 12); do
	dd if=/dev/urandom of="$MNT/f$i" bs=256k count=16 status=none || fail "write f$i"
done
cat "$MNT/f12" "$MNT/f11" >/dev/null
for i in 1 2 3; do [ ! -e "$MNT/absent$i" ] || fail "absent$i exists"; done
echo "from mount 2" >"$MNT2/g1"
wait_for 10 test -e "$MNT/g1" || fail "mount 1 never saw g1"
cat "$MNT/g1" >/dev/null
sleep 3	# three scrapes after the last change

for c in "${counters[@]}"; do
	after=$(api value "$c") || fail "no series for $c after the workload"
	awk -v a="${before[$c]}" -v b="$after" 'BEGIN { exit !(b > a) }' ||
		fail "$c did not increase: ${before[$c]} -> $after"
done
assert_eq "$(api query 'resets({__name__=~"(marud|marufs|maru_client)_.*_total"}[5m]) > 0')" "" \
	"counters that reset"
assert_eq "$(api query '{__name__=~"(marud|marufs|maru_client)_.*"} < 0')" "" "negative samples"

# ---- marustat reads the same numbers as PromQL ----
# (its totals line from mount 1's endpoint; nothing touches mount 1 now)
"$MARUSTAT" -p "127.0.0.1:$P2" >"$T/marustat" || fail "marustat on mount 1's endpoint failed"
col() { awk -v n="$1" '$1 == "time" { for (i = 1; i <= NF; i++) if ($i == n) c = i; next } { v = $c } END { print v }' "$T/marustat"; }
secs() { sed -E 's/us$/e-6/; s/ms$/e-3/; s/s$//' <<<"$1"; }
log "marustat: $(tail -1 "$T/marustat")"
N1='instance="127.0.0.1:'"$P2"'"'
assert_eq "$(col pub)" "$(api value "marufs_publishes_total{$N1}")" "marustat pub = PromQL"
assert_eq "$(col create)" "$(api value "marufs_fuse_ops_total{$N1,op=\"create\"}")" "marustat create = PromQL"
for q in 50:p50 99:p99; do
	# (within 5%, or 1 us: marustat prints whole microseconds)
	want=$(api value "histogram_quantile(0.${q%%:*}, sum by (le) (marufs_fuse_request_duration_seconds_bucket{$N1}))")
	got=$(secs "$(col "${q#*:}")")
	awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 0.05 * b + 1e-6) }' ||
		fail "marustat ${q#*:} $(col "${q#*:}") is not PromQL's histogram_quantile $want"
done
want=$(api value "100 * sum(marufs_lookups_total{$N1,result=\"positive\"}) / sum(marufs_lookups_total{$N1})")
awk -v a="$(col hit%)" -v b="$want" 'BEGIN { exit !(a - b < 0.06 && b - a < 0.06) }' ||
	fail "marustat hit% $(col hit%) is not PromQL's $want"

# ---- every family of the endpoints is in Prometheus ----
scrape "$P1" >"$T/m.txt"
scrape "$P2" >"$T/n1.txt"
scrape "$P3" >"$T/n2.txt"
for f in m n1 n2; do
	promtool check metrics <"$T/$f.txt" >"$T/lint.$f" 2>&1 ||
		fail "promtool check metrics ($f): $(cat "$T/lint.$f")"
done
api families >"$T/names"
cat "$T/m.txt" "$T/n1.txt" "$T/n2.txt" | awk '$1 == "#" && $2 == "TYPE" {
	print ($4 == "histogram" ? $3 "_bucket" : $3) }' | sort -u >"$T/want"
[ "$(wc -l <"$T/want")" -gt 80 ] || fail "only $(wc -l <"$T/want") families served"
missing=$(comm -23 "$T/want" <(sort -u "$T/names"))
[ -z "$missing" ] || fail "families served but not in prometheus: $missing"
for base in marud_request_duration_seconds marufs_fuse_request_duration_seconds \
	maru_client_request_duration_seconds maru_client_transfer_duration_seconds \
	marufs_publish_visible_seconds marud_evicted_age_seconds; do
	grep -qx "${base}_bucket" "$T/names" || fail "histogram $base missing"
done

# ---- gauges equal df of the mount (nothing moves now) ----
read -r bsize blocks bfree < <(stat -f -c '%S %b %f' "$MNT")
assert_eq "$(api value 'marud_pool_capacity_bytes{job="marud"}')" $((blocks * bsize)) \
	"capacity = df size"
free_is_df() {
	read -r blocks bfree < <(stat -f -c '%b %f' "$MNT")
	[ "$(api value 'marud_pool_free_bytes{job="marud"}')" = $((bfree * bsize)) ]
}
wait_for 5 free_is_df ||
	fail "free bytes $(api value 'marud_pool_free_bytes{job="marud"}') != df's $((bfree * bsize))"
assert_eq "$(api value 'count(count by (pool) (marud_pool_capacity_bytes))')" 1 \
	"marud and both mounts label the same pool"
assert_eq "$(api value 'sum(maru_client_connected)')" 2 "both mounts connected"
assert_eq "$(api value 'max(marud_accounting_ok)')" 1 "pool accounting exact"

# ---- the alert rules load and evaluate without error; none fires ----
api rules >"$T/rules"
[ "$(wc -l <"$T/rules")" -ge 10 ] || fail "rules not loaded: $(cat "$T/rules")"
grep -v ' ok *$' "$T/rules" && fail "rules with errors: $(grep -v ' ok *$' "$T/rules")"
# (the latency alerts left out: a loaded test machine may well be slow)
assert_eq "$(api query 'ALERTS{alertname!~".*Latency.*"}')" "" "alerts on a healthy pool"

# ---- every dashboard panel query returns series ----
api dashboard "$SRCDIR/examples/grafana/marufs.json" >"$T/dash" 2>&1 ||
	fail "dashboard: $(cat "$T/dash")"
log "$(wc -l <"$T/dash") dashboard queries returned series"

# ---- a file larger than the pool: ENOSPC, and MarufsEnospc fires ----
if dd if=/dev/zero of="$MNT/huge" bs=1M count=40 status=none 2>"$T/dd.err"; then
	fail "a 40 MiB file fit a 32 MiB pool"
fi
grep -q "No space left" "$T/dd.err" || fail "dd: $(cat "$T/dd.err")"
firing() { [ -n "$(api query "ALERTS{alertname=\"$1\",alertstate=\"firing\"}")" ]; }
wait_for 30 firing MarufsEnospc || fail "MarufsEnospc not firing: $(api query ALERTS)"

# ---- mount 2 dies: MarufsMountDown goes pending for its endpoint ----
pending() { [ -n "$(api query "ALERTS{alertname=\"$1\",alertstate=\"pending\"}")" ]; }
marufs_kill "$MNT2"
wait_for 30 pending MarufsMountDown || fail "MarufsMountDown not pending: $(api query ALERTS)"
api query 'ALERTS{alertname="MarufsMountDown"}' | grep -q "instance=\"127.0.0.1:$P3\"" ||
	fail "MarufsMountDown not for mount 2: $(api query ALERTS)"

# ---- marud stops: MarudDown and MarudUnreachableFromMount go pending ----
marud_stop
wait_for 30 pending MarudDown || fail "MarudDown not pending: $(api query ALERTS)"
wait_for 30 pending MarudUnreachableFromMount ||
	fail "MarudUnreachableFromMount not pending: $(api query ALERTS); targets: $(api targets)"
assert_eq "$(api query 'ALERTS{alertname="MarudUnreachableFromMount"}' | wc -l)" 1 \
	"mount 1 found marud unreachable"
