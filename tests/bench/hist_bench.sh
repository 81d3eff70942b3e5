#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/bench/hist_bench.sh BUILD_DIR [--quick]: what the latency histograms
# (issue 25) cost on the hot path. The same control-plane and small-file runs
# with the histograms on (the default) and off (MARU_HISTOGRAMS=0 in the
# environment of marud, marufs and the libmaru bench client: every clock read
# and observation skipped), each round on a fresh marud (and mount), the
# order of the two modes alternating round by round.
# Two figures per row. Throughput (ops/s) is what the issue's 0.97x is
# stated in, but on this shared 2-core machine it swings by 2x between two
# runs of the same mode (tests/bench/README.md); the CPU time marud, marufs
# and the client spent per op (user + system, from /proc and times) is what
# the histograms add to, and swings far less: the ratio column is the median
# over ROUNDS of the per-round CPU-per-op ratio off/on (1.00: free; 0.97: the
# histograms cost 3% more CPU per op), the last cell the throughput's median
# ratio on/off beside it. Rows: libmaru lookups (1 and 4 threads: marud's
# dispatch histogram, the client's per-request one) and, on a marufs mount,
# 4 KiB creates and reads (FUSE op, libmaru call, marud request and
# transfer histograms on the path). Then hist_cost: one observation's cost,
# and the model rows: the observations each op made (counted from the
# _count lines of the stats, on rounds) times that cost, against the op's
# CPU with them off -- the figure this machine's swings cannot move.
# Output: "| histograms: ..." rows in tests/bench/run.sh's five cells.
set -euo pipefail
B=$(cd "${1:?usage: hist_bench.sh BUILD_DIR [--quick]}" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export MARUD=${MARUD:-$B/daemon/marud} MARUFS=${MARUFS:-$B/fs/marufs}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
. "$SRC/tests/integration/lib/common.sh"
MB=$B/tests/bench/maru_bench
FB=$B/tests/bench/fs_bench
HC=$B/tests/bench/hist_cost
MS=$B/tests/integration/tools/maru_stats
if [ "$QUICK" = --quick ]; then
	ROUNDS=1; SECS=1; NAMES=1000; SMALL=200
else
	ROUNDS=${ROUNDS:-5}; SECS=3; NAMES=10000; SMALL=3000
fi
HZ=$(getconf CLK_TCK)
# the client sleeps for its replies: polling would bill CPU for waiting
export MARU_SPIN_US=0

val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# cpu PID...: user + system seconds those processes have used so far
cpu() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	awk -v t="$t" -v hz="$HZ" 'BEGIN { printf "%.3f", t / hz }'
}
# timed_cpu OUT KEY OPS CMD...: run CMD (stdout to OUT), then append
# "KEY_cpu_us_per_op V": CPU of marud, marufs (if mounted) and CMD per op.
# OPS is a number or the KEY of CMD's output whose value * SECS it is.
timed_cpu() {
	local out=$1 key=$2 ops=$3 pids=("$MARUD_PID") c0 c1 t
	shift 3
	[ -z "${MARUFS_PID:-}" ] || pids+=("$MARUFS_PID")
	c0=$(cpu "${pids[@]}")
	t=$( { "$@" >>"$out"; times; } | awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/);
		printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
	c1=$(cpu "${pids[@]}")
	case $ops in *[!0-9]*) ops=$(awk -v r="$(val "$ops" "$out")" -v s="$SECS" 'BEGIN { print r * s }') ;; esac
	awk -v a="$c0" -v b="$c1" -v t="$t" -v n="$ops" -v k="$key" \
		'BEGIN { printf "%s_cpu_us_per_op %.3f\n", k, (b - a + t) * 1e6 / n }' >>"$out"
}

# observations FILE: the histograms' observations so far (every _count) in a
# stats text, those of the STATS request reading it aside
observations() {
	awk '/^[a-z_]*_count[{ ]/ && !/op="STATS"/ { n += $NF } END { printf "%d", n }' "$1"
}
# observed OUT KEY OPS TEXT0 TEXT1 [PER_OP]: "KEY_obs_per_op V", the
# observations between the two texts per op, plus PER_OP made outside them
observed() {
	awk -v a="$(observations "$4")" -v b="$(observations "$5")" -v n="$3" -v k="$2" -v x="${6:-0}" \
		'BEGIN { printf "%s_obs_per_op %.2f\n", k, (b - a) / n + x }' >>"$1"
}

one_round() {	# one_round MODE R
	local mode=$1 r=$2 out=$T/$1_$2

	if [ "$mode" = off ]; then export MARU_HISTOGRAMS=0; else unset MARU_HISTOGRAMS; fi
	: >"$out"
	marud_start --size 1G
	MARUFS_PID=
	"$MS" "$MARU_URI" >"$T/s0"
	timed_cpu "$out" lk1 lk1 sh -c '"$1" lookups "$2" "$3" 1 "$4" hb1 | sed "s/^lookups_per_s /lk1 /"' \
		sh "$MB" "$MARU_URI" "$NAMES" "$SECS"
	"$MS" "$MARU_URI" >"$T/s1"
	# marud's per lookup (the fill's creates and publishes spread over them),
	# and the client's one per call
	observed "$out" lk1 "$(awk -v r="$(val lk1 "$out")" -v s="$SECS" 'BEGIN { print r * s }')" \
		"$T/s0" "$T/s1" 1
	timed_cpu "$out" lk4 lk4 sh -c '"$1" lookups "$2" "$3" 4 "$4" hb4 | sed "s/^lookups_per_s /lk4 /"' \
		sh "$MB" "$MARU_URI" "$NAMES" "$SECS"
	marufs_mount
	MARUFS_PID=${MARUFS_PID_OF[$LAST_MNT]}
	mkdir "$LAST_MNT/hb"
	cat "$LAST_MNT/.maru/stats" >"$T/s0"
	timed_cpu "$out" create "$SMALL" "$FB" create "$LAST_MNT/hb" "$SMALL"
	cat "$LAST_MNT/.maru/stats" >"$T/s1"
	timed_cpu "$out" read "$SMALL" "$FB" readback "$LAST_MNT/hb" "$SMALL"
	cat "$LAST_MNT/.maru/stats" >"$T/s2"
	observed "$out" create "$SMALL" "$T/s0" "$T/s1"
	observed "$out" read "$SMALL" "$T/s1" "$T/s2"
	MARUFS_PID=
	marufs_umount "$LAST_MNT"
	marud_stop
	unset MARU_HISTOGRAMS
	echo "round $r histograms $mode: $(tr '\n' ' ' <"$out")"
}

for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then one_round on "$r"; one_round off "$r"
	else one_round off "$r"; one_round on "$r"; fi
done

# per-round ratio of KEY: on/off (higher is better for the histograms)
ratios() {	# ratios KEY on|off-first
	local r a b
	for r in $(seq "$ROUNDS"); do
		a=$(val "$1" "$T/on_$r"); b=$(val "$1" "$T/off_$r")
		if [ "$2" = inverse ]; then
			awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f\n", (a > 0 ? b / a : 0) }'
		else
			awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f\n", (b > 0 ? a / b : 0) }'
		fi
	done
}
row_of() {	# row_of KEY CPUKEY LABEL
	local on=() off=() r cr tr
	for r in $(seq "$ROUNDS"); do
		on+=("$(val "$2_cpu_us_per_op" "$T/on_$r")"); off+=("$(val "$2_cpu_us_per_op" "$T/off_$r")")
	done
	# shellcheck disable=SC2046
	cr=$(med $(ratios "$2_cpu_us_per_op" inverse))
	# shellcheck disable=SC2046
	tr=$(med $(ratios "$1" plain))
	printf '| histograms: %s, CPU per op on vs off | %s us | off %s us | %s | >= 0.97: %s; ops/s on/off %s |\n' \
		"$3" "$(med "${on[@]}")" "$(med "${off[@]}")" "$cr" \
		"$(awk -v x="$cr" 'BEGIN { print (x >= 0.97) ? "met" : "NOT met" }')" "$tr"
}
"$HC" 1 "$([ "$QUICK" = --quick ] && echo 1000000 || echo 5000000)" >"$T/cost1"
"$HC" 2 "$([ "$QUICK" = --quick ] && echo 1000000 || echo 2500000)" >"$T/cost2"
COST=$(val observe_ns "$T/cost1")
# The model, immune to the machine's swings: observations per op (counted,
# in the "on" rounds) x one observation's cost, against the op's CPU with
# the histograms off: off / (off + obs x cost).
model_row() {	# model_row CPUKEY LABEL
	local obs=() off=() r o c ratio
	for r in $(seq "$ROUNDS"); do
		obs+=("$(val "$1_obs_per_op" "$T/on_$r")"); off+=("$(val "$1_cpu_us_per_op" "$T/off_$r")")
	done
	o=$(med "${obs[@]}"); c=$(med "${off[@]}")
	ratio=$(awk -v o="$o" -v c="$c" -v ns="$COST" 'BEGIN { printf "%.3f", c / (c + o * ns / 1000) }')
	printf '| histograms: %s, model: %s observations/op x %s ns vs %s us CPU/op | %s us | off %s us | %s | >= 0.97: %s |\n' \
		"$2" "$o" "$COST" "$c" \
		"$(awk -v o="$o" -v c="$c" -v ns="$COST" 'BEGIN { printf "%.3f", c + o * ns / 1000 }')" "$c" "$ratio" \
		"$(awk -v x="$ratio" 'BEGIN { print (x >= 0.97) ? "met" : "NOT met" }')"
}
row_of lk1 lk1 "libmaru lookups, 1 thread"
row_of lk4 lk4 "libmaru lookups, 4 threads"
row_of small_create_ops create "marufs 4 KiB creates"
row_of small_read_ops read "marufs 4 KiB reads"
model_row lk1 "libmaru lookups, 1 thread"
model_row create "marufs 4 KiB creates"
model_row read "marufs 4 KiB reads"
printf '| histograms: one observation (2 clock reads, bucket, 2 atomic adds), CPU, 1 / 2 threads | %s / %s ns | off %s ns | n/a | printed, no bound |\n' \
	"$(val observe_ns "$T/cost1")" "$(val observe_ns "$T/cost2")" "$(val off_ns "$T/cost1")"
