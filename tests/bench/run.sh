#!/bin/bash
# tests/bench/run.sh BUILD_DIR [--quick]: run every side-by-side benchmark
# and print a Markdown table of marufs/peer ratios (>1 = marufs faster).
# Peers run in the same invocation: memcpy, iperf3 (raw TCP stream), tmpfs,
# bindfs over tmpfs (a FUSE passthrough), Redis.
set -euo pipefail
B=$(cd "${1:?usage: run.sh BUILD_DIR [--quick]}" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export MARUD=${MARUD:-$B/daemon/marud} MARUFS=${MARUFS:-$B/fs/marufs}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
. "$SRC/tests/integration/lib/common.sh"
MB=$B/tests/bench/maru_bench
FB=$B/tests/bench/fs_bench

if [ "$QUICK" = --quick ]; then
	ITERS=2; NAMES_SMALL=1000; NAMES_BIG=20000; SECS=1; SMALL=200; POOL=1G; IPERF_T=1
else
	ITERS=16; NAMES_SMALL=10000; NAMES_BIG=1000000; SECS=5; SMALL=2000; POOL=4G; IPERF_T=5
fi
PORT=$((20000 + RANDOM % 20000))
marud_start --size "$POOL" --listen "unix:$MARUD_SOCK" --listen "tcp://127.0.0.1:$PORT"
TCP_URI="maru://127.0.0.1:$PORT"

declare -A R
val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
row() { printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4"; }

echo "# libmaru: 32 MiB put/get over shm vs memcpy"
MARU_DATA=shm "$MB" putget "$MARU_URI" 32M "$ITERS" | tee "$T/putget"
echo "# libmaru: 32 MiB get over tcp vs iperf3 single stream"
MARU_DATA=tcp "$MB" get "$TCP_URI" 32M "$ITERS" | tee "$T/tcpget"
IPORT=$((PORT + 1))
iperf3 -s -1 -B 127.0.0.1 -p "$IPORT" >/dev/null 2>&1 &
sleep 0.5
iperf3 -c 127.0.0.1 -p "$IPORT" -t "$IPERF_T" -J >"$T/iperf.json"
IPERF_BPS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/8)' "$T/iperf.json")
echo "iperf3_Bps $IPERF_BPS"

echo "# libmaru: lookups/s with 4 threads, small vs large namespace; marud RSS per name"
rss() { awk '/^VmRSS/ { print $2 * 1024 }' "/proc/$MARUD_PID/status"; }
"$MB" lookups "$MARU_URI" "$NAMES_SMALL" 4 "$SECS" lk_small | tee "$T/lk_small"
RSS0=$(rss)
"$MB" lookups "$MARU_URI" "$NAMES_BIG" 4 "$SECS" lk_big | tee "$T/lk_big"
RSS1=$(rss)
PER_NAME=$(( (RSS1 - RSS0) / (NAMES_BIG) ))
echo "marud_rss_per_name_bytes $PER_NAME"

echo "# marufs vs tmpfs vs bindfs(tmpfs)"
marufs_mount
TMPFS=$T/tmpfs; BSRC=$T/bindsrc; BIND=$T/bind
mkdir -p "$TMPFS" "$BSRC" "$BIND"
mount -t tmpfs -o size=2G tmpfs "$TMPFS"
mount -t tmpfs -o size=2G tmpfs "$BSRC"
bindfs "$BSRC" "$BIND"
bench_cleanup() { fusermount3 -uz "$BIND" 2>/dev/null || true; umount -l "$BSRC" "$TMPFS" 2>/dev/null || true; }
on_exit bench_cleanup
for fs in maru tmpfs bind; do
	case $fs in maru) d=$MNT/bench ;; tmpfs) d=$TMPFS ;; bind) d=$BIND ;; esac
	mkdir -p "$d"
	"$FB" big "$d" 32M "$ITERS" >"$T/big_$fs"
	"$FB" small "$d" "$SMALL" >"$T/small_$fs"
	cat "$T/big_$fs" "$T/small_$fs" | sed "s/^/$fs /"
done

echo "# zero-copy: 32 MiB chunks through the preload shim and maru_map vs memcpy, FUSE, tmpfs"
ZB=$B/tests/bench/zc_bench
ZPRE=$B/lib/libmaru-preload.so
head -c 32M /dev/urandom >"$TMPFS/zc32"
cp "$TMPFS/zc32" "$MNT/zc32"
"$ZB" memcpy 32M "$ITERS" >"$T/zc_memcpy"
LD_PRELOAD=$ZPRE "$ZB" read "$MNT/zc32" "$ITERS" >"$T/zc_preload"
"$ZB" map "$MNT/zc32" "$ITERS" >"$T/zc_map"
"$ZB" mapheld "$MNT/zc32" "$ITERS" >"$T/zc_mapheld"
"$ZB" read "$MNT/zc32" "$ITERS" >"$T/zc_fuse"
"$ZB" readcold "$MNT/zc32" "$ITERS" >"$T/zc_fusecold"
"$ZB" read "$TMPFS/zc32" "$ITERS" >"$T/zc_tmpfs"
LD_PRELOAD=$ZPRE "$ZB" ttfb "$MNT/zc32" "$((ITERS * 4))" >"$T/zc_ttfb_maru"
"$ZB" ttfb "$TMPFS/zc32" "$((ITERS * 4))" >"$T/zc_ttfb_tmpfs"
for f in memcpy preload map mapheld fuse fusecold tmpfs ttfb_maru ttfb_tmpfs; do sed "s/^/zc_$f /" "$T/zc_$f"; done

echo
echo "| benchmark | marufs | peer | ratio (marufs/peer) |"
echo "|---|---|---|---|"
gb() { awk -v v="$1" 'BEGIN { printf "%.2f GB/s", v / 1e9 }'; }
ops() { awk -v v="$1" 'BEGIN { printf "%.0f/s", v }'; }
row "put 32 MiB, libmaru shm" "$(gb "$(val put_Bps "$T/putget")")" "memcpy $(gb "$(val memcpy_Bps "$T/putget")")" "$(awk '$1=="ratio" && $2=="put/memcpy" {print $3}' "$T/putget")"
row "get 32 MiB, libmaru shm" "$(gb "$(val get_Bps "$T/putget")")" "memcpy $(gb "$(val memcpy_Bps "$T/putget")")" "$(awk '$1=="ratio" && $2=="get/memcpy" {print $3}' "$T/putget")"
row "get 32 MiB, libmaru tcp (loopback)" "$(gb "$(val get_Bps "$T/tcpget")")" "iperf3 $(gb "$IPERF_BPS")" "$(ratio "$(val get_Bps "$T/tcpget")" "$IPERF_BPS")"
row "lookups/s, 4 threads, $NAMES_BIG vs $NAMES_SMALL names" "$(ops "$(val lookups_per_s "$T/lk_big")")" "$(ops "$(val lookups_per_s "$T/lk_small")")" "$(ratio "$(val lookups_per_s "$T/lk_big")" "$(val lookups_per_s "$T/lk_small")")"
row "marud RSS per name at $NAMES_BIG names" "$PER_NAME B" "budget 256 B" "$(ratio "$PER_NAME" 256)"
for peer in tmpfs bind; do
	pname=$([ $peer = bind ] && echo "bindfs/tmpfs" || echo tmpfs)
	for k in big_write_Bps big_read_cold_Bps big_read_warm_Bps; do
		row "$k 32 MiB vs $pname" "$(gb "$(val $k "$T/big_maru")")" "$(gb "$(val $k "$T/big_$peer")")" "$(ratio "$(val $k "$T/big_maru")" "$(val $k "$T/big_$peer")")"
	done
	for k in missing_ops stat_ops small_read_ops small_create_ops; do
		row "$k 4 KiB vs $pname" "$(ops "$(val $k "$T/small_maru")")" "$(ops "$(val $k "$T/small_$peer")")" "$(ratio "$(val $k "$T/small_maru")" "$(val $k "$T/small_$peer")")"
	done
done
zrow() { row "$1" "$(gb "$(val "$2" "$T/zc_$3")")" "$4 $(gb "$(val "$5" "$T/zc_$6")")" "$(ratio "$(val "$2" "$T/zc_$3")" "$(val "$5" "$T/zc_$6")")"; }
zrow "read 32 MiB, preload shim" read_Bps preload memcpy memcpy_Bps memcpy
zrow "read 32 MiB, maru_map+memcpy" map_Bps map memcpy memcpy_Bps memcpy
zrow "memcpy 32 MiB out of a held maru_map" mapheld_Bps mapheld memcpy memcpy_Bps memcpy
zrow "read 32 MiB, preload shim" read_Bps preload "marufs FUSE read (page cache warm)" read_Bps fuse
zrow "read 32 MiB, preload shim" read_Bps preload "marufs FUSE read (page cache cold)" readcold_Bps fusecold
zrow "read 32 MiB, maru_map+memcpy" map_Bps map "marufs FUSE read (page cache cold)" readcold_Bps fusecold
zrow "read 32 MiB, preload shim" read_Bps preload "tmpfs read" read_Bps tmpfs
zrow "read 32 MiB, maru_map+memcpy" map_Bps map "tmpfs read" read_Bps tmpfs
us() { awk -v v="$1" 'BEGIN { printf "%.1f us", v / 1e3 }'; }
row "mmap 32 MiB: time to first byte, preload shim" "$(us "$(val ttfb_ns "$T/zc_ttfb_maru")")" "tmpfs $(us "$(val ttfb_ns "$T/zc_ttfb_tmpfs")")" "$(ratio "$(val ttfb_ns "$T/zc_ttfb_tmpfs")" "$(val ttfb_ns "$T/zc_ttfb_maru")")"
# every measured value must be a positive number (a failed run is an error)
for f in "$T"/putget "$T"/tcpget "$T"/lk_small "$T"/lk_big "$T"/big_* "$T"/small_* "$T"/zc_*; do
	awk '$NF+0 <= 0 && $1 != "data_path" && $1 != "ratio" { bad = 1; print "bad value in " FILENAME ": " $0 } END { exit bad }' "$f"
done
marufs_umount
marud_stop
