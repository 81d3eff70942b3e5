#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/rdma_bench.sh BUILD_DIR [--quick]: the rdma rows of run.sh.
# They run on the software verbs device (tests/softverbs: an emulated NIC
# thread per process, one-sided READ/WRITE copied over a unix socket), so
# the GB/s figures measure the emulation, not a NIC. What they do show is
# the one-sided claim: marud's own CPU time per GiB moved (utime+stime of
# its threads from /proc/PID/task/*/stat, without the emulated NIC thread,
# comm "softverbs-nic") over rdma against the same transfers over tcp,
# where marud copies every byte. Prints key/value lines, then the table
# rows (lines starting with "|") that run.sh includes.
set -euo pipefail
B=$(cd "${1:?usage: rdma_bench.sh BUILD_DIR [--quick]}" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SV=$B/tests/softverbs/libsoftverbs.so
[ -e "$SV" ] || { echo "SKIP: no software verbs device built (no verbs headers)" >&2; exit 77; }
export MARUD=${MARUD:-$B/daemon/marud} MARUFS=${MARUFS:-$B/fs/marufs}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MARU_RDMA_PRELOAD="LD_PRELOAD=$SV" MARU_DATA=rdma
export MARU_RDMA_PORT=$((40000 + RANDOM % 20000))
. "$SRC/tests/integration/lib/common.sh"
MB=$B/tests/bench/maru_bench
# GITERS: gets of the CPU difference (enough that a clock tick is small)
if [ "$QUICK" = --quick ]; then ITERS=2; GITERS=2; else ITERS=16; GITERS=64; fi
PORT=$((20000 + RANDOM % 20000))
marud_start --size 1G --listen "unix:$MARUD_SOCK" --listen "tcp://127.0.0.1:$PORT"
TCP_URI="maru://127.0.0.1:$PORT"

# cpu_ticks PID nic|own: utime+stime (clock ticks) of the NIC thread, or of
# the rest of the process: /proc/PID/stat counts threads that already exited
# (marud's per-connection threads), minus the NIC thread, alive throughout.
# After "comm) " field 3 is state, so utime (14) and stime (15) are the 12th
# and 13th there.
stat_ticks() {
	awk -v want="$2" '{
		c = $0; sub(/^[^(]*[(]/, "", c); sub(/[)] .*$/, "", c)
		r = $0; sub(/^.*[)] /, "", r); split(r, f, " ")
		if (want == "all" || c == "softverbs-nic") s += f[12] + f[13]
	} END { print s + 0 }' "${@:3}"
}
cpu_ticks() {
	local nic all
	nic=$(cat /proc/"$1"/task/*/stat 2>/dev/null | stat_ticks x nic /dev/stdin)
	all=$(stat_ticks x all /proc/"$1"/stat)
	if [ "$2" = nic ]; then echo "$nic"; else echo $((all - nic)); fi
}
HZ=$(getconf CLK_TCK)

# ticks DP URI MODE ITERS: maru_bench MODE on DP; prints marud's own ticks, NIC ticks
ticks() {
	local own0 nic0
	own0=$(cpu_ticks "$MARUD_PID" own); nic0=$(cpu_ticks "$MARUD_PID" nic)
	MARU_DATA=$1 "$MB" "$3" "$2" 32M "$4" >"$T/$1.$3.$4"
	[ "$(awk '$1 == "data_path" { print $2 }' "$T/$1.$3.$4")" = "$1" ] ||
		fail "maru_bench did not run on $1"
	echo "$(($(cpu_ticks "$MARUD_PID" own) - own0)) $(($(cpu_ticks "$MARUD_PID" nic) - nic0))"
}
# run DP URI: put+get 32 MiB ITERS times, and marud's CPU per GiB moved:
# for put+get together (over tcp marud also takes the publish checksum, XXH3
# of the bytes; over rdma the client hashes them while it stages them), and
# for gets alone (get mode with 2*GITERS gets minus get mode with GITERS:
# the 4 puts get mode starts with cancel out)
run() {
	local dp=$1 uri=$2 a g1 g2 gib ggib
	a=$(ticks "$dp" "$uri" putget "$ITERS")
	g1=$(ticks "$dp" "$uri" get "$GITERS")
	g2=$(ticks "$dp" "$uri" get $((2 * GITERS)))
	cp "$T/$dp.putget.$ITERS" "$T/$dp"
	gib=$(awk -v i="$ITERS" 'BEGIN { print i * 32 / 1024 }')	# GiB per ITERS transfers
	ggib=$(awk -v i="$GITERS" 'BEGIN { print i * 32 / 1024 }')
	awk -v a="$a" -v g1="$g1" -v g2="$g2" -v hz="$HZ" -v gib="$gib" -v ggib="$ggib" \
		-v dp="$dp" 'BEGIN {
		split(a, A, " "); split(g1, G1, " "); split(g2, G2, " ")
		printf "%s_marud_cpu_s_per_GiB %.6f\n", dp, A[1] / hz / (2 * gib)
		printf "%s_nic_cpu_s_per_GiB %.6f\n", dp, A[2] / hz / (2 * gib)
		g = G2[1] - G1[1]
		printf "%s_marud_get_cpu_s_per_GiB %.6f\n", dp, (g > 0 ? g : 0) / hz / ggib
	}' >>"$T/$dp"
	echo "## $dp"
	cat "$T/$dp"
}
echo "# rdma vs tcp, 32 MiB put/get x $ITERS, software verbs device (measures the emulation)"
run rdma "$MARU_URI"
run tcp "$TCP_URI"
grep -q 'rights by type 2 memory windows' "$T/marud.log" || fail "marud did not serve rdma on windows"
marud_stop

val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
gb() { awk -v v="$1" 'BEGIN { printf "%.2f GB/s", v / 1e9 }'; }
cpu() { awk -v v="$1" 'BEGIN { printf "%.3f s/GiB", v }'; }
row() { printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "${5:-}"; }
for k in put get; do
	row "$k 32 MiB, libmaru rdma on the software device (emulation, not a NIC)" \
		"$(gb "$(val ${k}_Bps "$T/rdma")")" "tcp $(gb "$(val ${k}_Bps "$T/tcp")")" \
		"$(ratio "$(val ${k}_Bps "$T/rdma")" "$(val ${k}_Bps "$T/tcp")")"
done
# CPU rows: the ratio is tcp/rdma (> 1: marud spends less on rdma); a value
# under one clock tick reads 0, shown as "< 1 tick" and divided by one tick
# tick_of N: one clock tick per GiB of N transfers of 32 MiB
tick_of() { awk -v hz="$HZ" -v n="$1" 'BEGIN { printf "%.6f", 1 / hz / (n * 32 / 1024) }'; }
cpurow() {
	local r t shown rr tick=$4
	r=$(val "rdma_$2" "$T/rdma"); t=$(val "tcp_$2" "$T/tcp")
	if awk -v v="$r" 'BEGIN { exit !(v > 0) }'; then
		shown=$(cpu "$r"); rr=$(ratio "$t" "$r")
	else
		shown="< $(cpu "$tick") (under 1 tick)"; rr="$(ratio "$t" "$tick") (at least)"
	fi
	# the verdict takes a value under one tick as one tick: too short a run
	# to tell says so instead of passing
	row "$1" "$shown" "tcp $(cpu "$t")" "$rr" "${3:+$3: $(awk -v r="$r" -v t="$t" -v k="$tick" \
		'BEGIN { if (r <= 0) r = k; v = "NOT met"; if (r == k) v = "too short to tell"
			 if (t > 0 && r <= t / 10) v = "met"; print v }')}"
}
cpurow "marud CPU per GiB of gets, rdma (its threads, not the emulated NIC's)" \
	marud_get_cpu_s_per_GiB "rdma under 1/10 of tcp" "$(tick_of "$GITERS")"
cpurow "marud CPU per GiB of puts+gets, rdma (tcp: marud hashes each publish)" \
	marud_cpu_s_per_GiB "rdma under 1/10 of tcp" "$(tick_of $((2 * ITERS)))"
row "emulated NIC thread CPU per GiB (the software device's own cost)" \
	"$(cpu "$(val rdma_nic_cpu_s_per_GiB "$T/rdma")")" "tcp $(cpu "$(val tcp_nic_cpu_s_per_GiB "$T/tcp")")" "n/a"
