#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/bench/hist_bench.sh BUILD_DIR [--quick]: what the latency histograms
# (issue 25) cost on the hot path. The same control-plane and small-file runs
# with the histograms on (the default) and off (MARU_HISTOGRAMS=0 in the
# environment of marud, marufs and the libmaru bench client: every clock read
# and observation skipped), each round on a fresh marud (and mount), the
# order of the two modes alternating round by round so that a drift of this
# shared machine does not favour either. Rows: libmaru lookups/s (1 and 4
# threads: marud's dispatch histogram and the client's per-request one), and
# on a marufs mount 4 KiB creates, reads, stats and missing-name lookups per
# second (FUSE op, libmaru call, marud request and transfer histograms all
# on the path). Each cell is the median over ROUNDS; the ratio is the median
# of the per-round ratios on/off, the target >= 0.97.
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
if [ "$QUICK" = --quick ]; then
	ROUNDS=1; SECS=1; NAMES=1000; SMALL=200
else
	ROUNDS=${ROUNDS:-5}; SECS=3; NAMES=10000; SMALL=2000
fi

val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

one_round() {	# one_round MODE R
	local mode=$1 r=$2 out=$T/$1_$2

	if [ "$mode" = off ]; then export MARU_HISTOGRAMS=0; else unset MARU_HISTOGRAMS; fi
	marud_start --size 1G
	"$MB" lookups "$MARU_URI" "$NAMES" 1 "$SECS" hb1 | sed 's/^lookups_per_s /lk1 /' >"$out"
	"$MB" lookups "$MARU_URI" "$NAMES" 4 "$SECS" hb4 | sed 's/^lookups_per_s /lk4 /' >>"$out"
	marufs_mount
	mkdir "$LAST_MNT/hb"
	"$FB" small "$LAST_MNT/hb" "$SMALL" >>"$out"
	marufs_umount "$LAST_MNT"
	marud_stop
	unset MARU_HISTOGRAMS
	echo "round $r histograms $mode: $(tr '\n' ' ' <"$out")"
}

for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then one_round on "$r"; one_round off "$r"
	else one_round off "$r"; one_round on "$r"; fi
done

row_of() {	# row_of KEY LABEL
	local on=() off=() ratios=() r a b

	for r in $(seq "$ROUNDS"); do
		a=$(val "$1" "$T/on_$r"); b=$(val "$1" "$T/off_$r")
		on+=("$a"); off+=("$b")
		ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')")
	done
	local ratio
	ratio=$(med "${ratios[@]}")
	printf '| histograms: %s, on vs off | %s/s | off %s/s | %s | >= 0.97: %s |\n' "$2" \
		"$(med "${on[@]}")" "$(med "${off[@]}")" "$ratio" \
		"$(awk -v x="$ratio" 'BEGIN { print (x >= 0.97) ? "met" : "NOT met" }')"
}
row_of lk1 "libmaru lookups, 1 thread"
row_of lk4 "libmaru lookups, 4 threads"
row_of small_create_ops "marufs 4 KiB creates"
row_of small_read_ops "marufs 4 KiB reads"
row_of stat_ops "marufs stats"
row_of missing_ops "marufs missing-name lookups"
