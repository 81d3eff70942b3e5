#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/bench/fio_bench.sh BUILD_DIR [--quick]: fio's standard jobs on marufs,
# tmpfs and libfuse's passthrough_ll over tmpfs, side by side, one table.
# fio is what a storage engineer runs first; these are its plain jobs:
# sequential (1 MiB) and 4 KiB random reads and writes, buffered and
# O_DIRECT, every write job with verify=crc32c (fio reads each block back
# and checks it, so a fast wrong answer fails the job). tests/bench/run.sh
# calls it; it also runs alone (as root, with /dev/fuse).
#
# marufs files are write-once chunks: a file is pending while it is written
# and published, immutable, at its last close; writing to a published file
# makes a new version. So the write jobs create their files (fio writes a new
# file, the random one at random offsets before the close, then verifies),
# the read jobs read files fio laid out (written once and closed), and the
# "overwrite" jobs (fio's overwrite=1: lay the file out, close it, reopen it
# and write over it in place at random) are a rewrite on marufs: a new
# version published at the close. A job that fails prints its error in the
# table (and the script exits 1); none is expected to.
#
# Bounded: 64 MiB sequential and 16 MiB random files (--quick: 8 and 4 MiB),
# each job capped at RUNTIME seconds, every file deleted after its job; the
# whole bench takes under 3 minutes here. Ratios: marufs / peer of the job's
# bandwidth (read or write), above 1 = marufs faster.
set -euo pipefail
B=$(cd "${1:?usage: fio_bench.sh BUILD_DIR [--quick]}" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export MARUD=${MARUD:-$B/daemon/marud} MARUFS=${MARUFS:-$B/fs/marufs}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
. "$SRC/tests/integration/lib/common.sh"
PT=$B/tests/bench/passthrough_ll
command -v fio >/dev/null || fail "no fio: apt-get install fio (README)"
skip_unless_fuse

if [ "$QUICK" = --quick ]; then
	SEQ=8M RND=4M RUNTIME=5
else
	SEQ=64M RND=16M RUNTIME=15
fi

# name rw bs size [extra fio options]: the jobs, each run buffered and direct
JOBS=(
	"seq-write write 1M $SEQ verify=crc32c"
	"seq-read read 1M $SEQ"
	"rand-write randwrite 4k $RND verify=crc32c"
	"rand-read randread 4k $RND"
	"rand-overwrite randwrite 4k $RND verify=crc32c overwrite=1"
)

echo "# fio_bench: $(fio --version), kernel $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
marud_start --size 1G
marufs_mount
TMPFS=$T/tmpfs PSRC=$T/ptsrc PMNT=$T/pt
mkdir -p "$TMPFS" "$PSRC" "$PMNT"
mount -t tmpfs -o size=512M tmpfs "$TMPFS"
FSES="maru tmpfs"
fio_cleanup() {
	fusermount3 -uz "$PMNT" 2>/dev/null || true
	umount -l "$TMPFS" "$PSRC" 2>/dev/null || true
}
on_exit fio_cleanup
if [ -x "$PT" ]; then
	mount -t tmpfs -o size=512M tmpfs "$PSRC"
	"$PT" -f -o source="$PSRC" "$PMNT" >"$T/passthrough_ll.log" 2>&1 &
	wait_up $! "$MARU_IT_TIMEOUT" mountpoint -q "$PMNT" || fail "passthrough_ll did not mount $PMNT"
	FSES="$FSES pt"
else
	log "passthrough_ll was not built (no passthrough_ll.c in libfuse3-dev's examples): no column for it"
fi
dir_of() { case $1 in maru) echo "$MNT/fio" ;; tmpfs) echo "$TMPFS" ;; pt) echo "$PMNT" ;; esac; }
mkdir -p "$MNT/fio"

# run_job FS NAME RW BS SIZE DIRECT [opts]: one fio job, its JSON in $T/fio_FS_NAME-dDIRECT.json
run_job() {
	local fs=$1 name=$2 rw=$3 bs=$4 size=$5 direct=$6 out
	shift 6
	out=$T/fio_${fs}_$name-d$direct
	local opts=(--name="$name" --directory="$(dir_of "$fs")" --filename="$name-d$direct"
		--rw="$rw" --bs="$bs" --size="$size" --direct="$direct" --ioengine=psync
		--fallocate=none --runtime="$RUNTIME" --unlink=1 --randrepeat=0 --verify_state_save=0
		--output-format=json --output="$out.json")
	for o in "$@"; do opts+=("--$o"); done
	fio "${opts[@]}" >"$out.err" 2>&1 || true
}

for spec in "${JOBS[@]}"; do
	read -r name rw bs size extra <<<"$spec"
	for direct in 0 1; do
		for fs in $FSES; do
			# shellcheck disable=SC2086 # extra holds fio options, one word each
			run_job "$fs" "$name" "$rw" "$bs" "$size" "$direct" $extra
		done
	done
done

# One line per job and file system: "job fs MB/s error", from fio's JSON.
python3 - "$T" $FSES >"$T/fio_results" <<'EOF'
import json, os, sys
t, fses = sys.argv[1], sys.argv[2:]
for f in sorted(os.listdir(t)):
    if not (f.startswith("fio_") and f.endswith(".json")):
        continue
    fs, job = f[4:-5].split("_", 1)
    path = os.path.join(t, f)
    try:
        j = json.load(open(path))["jobs"][0]
    except (ValueError, KeyError, IndexError, OSError):
        err = open(path[:-5] + ".err").read().strip().splitlines()
        print(job, fs, 0, (err[-1] if err else "no output").replace("|", "/"))
        continue
    side = "write" if j["job options"]["rw"].endswith("write") else "read"
    bw = j[side]["bw_bytes"] / 1e6
    e = j.get("error", 0)
    print(job, fs, f"{bw:.1f}", os.strerror(e) if e else "-")
EOF
cat "$T/fio_results"

{
echo
echo "| fio job | marufs | tmpfs | passthrough_ll/tmpfs | marufs/tmpfs | marufs/passthrough_ll |"
echo "|---|---|---|---|---|---|"
for spec in "${JOBS[@]}"; do
	read -r name rw bs size extra <<<"$spec"
	for direct in 0 1; do
		job=$name-d$direct
		cell() { awk -v j="$job" -v f="$1" '$1 == j && $2 == f {
			if ($4 != "-") { $1 = $2 = $3 = ""; sub(/^ +/, ""); print "error: " $0 }
			else printf "%s MB/s\n", $3 }' "$T/fio_results"; }
		q() { awk -v j="$job" -v f="$1" '$1 == j && $2 == "maru" { a = $3; ea = $4 }
			$1 == j && $2 == f { b = $3; eb = $4 }
			END { if (ea == "-" && eb == "-" && b > 0) printf "%.2f\n", a / b; else print "n/a" }' "$T/fio_results"; }
		mode=$([ "$direct" = 1 ] && echo O_DIRECT || echo buffered)
		desc="$name $bs $mode, $size${extra:+ ($extra)}"
		printf '| %s | %s | %s | %s | %s | %s |\n' "$desc" "$(cell maru)" "$(cell tmpfs)" \
			"$(cell pt)" "$(q tmpfs)" "$(q pt)"
	done
done
} | tee "$T/fio_table"
echo "# fio_bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
marufs_umount
marud_stop
! grep -q 'error:' "$T/fio_table" || fail "a fio job failed (the table names it)"
