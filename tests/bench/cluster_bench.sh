#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/bench/cluster_bench.sh BUILD_DIR [--quick]: the cluster mount
# (marufs maru+etcd://HOST:PORT/NAME, issue 24) measured side by side in one
# run. Every pool, the etcd member and each worker is a network namespace of
# its own on one bridge (tests/cluster/lib.sh over tests/multihost/lib.sh),
# real TCP between them; every mount is data=tcp with the pools' key.
# One etcd member (not three): the bench measures the data path, and a
# three-member Raft costs CPU on this 2-core VM all the time.
#
# 1. Routing cost. Cluster K1 is one pool (host a1). From worker w1, a
#    cluster mount of K1 and a direct mount of the same pool
#    (maru://ADDR:7450: the very tcp URI the cluster mount uses for it, the
#    same key, the same data path, tcp) do the same work turn about inside
#    one process (clb.py p1: batches of 10 operations, or one 32 MiB file,
#    the side that goes first swapped each batch), so that a load that
#    comes and goes on this shared machine falls on both alike; each round
#    gives a cluster/direct ratio, the row the median over $ROUNDS rounds
#    (issue 24: >= 0.95). Writes and cold reads of 32 MiB files, creates
#    of 4 KiB files, and lookups the kernel has not cached: stat of names
#    neither mount has seen (put beforehand by cl_tool, libmaru only), stat
#    of missing names, open+read of unseen 1 KiB files. Beside the
#    small-file rows: marud requests (libmaru's, STATS excluded) and FUSE
#    requests per operation on each side, counted from .maru/stats.
# 2. Engine pattern on 1, 2 and 3 pools. Clusters K1 (a1), K2 (b1 b2) and
#    K3 (c1 c2 c3), every pool in its own namespace. Workers w1 and w2, each
#    with a cluster mount of each, at the same time put $NF files of 1 MiB
#    each as LMCache does (<key>.data.tmp, written whole, closed, renamed
#    onto <key>.data), then each reads back the other's files (every byte
#    checked). Aggregate MB/s (bytes of both workers over the time from the
#    first start to the last end), the CPU of the cluster's marud processes
#    (utime+stime of /proc/PID/stat) and of the two mounts' marufs, per GiB
#    (each GiB put once and read back once) and per file (one put and one
#    read), and how busy the machine was (/proc/stat). The clusters take
#    turns, the order rotated each round, after a round not counted (the
#    pools' first touch of their pages). Beside them what the count of
#    pools may change: marud and FUSE requests per file, the machine's
#    context switches per file, the mean time marud spent in a RENAME and
#    the waits for a mount's acknowledgement it cut at their bound
#    (marud_ack_timeouts_total, summed over the pools). The bytes renames
#    moved between pools are counted (maru_cluster_rename_moved_bytes_total):
#    0 expected.
# 3. Cross-pool rename on K3: a file of S MiB renamed onto a name another
#    pool owns (cl_tool owner says which), against a rename onto a name of
#    the same pool; ms per MiB and the bytes the mount says it moved.
#
# CLB_CONTROL=1: part 1 only, with a second direct mount in the cluster
# mount's place (a control: how far apart two alike sides come out here).
# Never fails on speed; fails on wrong bytes or a missing figure.
# --quick: one round, a few files (CI proves it runs and prints its rows).
set -euo pipefail
B=$(cd "${1:?usage: cluster_bench.sh BUILD_DIR [--quick]}" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export MARUD=${MARUD:-$B/daemon/marud} MARUFS=${MARUFS:-$B/fs/marufs} SRCDIR=$SRC
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CL_TOOL=$B/tests/cluster/cl_tool
. "$SRC/tests/cluster/lib.sh"
skip_unless_cmd python3

if [ "$QUICK" = --quick ]; then
	ROUNDS=1; BIGSZ=4M; BIGN=1; NSMALL=20; ROUNDS2=1; WARM=1; NF=4; SIZES="1 2"; REPS=1
else
	ROUNDS=5; BIGSZ=32M; BIGN=3; NSMALL=300; ROUNDS2=3; WARM=0; NF=96; SIZES="1 4 16 64"; REPS=3
fi
[ -x "$CL_TOOL" ] || fail "$CL_TOOL is not built"

SECONDS=0
cl_init
cl_etcd_cluster e1
mh_host w1
mh_host w2
cat >"$T/clb.py" <<'EOF'
# the timed POSIX loops of cluster_bench.sh; every byte read is checked
import os, random, sys, time

def blob(tag, size):
    return random.Random(tag).randbytes(size)

def put(d, tag, n, size):	# LMCache: <key>.data.tmp, then os.replace
    base = memoryview(blob(tag, size))
    t0 = time.time()
    for i in range(n):
        final = "%s/%s-%d.data" % (d, tag, i)
        fd = os.open(final + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        todo = [i.to_bytes(8, "little"), base[8:]]
        while todo:
            k = os.writev(fd, todo)
            while todo and k >= len(todo[0]):
                k -= len(todo[0])
                todo.pop(0)
            if todo:
                todo[0] = memoryview(todo[0])[k:]
        os.close(fd)
        os.replace(final + ".tmp", final)
    print("%.6f %.6f" % (t0, time.time()))

def get(d, tag, n, size):
    base = blob(tag, size)
    t0 = time.time()
    for i in range(n):
        p = "%s/%s-%d.data" % (d, tag, i)
        with open(p, "rb", buffering=0) as f:
            b = f.read(size + 1)
        if len(b) != size or b[:8] != i.to_bytes(8, "little") or b[8:] != base[8:]:
            sys.exit("clb.py: %s: wrong bytes" % p)
    print("%.6f %.6f" % (t0, time.time()))

def mv(src, dst):
    t0 = time.time()
    os.rename(src, dst)
    print("%.3f" % ((time.time() - t0) * 1e3))

def pair(fc, fd, n, batch, unit):	# turn about in batches: rates c, d
    tc = td = 0.0
    for b0 in range(0, n, batch):
        order = ((fc, 0), (fd, 1)) if (b0 // batch) % 2 == 0 else ((fd, 1), (fc, 0))
        for f, s in order:
            t = time.perf_counter()
            for i in range(b0, min(n, b0 + batch)):
                f(i)
            if s:
                td += time.perf_counter() - t
            else:
                tc += time.perf_counter() - t
    return n * unit / tc, n * unit / td

def wfile(p, data):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    v, k = memoryview(data), 0
    while k < len(v):
        k += os.write(fd, v[k:])
    os.close(fd)

def rfile(p, want):
    with open(p, "rb", buffering=0) as f:
        b = f.read(len(want) + 1)
    if b != want:
        sys.exit("clb.py: %s: wrong bytes" % p)

def p1(kind, dc, dd, n, arg):	# part 1, both sides turn about
    out = {}
    if kind == "big":
        data = blob("big", arg)
        w = lambda d: lambda i: wfile("%s/big-%d" % (d, i), data)
        out["write"] = pair(w(dc), w(dd), n, 1, arg)
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")
        r = lambda d: lambda i: rfile("%s/big-%d" % (d, i), data)
        out["read"] = pair(r(dc), r(dd), n, 1, arg)
    elif kind == "create":
        data = blob("small", 4096)
        w = lambda d: lambda i: wfile("%s/s%d" % (d, i), data)
        out["create"] = pair(w(dc), w(dd), n, 10, 1)
    elif kind == "names":	# dc, dd: "MNT:BASE"
        (mc, bc), (md, bd) = dc.split(":"), dd.split(":")
        def st(m, b):
            def f(i):
                if os.stat("%s/n-%d.bin" % (m, int(b) + i)).st_size != 1024:
                    sys.exit("clb.py: n-%d.bin: wrong size" % (int(b) + i))
            return f
        out["lookup"] = pair(st(mc, bc), st(md, bd), n, 10, 1)
    elif kind == "reads":	# dc, dd: "MNT:BASE"
        (mc, bc), (md, bd) = dc.split(":"), dd.split(":")
        def rd(m, b):
            def f(i):
                k = int(b) + i
                rfile("%s/n-%d.bin" % (m, k), bytes((k * 131 + j * 7) & 0xff for j in range(1024)))
            return f
        out["read1k"] = pair(rd(mc, bc), rd(md, bd), n, 10, 1)
    elif kind == "miss":
        def ms(d):
            def f(i):
                try:
                    os.stat("%s/miss-%d" % (d, i))
                    sys.exit("clb.py: %s/miss-%d exists" % (d, i))
                except FileNotFoundError:
                    pass
            return f
        out["miss"] = pair(ms(dc), ms(dd), n, 10, 1)
    for k, (c, d) in out.items():
        print("%s_c %.1f\n%s_d %.1f" % (k, c, k, d))

c, a = sys.argv[1], sys.argv[2:]
if c == "p1":
    p1(a[0], a[1], a[2], int(a[3]), int(a[4]))
elif c in ("put", "get"):
    (put if c == "put" else get)(a[0], a[1], int(a[2]), int(a[3]))
elif c == "mv":
    mv(a[0], a[1])
elif c == "fill":	# FILE MIB N: a file of MIB MiB, bytes from N
    with open(a[0], "wb") as f:
        f.write(blob(a[2], int(a[1]) << 20))
EOF
clb() { python3 "$T/clb.py" "$@"; }

# ---- the three clusters ----
declare -A K_POOLS=() K_URI=()
K_POOLS[K1]="a1"
K_POOLS[K2]="b1 b2"
K_POOLS[K3]="c1 c2 c3"
for k in K1 K2 K3; do
	CL_CLUSTER=clb$$-$k
	K_URI[$k]=maru+etcd://$CL_ETCD/$CL_CLUSTER
	for p in ${K_POOLS[$k]}; do
		cl_pool_start "$p" -D cluster-ttl=5 --size 768M
		[ "$(cat "/proc/${CL_POOL_PID[$p]}/comm")" = marud ] ||
			fail "pid ${CL_POOL_PID[$p]} of $p is not marud"
	done
	n=$(wc -w <<<"${K_POOLS[$k]}")
	mh_run w1 "$CL_TOOL" wait "${K_URI[$k]}" "$n" >/dev/null ||
		fail "cl_tool does not see $n pools in $k"
done

# wmount HOST URI: a data=tcp mount with the key in HOST ($LAST_MNT)
wmount()
{
	local saved=("${WRAP[@]}")
	WRAP=(nsenter --net="/run/netns/$(mh_ns "$1")" "${saved[@]}")
	marufs_mount -u "$2" -o "data=tcp,key_file=$MH_KEY"
	WRAP=("${saved[@]}")
}
active()	# MNT N: .maru/pool lists N active pools
{
	[ "$(grep -c '^pool .* active tcp ' "$1/.maru/pool")" = "$2" ]
}
log "$SECONDS s: pools up"
declare -A M=()
for k in K1 K2 K3; do
	for w in w1 w2; do
		wmount "$w" "${K_URI[$k]}"
		M[$k$w]=$LAST_MNT
		n=$(wc -w <<<"${K_POOLS[$k]}")
		wait_for 10 active "$LAST_MNT" "$n" ||
			fail "$k mount in $w: $(cat "$LAST_MNT/.maru/pool")"
	done
done
DIRECT_URI=maru://${MH_ADDR[a1]}:$MH_PORT
grep -q "^pool .* $DIRECT_URI active tcp " "${M[K1w1]}/.maru/pool" ||
	fail "the K1 mount does not use $DIRECT_URI: $(cat "${M[K1w1]}/.maru/pool")"
wmount w1 "$DIRECT_URI"
DM=$LAST_MNT
CM=${M[K1w1]}
CSIDE="cluster mount"
if [ "${CLB_CONTROL:-0}" = 1 ]; then
	# the control: a second direct mount in the cluster mount's place
	# (what the harness alone makes of two alike sides); part 1 only
	wmount w1 "$DIRECT_URI"
	CM=$LAST_MNT
	CSIDE="direct mount 2 (control)"
fi

val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# counts MNT: marud requests (STATS excluded) and FUSE requests so far
counts()
{
	awk '/^maru_client_request_duration_seconds_count/ && !/op="STATS"/ { q += $NF }
	     /^marufs_fuse_ops_total/ { f += $NF } END { printf "%d %d\n", q, f }' "$1/.maru/stats"
}
per_op()	# KEY FILE BEFORE AFTER N SUFFIX: KEY_q SUFFIX and KEY_f SUFFIX lines
{
	local b a
	read -r -a b <<<"$3"
	read -r -a a <<<"$4"
	echo "${1}_q$6 $(awk -v d=$((a[0] - b[0])) -v n="$5" 'BEGIN { printf "%.2f", d / n }')" >>"$2"
	echo "${1}_f$6 $(awk -v d=$((a[1] - b[1])) -v n="$5" 'BEGIN { printf "%.2f", d / n }')" >>"$2"
}

# ---- 1. routing cost: one-pool cluster mount vs direct mount ----
log "$SECONDS s: part 1: routing cost, $ROUNDS rounds"
NAMES_PER=$((NSMALL * 2))	# per side per round: NSMALL to stat, NSMALL to read
mh_run w1 "$CL_TOOL" put "${K_URI[K1]}" "$MH_KEY" $((NAMES_PER * 2 * ROUNDS)) n >/dev/null ||
	fail "cl_tool put of the lookup names"
# p1step R KIND ARG C D N [KEY...]: clb.py p1 into $T/p1-R, and the
# requests per op of each side as KEY_q_c, KEY_f_c, KEY_q_d, KEY_f_d
p1step()
{
	local r=$1 kind=$2 arg=$3 c=$4 d=$5 n=$6 c0 d0 k
	shift 6
	c0=$(counts "$CM")
	d0=$(counts "$DM")
	clb p1 "$kind" "$c" "$d" "$n" "$arg" >>"$T/p1-$r" || fail "clb.py p1 $kind (round $r)"
	for k in "$@"; do
		per_op "$k" "$T/p1-$r" "$c0" "$(counts "$CM")" "$n" _c
		per_op "$k" "$T/p1-$r" "$d0" "$(counts "$DM")" "$n" _d
	done
}
for r in $(seq "$ROUNDS"); do
	mkdir "$CM/c$r" "$DM/d$r"
	p1step "$r" big "$(numfmt --from=iec "$BIGSZ")" "$CM/c$r" "$DM/d$r" "$BIGN"
	p1step "$r" create 0 "$CM/c$r" "$DM/d$r" "$NSMALL" create
	bc=$(((r - 1) * 2 * NAMES_PER))
	bd=$((bc + NAMES_PER))
	p1step "$r" names 0 "$CM:$bc" "$DM:$bd" "$NSMALL" lookup
	p1step "$r" reads 0 "$CM:$((bc + NSMALL))" "$DM:$((bd + NSMALL))" "$NSMALL" read
	p1step "$r" miss 0 "$CM/c$r" "$DM/d$r" "$NSMALL" miss
	rm -rf "${CM:?}/c$r" "${DM:?}/d$r"
done
rval() { local r vs=(); for r in $(seq "$ROUNDS"); do vs+=("$(val "$1" "$T/p1-$r")"); done; med "${vs[@]}"; }
# rratio KEY: the median of the rounds' KEY_c / KEY_d, then each round's
rratio()
{
	local r vs=()
	for r in $(seq "$ROUNDS"); do
		vs+=("$(ratio "$(val "${1}_c" "$T/p1-$r")" "$(val "${1}_d" "$T/p1-$r")")")
	done
	echo "$(med "${vs[@]}") ($(IFS=/; echo "${vs[*]}" | sed 's|/| / |g'))"
}
TAB1=()
row1()	# LABEL KEY SCALE UNIT [REQKEY]
{
	local c d q=- f=- rr
	c=$(awk -v v="$(rval "${2}_c")" -v s="$3" 'BEGIN { printf "%.0f", v / s }')
	d=$(awk -v v="$(rval "${2}_d")" -v s="$3" 'BEGIN { printf "%.0f", v / s }')
	if [ -n "${5:-}" ]; then
		q="$(rval "${5}_q_c") / $(rval "${5}_q_d")"
		f="$(rval "${5}_f_c") / $(rval "${5}_f_d")"
	fi
	rr=$(rratio "$2")
	TAB1+=("$(printf '| %s | %s %s | %s %s | **%s** %s | %s | %s | %s |' "$1" "$c" "$4" "$d" "$4" \
		"${rr%% *}" "${rr#* }" \
		"$(awk -v x="${rr%% *}" 'BEGIN { print (x >= 0.95) ? "met" : "NOT met" }')" "$q" "$f")")
}
row1 "write $BIGSZ files (create, write, close)" write 1048576 MiB/s
row1 "read $BIGSZ files, cold (after drop_caches)" read 1048576 MiB/s
row1 "create 4 KiB files (create, write, close)" create 1 /s create
row1 "lookup: stat of a name this mount never saw" lookup 1 /s lookup
row1 "lookup: stat of a missing name" miss 1 /s miss
row1 "read 1 KiB files never opened here (lookup, open, read, close)" read1k 1 /s read

print1()
{
	echo
	echo "# 1. routing cost: the one pool of cluster K1 through the $CSIDE vs through a direct mount"
	echo "# (w1, data=tcp to ${MH_ADDR[a1]}:$MH_PORT with the same key on both; medians of $ROUNDS rounds turn about)"
	echo "| row | $CSIDE | direct mount | ratio | >= 0.95 | marud requests per op, $CSIDE / direct | FUSE requests per op, $CSIDE / direct |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${TAB1[@]}"
}
if [ "${CLB_CONTROL:-0}" = 1 ]; then
	print1
	exit 0
fi

# ---- 2. engine pattern on 1, 2 and 3 pools ----
log "$SECONDS s: part 2: engine pattern, $ROUNDS2 rounds of $NF x 1 MiB per worker"
ticks()	# PID...: utime+stime of each, summed
{
	local p s=0
	for p in "$@"; do
		s=$((s + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo "$s"
}
busy()	# busy and total jiffies of the machine, its context switches
{
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; b = t - $5 - $6 }
	     $1 == "ctxt" { c = $2 } END { print b, t, c }' /proc/stat
}
moved()	# MNT...: bytes moved by renames between pools
{
	local m s=0
	for m in "$@"; do
		s=$((s + $(mh_stat_value "$m" maru_cluster_rename_moved_bytes_total | cut -d. -f1)))
	done
	echo "$s"
}
HZ=$(getconf CLK_TCK)
# waits MNT: the pools' (marud's) RENAME time and count, and the waits for
# a mount's acknowledgement that ran to their bound (ack timeouts), summed
# over the cluster's pools as the mount's .maru/stats lists them
waits()
{
	awk '/^marud_request_duration_seconds_sum.*op="RENAME"/ { s += $NF }
	     /^marud_request_duration_seconds_count.*op="RENAME"/ { c += $NF }
	     /^marud_ack_timeouts_total/ { a += $NF } END { printf "%.6f %d %d\n", s, c, a }' \
		"$1/.maru/stats"
}
counts2()	# MNT MNT: counts of both, summed
{
	local a b
	read -r -a a <<<"$(counts "$1")"
	read -r -a b <<<"$(counts "$2")"
	echo "$((a[0] + b[0])) $((a[1] + b[1]))"
}
# engine K R: one round of cluster K into $T/p2-K-R
engine()
{
	local k=$1 r=$2 m1=${M[${1}w1]} m2=${M[${1}w2]} d=e$2 pids=() p f=$T/p2-$1-$2
	local t0 t1 u0 u1 b0 b1 mv0 j1 j2 q0 w0
	for p in ${K_POOLS[$k]}; do
		pids+=("${CL_POOL_PID[$p]}")
	done
	mkdir "$m1/$d"
	wait_for 5 test -d "$m2/$d" || fail "$m2/$d not there"
	mv0=$(moved "$m1" "$m2")
	q0=$(counts2 "$m1" "$m2")
	w0=$(waits "$m1")
	t0=$(ticks "${pids[@]}")
	u0=$(ticks "${MARUFS_PID_OF[$m1]}" "${MARUFS_PID_OF[$m2]}")
	b0=$(busy)
	mh_run w1 python3 "$T/clb.py" put "$m1/$d" w1 "$NF" 1048576 >"$T/put-w1" 2>&1 &
	j1=$!
	mh_run w2 python3 "$T/clb.py" put "$m2/$d" w2 "$NF" 1048576 >"$T/put-w2" 2>&1 &
	j2=$!
	wait "$j1" || fail "put in w1 ($k): $(cat "$T/put-w1")"
	wait "$j2" || fail "put in w2 ($k): $(cat "$T/put-w2")"
	# each reads the other's files: nothing from its own page cache
	mh_run w1 python3 "$T/clb.py" get "$m1/$d" w2 "$NF" 1048576 >"$T/get-w1" 2>&1 &
	j1=$!
	mh_run w2 python3 "$T/clb.py" get "$m2/$d" w1 "$NF" 1048576 >"$T/get-w2" 2>&1 &
	j2=$!
	wait "$j1" || fail "get in w1 ($k): $(cat "$T/get-w1")"
	wait "$j2" || fail "get in w2 ($k): $(cat "$T/get-w2")"
	t1=$(ticks "${pids[@]}")
	u1=$(ticks "${MARUFS_PID_OF[$m1]}" "${MARUFS_PID_OF[$m2]}")
	b1=$(busy)
	awk -v n="$NF" -v hz="$HZ" -v dt=$((t1 - t0)) -v du=$((u1 - u0)) \
	    -v b0="$b0" -v b1="$b1" '
		FILENAME ~ /put-/ { if (!ps || $1 < ps) ps = $1; if ($2 > pe) pe = $2 }
		FILENAME ~ /get-/ { if (!gs || $1 < gs) gs = $1; if ($2 > ge) ge = $2 }
		END {
			split(b0, x, " "); split(b1, y, " ")
			mib = 2 * n
			printf "put_MBps %.1f\nget_MBps %.1f\n", mib * 1.048576 / (pe - ps), mib * 1.048576 / (ge - gs)
			printf "marud_s_per_GiB %.3f\nmarud_ms_per_op %.3f\n", dt / hz / (mib / 1024), dt / hz * 1000 / mib
			printf "marufs_s_per_GiB %.3f\nmarufs_ms_per_op %.3f\n", du / hz / (mib / 1024), du / hz * 1000 / mib
			printf "busy_pct %.0f\n", 100 * (y[1] - x[1]) / (y[2] - x[2])
			printf "ctxt_per_op %.0f\n", (y[3] - x[3]) / mib
		}' "$T/put-w1" "$T/put-w2" "$T/get-w1" "$T/get-w2" >"$f"
	per_op req "$f" "$q0" "$(counts2 "$m1" "$m2")" $((2 * NF)) ""
	echo "$w0 $(waits "$m1")" | awk '{ printf "rename_ms %.2f\nack_timeouts %d\n",
		($5 > $2) ? 1000 * ($4 - $1) / ($5 - $2) : 0, $6 - $3 }' >>"$f"
	echo "moved $(( $(moved "$m1" "$m2") - mv0 ))" >>"$f"
	rm -rf "${m1:?}/$d"
}
ORDER=(K1 K2 K3)
# round 0 (full form only) is not counted: it makes the pools' pages the
# later rounds write into pages written before (README: first touch)
for r in $(seq "$WARM" "$ROUNDS2"); do
	for k in "${ORDER[@]}"; do
		engine "$k" "$r"
	done
	ORDER=("${ORDER[@]:1}" "${ORDER[0]}")
done
kval() { local r vs=(); for r in $(seq "$ROUNDS2"); do vs+=("$(val "$1" "$T/p2-$2-$r")"); done; med "${vs[@]}"; }
ksum() { local r s=0; for r in $(seq "$ROUNDS2"); do s=$((s + $(val "$1" "$T/p2-$2-$r"))); done; echo "$s"; }
TAB2=()
for k in K1 K2 K3; do
	TAB2+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' \
		"$(wc -w <<<"${K_POOLS[$k]}")" "$(kval put_MBps "$k")" "$(kval get_MBps "$k")" \
		"$(ratio "$(kval put_MBps "$k")" "$(kval put_MBps K1)") / $(ratio "$(kval get_MBps "$k")" "$(kval get_MBps K1)")" \
		"$(kval marud_s_per_GiB "$k")" "$(kval marud_ms_per_op "$k")" \
		"$(kval marufs_s_per_GiB "$k")" "$(kval marufs_ms_per_op "$k")" \
		"$(kval req_q "$k")" "$(kval req_f "$k")" \
		"$(kval busy_pct "$k")%" "$(kval ctxt_per_op "$k")" "$(kval rename_ms "$k")" \
		"$(ksum ack_timeouts "$k")" "$(ksum moved "$k")")")
done

# ---- 3. cross-pool rename cost per MiB ----
log "$SECONDS s: part 3: cross-pool rename, sizes $SIZES MiB, $REPS each"
X=${M[K3w1]}
mkdir "$X/xr"
owner() { mh_run w1 "$CL_TOOL" owner "${K_URI[K3]}" "$@"; }
TAB3=()
XS=()
XY=()
for s in $SIZES; do
	lo=()
	cr=()
	mvb=()
	for i in $(seq "$REPS"); do
		src=xr/s$s-$i
		clb fill "$T/src" "$s" "$s-$i"
		cp "$T/src" "$X/$src" || fail "write $src"
		so=$(owner "$src" | awk '{ print $2 }')
		cands=()
		for j in $(seq 1 60); do
			cands+=("xr/t$s-$i-$j")
		done
		owner "${cands[@]}" >"$T/owners"
		same=$(awk -v o="$so" '$2 == o { print $1; exit }' "$T/owners")
		other=$(awk -v o="$so" '$2 != o { print $1; exit }' "$T/owners")
		[ -n "$same" ] && [ -n "$other" ] || fail "no candidate names for $src"
		m0=$(moved "$X")
		lo+=("$(clb mv "$X/$src" "$X/$same")")
		[ "$(moved "$X")" = "$m0" ] || fail "a rename within one pool moved bytes"
		cr+=("$(clb mv "$X/$same" "$X/$other")")
		mvb+=($(( $(moved "$X") - m0 )))
		[ "${mvb[-1]}" = $((s << 20)) ] ||
			fail "the rename across pools moved ${mvb[-1]} bytes, not $((s << 20))"
		cmp -s "$T/src" "$X/$other" || fail "$other differs after the rename across pools"
		[ ! -e "$X/$same" ] || fail "$same still there after the rename"
		rm -f "$X/$other"
	done
	l=$(med "${lo[@]}")
	c=$(med "${cr[@]}")
	XS+=("$s")
	XY+=("$c")
	TAB3+=("$(printf '| %s MiB | %s ms | %s ms | %s | %s |' "$s" "$l" "$c" \
		"$(awk -v c="$c" -v l="$l" -v s="$s" 'BEGIN { printf "%.2f", (c - l) / s }')" "$(med "${mvb[@]}")")")
done
# the slope of the cross-pool time over the size (least squares)
SLOPE=$(paste -d' ' <(printf '%s\n' "${XS[@]}") <(printf '%s\n' "${XY[@]}") |
	awk '{ n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
	     END { d = n * sxx - sx * sx; if (d > 0) printf "%.2f", (n * sxy - sx * sy) / d; else print "n/a" }')
rmdir "$X/xr"

log "$SECONDS s: done"
print1
echo
echo "# 2. engine pattern (LMCache: <key>.data.tmp then rename), 2 workers x $NF x 1 MiB, each reads the other's"
echo "# (medians of $ROUNDS2 rounds; CPU per GiB put once and read back once, per op = one put + one read)"
echo "| pools | put MB/s (aggregate) | read MB/s (aggregate) | vs 1 pool, put / read | marud CPU s/GiB | marud CPU ms/op | marufs CPU s/GiB | marufs CPU ms/op | marud requests per op | FUSE requests per op | machine busy (2 vCPUs) | context switches per op (machine) | marud RENAME, ms | ack waits cut at the bound | bytes moved by renames |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${TAB2[@]}"
echo
echo "# 3. rename across pools (K3), medians of $REPS"
echo "| size | rename within a pool | rename across pools | ms per MiB (across - within) | bytes moved |"
echo "|---|---|---|---|---|"
printf '%s\n' "${TAB3[@]}"
echo "| slope over the sizes | | | $SLOPE ms/MiB | |"
for m in "${!MARUFS_PID_OF[@]}"; do
	marufs_umount "$m"
done
