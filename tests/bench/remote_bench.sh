#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/bench/remote_bench.sh BUILD_DIR [--quick]: remote I/O through marufs
# against iperf3 on the same link (issue 22). marud runs in host "pool", a
# data=tcp mount with a key file in host "w1" writes the chunks and one in "w2"
# reads them (so every read is a first read, nothing comes from the page
# cache), all through one bridge (tests/multihost/lib.sh). iperf3 runs between
# the same namespaces in the same direction just before: w1 -> pool is the
# write peer, pool -> w2 (-R) the read peer.
#
# Conditions, one after the other: no added delay; 1 ms and 5 ms held one way
# on every packet marud's host receives (tests/multihost/delayq, NFQUEUE: this
# kernel has no netem); 1% of the frames on the pool host's link dropped each
# way (nftables on the bridge, offloads off on every link for that row and its
# iperf3 peer). Columns: MiB/s through the mount (bytes over the time from
# open to close, close included: a write counts once it is published; timed
# inside one process, tests/multihost/mh_tool.py, 4 MiB calls), the
# peer in MiB/s, the ratio (issue 22's goal: >= 0.8 without loss, >= 0.5 under
# 1% loss), and for the 8 MiB reads the round trips the reading mount waited
# for per chunk (maru_client_tcp_round_trips_total{dir="read"} of its
# .maru/stats: READ frames sent with none outstanding; "-" on a build
# without it), the requests it sent (maru_client_requests_total: open,
# close and every READ frame) and the milliseconds per chunk.
# Each figure is the median of $ROUNDS rounds (3; 1 with --quick), each
# round iperf3 both ways and then the chunks, so that the load of a shared
# machine falls on both alike.
# Never fails on speed; fails on wrong bytes.
# --quick: one round, 1 s iperf3 runs, one chunk each (CI proves it runs).
set -euo pipefail
B=$(cd "${1:?usage: remote_bench.sh BUILD_DIR [--quick]}" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export MARUD=${MARUD:-$B/daemon/marud} MARUFS=${MARUFS:-$B/fs/marufs} SRCDIR=$SRC
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -x "$B/tests/multihost/delayq" ] && export DELAYQ=$B/tests/multihost/delayq
. "$SRC/tests/multihost/lib.sh"
skip_unless_cmd iperf3 ping python3

if [ "$QUICK" = --quick ]; then
	IPERF_T=1; N8=1; N32=1; ROUNDS=1
else
	IPERF_T=2; N8=4; N32=2; ROUNDS=3
fi

mh_init
mh_host pool
mh_host w1
mh_host w2
POOL_ADDR=${MH_ADDR[pool]}
mh_marud_start pool --size 1G
mh_mount w1
WA=$LAST_MNT
mh_mount w2
WB=$LAST_MNT
mh_bg pool iperf3 -s -B "$POOL_ADDR" -p 5201 >"$T/iperf3-server.log" 2>&1
wait_for 5 mh_listens pool "$POOL_ADDR:5201" ||
	fail "iperf3 server did not come up"
for s in 8 32; do
	head -c $((s << 20)) /dev/urandom >"$T/src$s"
done

# iperf3_mibs HOST [-R]: MiB/s of one single-stream run from HOST to the pool
iperf3_mibs()
{
	local h=$1
	shift
	mh_run "$h" iperf3 -c "$POOL_ADDR" -p 5201 -t "$IPERF_T" -J "$@" >"$T/iperf.json" ||
		fail "iperf3 from $h: $(tail -5 "$T/iperf.json")"
	python3 -c 'import json, sys
print("%.0f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 8 / 1048576))' \
		"$T/iperf.json"
}

rtt_ms()
{
	mh_run w2 ping -c 5 -i 0.2 -q "$POOL_ADDR" |
		awk -F/ '/^rtt|^round-trip/ { print $5 }'
}

requests()
{
	awk '$1 == "maru_client_requests_total" { print $2 }' "$WB/.maru/stats"
}

# read round trips of B so far (empty when its libmaru does not count them)
round_trips()
{
	awk '$1 == "maru_client_tcp_round_trips_total{dir=\"read\"}" { print $2 }' "$WB/.maru/stats"
}

mibs()	# BYTES NS
{
	awk -v b="$1" -v ns="$2" 'BEGIN { printf "%.0f", b / 1048576 / (ns / 1e9) }'
}

ratio()
{
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'
}

# chunks SIZE N: write N chunks of SIZE MiB on A, read them on B; sets WNS
# and RNS (ns spent), REQS and TRIPS (B's requests and read round trips)
chunks()
{
	local s=$1 n=$2 i f t r0 k0
	WNS=0
	RNS=0
	REQS=0
	TRIPS=0
	for i in $(seq "$n"); do
		f=c-$COND-$s-$i
		t=$(mh_tool write "$T/src$s" "$WA/$f") || fail "write of $f failed"
		WNS=$((WNS + t))
	done
	for i in $(seq "$n"); do
		f=c-$COND-$s-$i
		r0=$(requests)
		k0=$(round_trips)
		t=$(mh_tool read "$WB/$f") || fail "read of $f failed"
		RNS=$((RNS + t))
		REQS=$((REQS + $(requests) - r0))
		[ -z "$k0" ] || TRIPS=$((TRIPS + $(round_trips) - k0))
	done
	cmp "$T/src$s" "$WB/c-$COND-$s-1" || fail "a chunk of $s MiB read wrong bytes ($COND)"
	rm -f "$WA"/c-"$COND"-"$s"-*
}

med()
{
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# measure LABEL: the rows of one condition: $ROUNDS rounds, each iperf3 both
# ways then the chunks (turn about, so a load that comes and goes on this
# machine hits both sides alike); medians of the rounds
measure()
{
	local label=$1 r s n rtt key
	local -A v=()
	rtt=$(rtt_ms)
	# the delay is really there (delayq holds what the pool host receives)
	awk -v r="$rtt" -v d="$DELAY_MS" 'BEGIN { exit !(r >= d) }' ||
		fail "ping RTT $rtt ms with $DELAY_MS ms added ($label)"
	for r in $(seq "$ROUNDS"); do
		v[wpeer]+=" $(iperf3_mibs w1)"
		v[rpeer]+=" $(iperf3_mibs w2 -R)"
		for s in 8 32; do
			n=$N8
			[ "$s" = 8 ] || n=$N32
			chunks "$s" "$n"
			v[w$s]+=" $(mibs $((n * s << 20)) "$WNS")"
			v[r$s]+=" $(mibs $((n * s << 20)) "$RNS")"
			v[q$s]+=" $((REQS / n))"
			[ -z "$(round_trips)" ] || v[k$s]+=" $((TRIPS / n))"
			v[ms$s]+=" $(awk -v ns="$RNS" -v n="$n" 'BEGIN { printf "%.1f", ns / n / 1e6 }')"
		done
	done
	for key in "${!v[@]}"; do
		# shellcheck disable=SC2086 # word splitting intended
		v[$key]=$(med ${v[$key]})
	done
	for s in 8 32; do
		row "write $s MiB, $label" "${v[w$s]}" "${v[wpeer]}" "" "" ""
		if [ "$s" = 8 ]; then
			row "read $s MiB, $label" "${v[r$s]}" "${v[rpeer]}" "${v[k$s]:-}" "${v[q$s]}" \
				"${v[ms$s]}"
		else
			row "read $s MiB, $label" "${v[r$s]}" "${v[rpeer]}" "" "" ""
		fi
	done
	RTTS+="$label: ${rtt} ms; "
}

ROWS=()
RTTS=
row()	# NAME MIBS PEER TRIPS REQS MS
{
	ROWS+=("$(printf '| %s | %s | %s | %s | %s | %s | %s |' "$1" "$2" "$3" "$(ratio "$2" "$3")" \
		"${4:--}" "${5:--}" "${6:--}")")
	echo "${ROWS[-1]}"
}

COND=d0
DELAY_MS=0
measure "no delay"
if [ -n "${DELAYQ:-}" ]; then
	for ms in 1 5; do
		COND=d$ms
		mh_delay pool "$ms"
		DELAY_MS=$ms
		measure "$ms ms one way"
		mh_delay pool 0
		DELAY_MS=0
	done
else
	log "no delayq (libnetfilter-queue not found at build time): no delay rows"
fi
COND=loss1
for h in pool w1 w2; do
	mh_offloads "$h" off
done
mh_loss pool 1
measure "1% loss"
mh_loss pool 0

echo
echo "# remote I/O through marufs data=tcp vs iperf3, veth + bridge between namespaces"
echo "| row | marufs MiB/s | iperf3 MiB/s | ratio | round trips per 8 MiB read | requests per 8 MiB read | ms per 8 MiB read |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo "# ping RTT w2 -> pool: ${RTTS%; }"
marufs_umount "$WA"
marufs_umount "$WB"
marud_stop
