#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# metrics_rules: examples/prometheus/marufs-rules.yml passes promtool check
# rules and its unit tests (promtool test rules), every alert has a test
# where it fires and one where it stays quiet, and every metric the rules
# name is one a real marud and mount serve (scraped here over HTTP) or,
# for the rdma listener's families, one marud's sources write.
. "$(dirname "$0")/lib/common.sh"

command -v promtool >/dev/null || skip "promtool (Debian prometheus) not installed"
R=$SRCDIR/examples/prometheus
cp "$R/marufs-rules.yml" "$R/marufs-rules.test.yml" "$T/"

promtool check rules "$T/marufs-rules.yml" >"$T/check.out" 2>&1 ||
	fail "promtool check rules: $(cat "$T/check.out")"
(cd "$T" && promtool test rules marufs-rules.test.yml) >"$T/test.out" 2>&1 ||
	fail "promtool test rules: $(cat "$T/test.out")"
grep -q SUCCESS "$T/test.out" || fail "promtool test rules did not succeed: $(cat "$T/test.out")"

# Each alert: a test with exp_alerts listing it, and one with exp_alerts: [].
alerts=$(awk '$1 == "-" && $2 == "alert:" { print $3 }' "$R/marufs-rules.yml")
[ "$(wc -w <<<"$alerts")" -ge 10 ] || fail "fewer alerts than expected: $alerts"
awk '$1 == "alertname:" { a = $2; next }
     a != "" && $1 == "exp_alerts:" { print a, ($2 == "[]" ? "quiet" : "fires"); a = "" }' \
	"$R/marufs-rules.test.yml" | sort -u >"$T/cases"
for a in $alerts; do
	grep -qx "$a fires" "$T/cases" || fail "alert $a has no test where it fires"
	grep -qx "$a quiet" "$T/cases" || fail "alert $a has no test where it stays quiet"
done

# The quiet tests would see a rule that fires too often: with the pool
# threshold raised to 60%, its quiet case (51% free or evictable) fails.
sed 's|marud_pool_capacity_bytes) < 0.05|marud_pool_capacity_bytes) < 0.6|' \
	"$R/marufs-rules.yml" >"$T/marufs-rules.yml"
! cmp -s "$R/marufs-rules.yml" "$T/marufs-rules.yml" || fail "could not loosen the pool rule"
if (cd "$T" && promtool test rules marufs-rules.test.yml) >"$T/loose.out" 2>&1; then
	fail "the rule tests pass with a pool threshold of 60%"
fi
grep -q 'alertname: MarufsPoolFullNothingEvictable' "$T/loose.out" ||
	fail "the loosened rule failed elsewhere: $(cat "$T/loose.out")"

# The names the rules use exist: scraped from a real marud and mount.
P1=$(pick_port)
marud_start --metrics-listen "127.0.0.1:$P1"
P2=$(pick_port)
marufs_mount -o "metrics=127.0.0.1:$P2"
echo x >"$MNT/f"
cat "$MNT/f" >/dev/null
scrape() { python3 "$SRCDIR/tests/integration/tools/metrics_http.py" get "$1"; }
{ scrape "$P1"; scrape "$P2"; } | awk '$1 == "#" && $2 == "TYPE" { print $3 }' | sort -u >"$T/families"
[ "$(wc -l <"$T/families")" -gt 50 ] || fail "too few families scraped: $(wc -l <"$T/families")"
grep -Eo '\b(marud|marufs|maru_client)_[a-z0-9_]+' "$R/marufs-rules.yml" | sort -u |
	sed -E 's/_(bucket|sum|count)$//' | sort -u >"$T/used"
while read -r m; do
	grep -qx "$m" "$T/families" && continue
	case "$m" in
	marud_rdma_*)	# only with an rdma listener
		grep -rqF "\"$m\"" "$SRCDIR/daemon/rdma" || fail "rules use $m, which marud does not write" ;;
	*)	fail "rules use $m, which neither endpoint serves" ;;
	esac
done <"$T/used"
grep -qx up "$T/families" && fail "up is Prometheus's, not an endpoint's"
log "$(wc -l <"$T/used") metric names of the rules checked"
