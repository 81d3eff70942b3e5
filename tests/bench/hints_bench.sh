#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/bench/hints_bench.sh BUILD_DIR: what hints buy on a software CXL-SSD
# (the tier extension: a file: pool on disk behind a 48 MiB DRAM budget), the
# seeds' experiment in small. A working set of 7 requests x 4 chunks (2, 4,
# 8 and 16 MiB: 210 MiB, 4.4x the budget) lives in the pool; each request's
# load reads its chunks through a marufs mount (data=tcp, so every byte comes
# through marud's mapping of the file). Before each load its chunks are made
# cold (paged out of marud and dropped from the page cache: another tenant
# filled the cache). Per request, the load time with
#   (a) everything resident (hinted and waited for),
#   (b) no hints,
#   (c) a read hint written to .maru/hints as the load starts,
#   (d) a hint AHEAD_MS ahead of the load: from .maru/hints at arrival, and
#       from lookup hints (the scheduler stats the chunks, marufs hints).
# Then a 32 MiB store into cold reserved bytes with and without a write hint.
# Ratios come from one run; prints a Markdown table.
set -euo pipefail
B=$(cd "${1:?usage: hints_bench.sh BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export MARUD=${MARUD:-$B/daemon/marud} MARUFS=${MARUFS:-$B/fs/marufs}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
. "$SRC/tests/integration/lib/common.sh"
HL=$B/tests/bench/hint_load
PR=$B/tests/integration/tools/page_resident
AHEAD_MS=${AHEAD_MS:-800}
REQS=7
SIZES=(2 4 8 16)
POOL=$T/pool

marud_start --pool "file:$POOL" --size 512M --region-extension "$B/daemon/ext/tier/tier.so" \
	--region-extension-config "budget=48M,workers=4,sweep_ms=10"
marufs_mount -o data=tcp -o lookup_hints=off
M1=$MNT
marufs_mount -o data=tcp -o lookup_hints=on -o entry_timeout=0 -o attr_timeout=0
M2=$LAST_MNT
mkdir "$M1/kv"
for r in $(seq 0 $((REQS - 1))); do
	for k in 0 1 2 3; do
		head -c $((SIZES[k] << 20)) /dev/urandom >"$M1/kv/r$r-c$k"
	done
done
files() { local k; for k in 0 1 2 3; do printf '%s/kv/r%s-c%s ' "$1" "$2" "$k"; done; }
paths() { local k; for k in 0 1 2 3; do printf 'kv/r%s-c%s ' "$1" "$k"; done; }
extents() {
	local k out=
	for k in 0 1 2 3; do
		out+=$(getfattr --absolute-names --only-values -n user.maru.extent "$M1/kv/r$1-c$k"),
	done
	echo "${out%,}"
}
cold() { "$HL" cold "$MARUD_PID" "$POOL" "$(extents "$1")"; }
hint() { printf '%s\n' "$1" >"$M1/.maru/hints"; }
resident() { [ "$("$PR" "$POOL" "$(extents "$1")")" -ge $((30 << 20)) ]; }
sleep_ms() { sleep "$(awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }')"; }

declare -A SUM
add() { SUM[$1]=$(awk -v a="${SUM[$1]:-0}" -v b="$2" 'BEGIN { print a + b }'); }
for r in $(seq 0 $((REQS - 1))); do
	# (a) everything resident
	hint "read a$r $(paths "$r")"
	wait_for 10 resident "$r" || fail "request $r never became resident"
	add a "$("$HL" load $(files "$M1" "$r"))"
	hint "read_end a$r"
	# (b) no hints
	cold "$r"
	add b "$("$HL" load $(files "$M1" "$r"))"
	# (c) a hint as the load starts
	cold "$r"
	hint "read c$r $(paths "$r")"
	add c "$("$HL" load $(files "$M1" "$r"))"
	hint "read_end c$r"
	# (d) a hint at arrival, AHEAD_MS before the load
	cold "$r"
	hint "read d$r $(paths "$r")"
	sleep_ms "$AHEAD_MS"
	[ -z "${HB_DEBUG:-}" ] || log "d$r resident before load: $("$PR" "$POOL" "$(extents "$r")")"
	add d "$("$HL" load $(files "$M1" "$r"))"
	hint "read_end d$r"
	# (d') lookup hints: the scheduler's exists() check, then the load
	cold "$r"
	stat $(files "$M2" "$r") >/dev/null
	sleep_ms "$AHEAD_MS"
	add l "$("$HL" load $(files "$M2" "$r"))"
done
# stores: 32 MiB into cold reserved bytes (first make freed bytes hold data)
head -c $((96 << 20)) /dev/urandom >"$M1/scratch"
rm "$M1/scratch"
s0=$("$HL" store "$M1" s0 $((32 << 20)) "$MARUD_PID" "$POOL" 0 "$AHEAD_MS")
s1=$("$HL" store "$M1" s1 $((32 << 20)) "$MARUD_PID" "$POOL" 1 "$AHEAD_MS")

# every chunk still reads back (hints never change bytes): checksum twice
for r in 0 $((REQS - 1)); do
	cold "$r"
	a=$(cat $(files "$M1" "$r") | md5sum)
	b=$(cat $(files "$M2" "$r") | md5sum)
	[ "$a" = "$b" ] || fail "request $r reads differently through the two mounts"
done

ms() { awk -v s="${SUM[$1]}" -v n="$REQS" 'BEGIN { printf "%.1f", s / n }'; }
rat() { awk -v a="${SUM[$1]}" -v b="${SUM[a]}" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "| load of one request (4 chunks, 30 MiB) | ms | vs (a) | seeds (TTFT of a reused prefix) |"
echo "|---|---|---|---|"
echo "| (a) everything resident | $(ms a) | 1.00 | baseline |"
echo "| (b) no hints | $(ms b) | $(rat b) | about +7% with the device's read-ahead |"
echo "| (c) hint as the load starts | $(ms c) | $(rat c) | +3.7% (hint at load start) |"
echo "| (d) hint at arrival (.maru/hints), ${AHEAD_MS} ms ahead | $(ms d) | $(rat d) | +0.5% (hint on arrival) |"
echo "| (d) lookup hints, ${AHEAD_MS} ms ahead | $(ms l) | $(rat l) | (PR #130: hint at first lookup) |"
echo
echo "| 32 MiB store into cold pages | MB/s | seeds |"
echo "|---|---|---|"
echo "| no write hint | $s0 | 1300 (1.3 GB/s) |"
echo "| write hint ${AHEAD_MS} ms ahead | $s1 | 10300 (10.3 GB/s) |"
awk -v d="${SUM[d]}" -v l="${SUM[l]}" -v a="${SUM[a]}" -v b="${SUM[b]}" 'BEGIN {
	printf "\ngoal (d) within 1.1x of (a): .maru/hints %s, lookup hints %s; (b) is %.0f%% slower than (a)\n",
		d / a <= 1.1 ? "met" : "NOT met", l / a <= 1.1 ? "met" : "NOT met", (b / a - 1) * 100 }'
marufs_umount "$M2"
marufs_umount "$M1"
marud_stop
