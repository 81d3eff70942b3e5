#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cl_mount: the cluster mount, marufs maru+etcd://HOST:PORT/NAME, over
# three marud pools. Three etcd members, three pools and a worker are hosts
# of their own (network namespaces, real TCP); the worker has the cluster
# mount and, to check where names went, a direct mount of each pool
# (data=tcp with the key). Everything is real: etcd, marud, marufs, FUSE,
# coreutils; nothing is faked. Checked:
#  - .maru/pool lists the three pools, active, with their data path;
#  - a second cluster mount sees the first one's new, rewritten and
#    removed names at once (the pools' event streams, merged);
#  - mkdir -p reaches every pool; files written with cp and dd read back
#    byte-exact; the names spread over all three pools (each pool's direct
#    mount), ls lists each name once;
#  - rm; mv within one pool (no bytes moved) and across pools (bytes exact,
#    old name gone, a reader open before it keeps its bytes, the bytes
#    counted in .maru/stats); vLLM's pattern
#    (<final>_<random>.tmp then rename) keeps both names on one pool;
#  - a .maru/hints line reaches each named file's owner's region
#    extension (tests/ext/probe_ext logs it), and no other pool's;
#  - rmdir is ENOTEMPTY while another pool holds a name under it; df sums;
#    an fstab-style mount (mount.fuse3 -t fuse.marufs) of the URI works;
#  - etcd's quorum lost: the mount keeps serving every pool with the last
#    membership, each call within the timeout; etcd back, nothing changed;
#  - a pool killed: once it left the membership its names miss (ENOENT)
#    and the others' names read within the timeout.
. "$(dirname "$0")/lib.sh"

: "${CL_TOOL:?}"
: "${PROBE_EXT:?PROBE_EXT must name the probe extension}"
NF=60
TMO=2000
cl_init
cl_etcd_cluster e1 e2 e3
mh_host w1
CL=maru+etcd://$CL_ETCD/$CL_CLUSTER
for p in p1 p2 p3; do
	cl_pool_start "$p" -D cluster-ttl=3 --region-extension "$PROBE_EXT" \
		--region-extension-config "log=$T/probe-$p.log"
done
mh_run w1 "$CL_TOOL" wait "$CL" 3 >/dev/null || fail "the client does not see 3 pools"

# cl_mount URI: a marufs mount in w1, data=tcp with the key ($LAST_MNT)
cl_mount()
{
	local saved=("${WRAP[@]}")
	WRAP=(nsenter --net="/run/netns/$(mh_ns w1)" "${saved[@]}")
	marufs_mount -u "$1" -o "data=tcp,key_file=$MH_KEY,timeout_ms=$TMO"
	WRAP=("${saved[@]}")
}
owner_of()
{
	mh_run w1 "$CL_TOOL" owner "$CL" "$1" | awk '{ print $2 }'
}
declare -A D=() P_OF=()
cl_mount "$CL"
CM=$LAST_MNT
for p in p1 p2 p3; do
	cl_mount "maru://${MH_ADDR[$p]}:$MH_PORT"
	D[$p]=$LAST_MNT
	P_OF["maru://${MH_ADDR[$p]}:$MH_PORT"]=$p
done
# pool_of NAME-UNDER-MOUNT: the pool whose direct mount holds it
pool_of()
{
	local p
	for p in p1 p2 p3; do
		[ -e "${D[$p]}/$1" ] && echo "$p"
	done
	return 0
}

# a second cluster mount: its caches learn of the first one's changes
# from the pools' merged event streams
cl_mount "$CL"
CM2=$LAST_MNT

# .maru/pool: the cluster and each pool
cat "$CM/.maru/pool" >"$T/pool.txt"
assert_eq "$(grep -c '^pool .* active tcp ' "$T/pool.txt")" 3 ".maru/pool: active tcp pools"
for p in p1 p2 p3; do
	grep -q "^pool .* maru://${MH_ADDR[$p]}:$MH_PORT active" "$T/pool.txt" ||
		fail ".maru/pool does not list $p: $(cat "$T/pool.txt")"
done

# mkdir -p reaches every pool
mkdir -p "$CM/a/b/c" || fail "mkdir -p through the cluster mount"
for p in p1 p2 p3; do
	[ -d "${D[$p]}/a/b/c" ] || fail "a/b/c is not a directory on $p"
done

# files: cp and dd, read back byte-exact
mkdir -p "$T/src"
for i in $(seq 1 $NF); do
	head -c $((i * 4099)) /dev/urandom >"$T/src/f$i.bin"
done
t0=$(mh_now_ms)
for i in $(seq 1 $((NF / 2))); do
	cp "$T/src/f$i.bin" "$CM/a/b/f$i.bin" || fail "cp f$i.bin"
done
for i in $(seq $((NF / 2 + 1)) $NF); do
	dd if="$T/src/f$i.bin" of="$CM/a/b/f$i.bin" bs=64k status=none || fail "dd f$i.bin"
done
log "$NF files written through the cluster mount in $(( $(mh_now_ms) - t0 )) ms"
for i in $(seq 1 $NF); do
	cmp -s "$T/src/f$i.bin" "$CM/a/b/f$i.bin" || fail "f$i.bin differs read back"
done
total=0
for p in p1 p2 p3; do
	n=$(ls "${D[$p]}/a/b" | grep -c '\.bin$')
	log "pool $p holds $n of the $NF files"
	[ "$n" -gt 0 ] || fail "pool $p holds none of the $NF files"
	total=$((total + n))
done
assert_eq "$total" "$NF" "files over the three pools"
for i in 1 2 3; do
	cmp -s "$T/src/f$i.bin" "${D[$(pool_of "a/b/f$i.bin")]}/a/b/f$i.bin" ||
		fail "f$i.bin differs on its pool"
done
ls "$CM/a/b" >"$T/ls"
assert_eq "$(wc -l <"$T/ls")" $((NF + 1)) "names listed in a/b (files and c)"
assert_eq "$(sort "$T/ls" | uniq -d | wc -l)" 0 "names listed twice"

# events: names the second mount cached as missing, or with old bytes,
# change through the first one and the second sees them within 2 s
for i in $(seq 1 6); do
	[ ! -e "$CM2/a/b/ev$i" ] || fail "ev$i exists before it was written"
done
cat "$CM2/a/b/f4.bin" >/dev/null
t0=$(mh_now_ms)
for i in $(seq 1 6); do
	echo "ev$i" >"$CM/a/b/ev$i" || fail "write ev$i"
done
cp "$T/src/f5.bin" "$CM/a/b/f4.bin" || fail "rewrite f4.bin"
wait_for 2 eval '[ "$(cat "$CM2/a/b/ev6" 2>/dev/null)" = ev6 ]' ||
	fail "the second cluster mount does not see ev6 within 2 s"
for i in $(seq 1 6); do
	assert_eq "$(cat "$CM2/a/b/ev$i")" "ev$i" "ev$i through the second mount"
done
wait_for 2 cmp -s "$T/src/f5.bin" "$CM2/a/b/f4.bin" ||
	fail "the second cluster mount still reads the old f4.bin"
log "the second cluster mount saw 7 changes $(( $(mh_now_ms) - t0 )) ms after the first"
rm "$CM/a/b/ev"* "$CM/a/b/f4.bin"
wait_for 2 eval '[ ! -e "$CM2/a/b/ev1" ]' || fail "the second mount still sees ev1"
cp "$T/src/f4.bin" "$CM/a/b/f4.bin"

# rm
for i in $(seq 51 $NF); do
	rm "$CM/a/b/f$i.bin" || fail "rm f$i.bin"
done
assert_eq "$(ls "$CM/a/b" | grep -c '\.bin$')" 50 "files after rm"
n=0
for p in p1 p2 p3; do
	n=$((n + $(ls "${D[$p]}/a/b" | grep -c '\.bin$')))
done
assert_eq "$n" 50 "files on the pools after rm"

stat_of()
{
	mh_stat_value "$CM" "$1" | cut -d. -f1
}
moved0=$(stat_of maru_cluster_rename_moved_bytes_total)

# mv within one pool: a new name with the same owner
src_owner=$(owner_of a/b/f1.bin)
for k in $(seq 1 200); do
	[ "$(owner_of "a/b/same$k")" = "$src_owner" ] && break
done
mv "$CM/a/b/f1.bin" "$CM/a/b/same$k" || fail "mv within one pool"
cmp -s "$T/src/f1.bin" "$CM/a/b/same$k" || fail "same$k differs after mv"
[ ! -e "$CM/a/b/f1.bin" ] || fail "f1.bin still there after mv"
assert_eq "$(pool_of "a/b/same$k")" "${P_OF[$src_owner]}" "pool of the renamed name"
assert_eq "$(stat_of maru_cluster_rename_moved_bytes_total)" "$moved0" "bytes moved by a local mv"

# mv across pools: a new name with another owner
src_owner=$(owner_of a/b/f2.bin)
for k in $(seq 1 200); do
	dst_owner=$(owner_of "a/b/other$k")
	[ "$dst_owner" != "$src_owner" ] && break
done
exec 3<"$CM/a/b/f2.bin"
mv "$CM/a/b/f2.bin" "$CM/a/b/other$k" || fail "mv across pools"
cmp -s "$T/src/f2.bin" /dev/fd/3 || fail "a reader open before the mv lost its bytes"
exec 3<&-
cmp -s "$T/src/f2.bin" "$CM/a/b/other$k" || fail "other$k differs after mv across pools"
[ ! -e "$CM/a/b/f2.bin" ] || fail "f2.bin still there after mv across pools"
assert_eq "$(pool_of "a/b/other$k")" "${P_OF[$dst_owner]}" "pool of the moved name"
assert_eq "$(pool_of a/b/f2.bin)" "" "pool still holding f2.bin"
moved=$(( $(stat_of maru_cluster_rename_moved_bytes_total) - moved0 ))
assert_eq "$moved" "$(stat -c %s "$T/src/f2.bin")" "bytes moved by the mv across pools"
log "mv across pools (${P_OF[$src_owner]} -> ${P_OF[$dst_owner]}) moved $moved bytes"

# vLLM: <final>_<random>.tmp, then rename onto <final>: never moves bytes
moved0=$(stat_of maru_cluster_rename_moved_bytes_total)
for i in $(seq 1 20); do
	head -c 50000 /dev/urandom >"$T/src/kv$i"
	cp "$T/src/kv$i" "$CM/a/b/kv_$i.safetensors_$RANDOM$i.tmp" || fail "vllm tmp $i"
	mv "$CM/a/b/kv_$i.safetensors_"*.tmp "$CM/a/b/kv_$i.safetensors" || fail "vllm mv $i"
	cmp -s "$T/src/kv$i" "$CM/a/b/kv_$i.safetensors" || fail "vllm kv_$i differs"
done
assert_eq "$(stat_of maru_cluster_rename_moved_bytes_total)" "$moved0" \
	"bytes moved by vLLM's 20 temp-then-rename"
assert_eq "$(ls "$CM/a/b" | grep -c '\.tmp$')" 0 "vLLM temporary names left"

# hints: one .maru/hints line naming a file of each pool reaches each
# file's owner's region extension (probe_ext logs every hint it is given:
# "hint CONN ACTION REQ NRANGES ..."), one range each; a line naming a
# file of one pool reaches that pool only
declare -A ONE=()
for i in $(seq 1 20); do
	ONE[$(pool_of "a/b/kv_$i.safetensors")]=a/b/kv_$i.safetensors
done
[ "${#ONE[@]}" = 3 ] || fail "vLLM's 20 files are not on all three pools"
printf 'read rh %s %s %s\n' "${ONE[p1]}" "${ONE[p2]}" "${ONE[p3]}" >"$CM/.maru/hints" ||
	fail "a hint line through the cluster mount"
hinted() { grep -Eq "^hint [0-9]+ 1 $2 1 " "$T/probe-$1.log"; }
for p in p1 p2 p3; do
	wait_for 10 hinted "$p" rh || fail "the hint of ${ONE[$p]} did not reach $p's extension"
done
printf 'read rh1 %s\n' "${ONE[p2]}" >"$CM/.maru/hints" || fail "a hint of one file"
wait_for 10 hinted p2 rh1 || fail "the hint of ${ONE[p2]} did not reach p2"
for p in p1 p3; do
	! grep -q " rh1 " "$T/probe-$p.log" || fail "$p's extension got a hint of p2's file"
done
log "hints: each pool's extension got the ranges of its own files only"

# rmdir: ENOTEMPTY while some pool holds a name under the directory
mkdir "$CM/d" || fail "mkdir d"
echo x >"$CM/d/x" || fail "write d/x"
holder=$(pool_of d/x)
[ -n "$holder" ] || fail "d/x is on no pool"
out=$(rmdir "$CM/d" 2>&1) && fail "rmdir of d with d/x on $holder succeeded"
case "$out" in *"not empty"*) ;; *) fail "rmdir d: $out (expected ENOTEMPTY)" ;; esac
for p in p1 p2 p3; do
	[ -d "${D[$p]}/d" ] || fail "d gone from $p after a refused rmdir"
done
rm "$CM/d/x" && rmdir "$CM/d" || fail "rmdir d once empty"
for p in p1 p2 p3; do
	[ ! -e "${D[$p]}/d" ] || fail "d still on $p after rmdir"
done

# df sums the pools
sum=0
for p in p1 p2 p3; do
	sum=$((sum + $(stat -f -c '%b * %S' "${D[$p]}")))
done
assert_eq "$(( $(stat -f -c '%b * %S' "$CM") ))" "$sum" "df of the cluster mount (bytes)"

# fstab: "maru+etcd://... /mnt fuse.marufs defaults,_netdev,... 0 0" runs
# mount.fuse3, which starts marufs daemonized with the URI as its pool
skip_unless_cmd mount.fuse3
mkdir "$T/fstab"
on_exit "fusermount3 -uz '$T/fstab' 2>/dev/null"
mh_run w1 env PATH="$(dirname "$MARUFS"):$PATH" mount.fuse3 "$CL" "$T/fstab" -t fuse.marufs \
	-o "defaults,_netdev,nofail,data=tcp,key_file=$MH_KEY" || fail "mount.fuse3 of $CL"
mountpoint -q "$T/fstab" || fail "the fstab mount is not mounted"
cmp -s "$T/src/f3.bin" "$T/fstab/a/b/f3.bin" || fail "f3.bin through the fstab mount"
pid=
for p in $(pgrep -x marufs); do
	tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF " $T/fstab " && pid=$p
done
[ -n "$pid" ] || fail "no daemonized marufs for the fstab mount"
umount "$T/fstab" || fail "umount of the fstab mount"
wait_for 10 eval '! proc_alive '"$pid" || fail "daemonized marufs still runs after umount"

# etcd quorum lost (two of three members killed): the mount keeps the
# last membership and serves every pool, each call within the timeout;
# nothing leaves the membership; etcd back: nothing changed
# read_all WHAT: the 48 files f3..f50 read and checked; slowest in $worst,
# all in $took (ms)
read_all()
{
	local i t1 d t0=$(mh_now_ms)
	worst=0
	for i in $(seq 3 50); do
		t1=$(mh_now_ms)
		cmp -s "$T/src/f$i.bin" "$CM/a/b/f$i.bin" || fail "f$i.bin differs $1"
		d=$(( $(mh_now_ms) - t1 ))
		[ "$d" -gt "$worst" ] && worst=$d
	done
	took=$(( $(mh_now_ms) - t0 ))
}
read_all "with etcd up"
log "etcd up: 48 reads in $took ms, slowest $worst ms"
cl_etcd_stop e1
cl_etcd_stop e2
sleep 1		# past the mount's 200 ms membership reads, several times
t0=$(mh_now_ms)
read_all "with etcd's quorum lost"
[ "$worst" -le "$TMO" ] || fail "a read took $worst ms with etcd's quorum lost (timeout $TMO ms)"
log "etcd quorum lost: 48 reads in $took ms, slowest $worst ms"
for i in 1 2 3 4 5 6; do
	echo "q$i" >"$CM/a/b/quorum-$i" || fail "a write with etcd's quorum lost"
done
for i in 1 2 3 4 5 6; do
	assert_eq "$(cat "$CM/a/b/quorum-$i")" "q$i" "quorum-$i read back with etcd's quorum lost"
	rm "$CM/a/b/quorum-$i" || fail "rm with etcd's quorum lost"
done
assert_eq "$(grep -c '^pool .* active ' "$CM/.maru/pool")" 3 \
	".maru/pool with etcd's quorum lost: the last membership"
log "etcd quorum lost: the reads, 6 writes, reads and removes in $(( $(mh_now_ms) - t0 )) ms"
cl_etcd_start e1
cl_etcd_start e2
wait_for 20 eval '[ "$(mh_run w1 "$CL_TOOL" pools "$CL" | wc -l)" = 3 ]' ||
	fail "etcd back: the client does not list the 3 pools"

# a pool killed: its names miss once it left, the others still read
victim=$(pool_of a/b/f3.bin)
keep=()
for i in $(seq 3 50); do
	[ "$(pool_of "a/b/f$i.bin")" != "$victim" ] && keep+=("$i")
done
lost=$(ls "${D[$victim]}/a/b" | grep '^f.*\.bin$' | wc -l)
vname= oname=
for i in $(seq 1 60); do
	o=${P_OF[$(owner_of "a/b/new$i")]}
	[ "$o" = "$victim" ] && vname=new$i
	[ "$o" != "$victim" ] && oname=new$i
done
[ -n "$vname" ] && [ -n "$oname" ] || fail "no new names placed on $victim and elsewhere"
fusermount3 -uz "${D[$victim]}"
cl_pool_signal "$victim" KILL
cl_pool_wait_exit "$victim"
t0=$(mh_now_ms)
# a lookup that finds $victim away (still in the membership) does not make
# the mount refuse the lookups and creates of names on the pools that serve
stat "$CM/a/b/$vname" >/dev/null 2>&1 && fail "$vname (on killed $victim) has attributes"
d=$(( $(mh_now_ms) - t0 ))
[ "$d" -le $((TMO + 1000)) ] || fail "a lookup on killed $victim took $d ms"
echo served >"$CM/a/b/$oname" || fail "a create on a serving pool right after $victim timed out"
assert_eq "$(cat "$CM/a/b/$oname")" served "$oname, created while $victim is away"
log "a lookup on killed $victim failed in $d ms; a new name on another pool right after it worked"
t0=$(mh_now_ms)
# still in the membership: ls lists the other pools' names in time
ls "$CM/a/b" >"$T/ls-lost" || fail "ls with $victim just killed"
d=$(( $(mh_now_ms) - t0 ))
log "ls with $victim just killed: $(grep -c '^f.*\.bin$' "$T/ls-lost") files in $d ms"
[ "$d" -le $((TMO + 1000)) ] || fail "ls took $d ms with $victim just killed (timeout $TMO ms)"
for i in "${keep[@]}"; do
	grep -qx "f$i.bin" "$T/ls-lost" || fail "ls with $victim just killed misses f$i.bin"
done
wait_for 20 eval '! mh_run w1 "$CL_TOOL" pools "$CL" | grep -q "${MH_ADDR[$victim]}:"' ||
	fail "$victim still in the membership 20 s after SIGKILL"
log "$victim left the membership $(( $(mh_now_ms) - t0 )) ms after SIGKILL ($lost files there)"
# the mount reads the membership each second: until it has, calls for
# the lost pool's names fail within the timeout
misses()
{
	local out
	out=$(cat "$CM/a/b/f3.bin" 2>&1 >/dev/null) && fail "f3.bin on lost $victim still reads"
	case "$out" in *"No such file"*) return 0 ;; esac
	echo "$out" >>"$T/miss.log"
	return 1
}
wait_for 10 misses || fail "f3.bin on lost $victim: $(tail -1 "$T/miss.log") (expected ENOENT)"
log "f3.bin (on $victim) misses $(( $(mh_now_ms) - t0 )) ms after SIGKILL"
worst=0
for i in "${keep[@]}"; do
	t1=$(mh_now_ms)
	cmp -s "$T/src/f$i.bin" "$CM/a/b/f$i.bin" || fail "f$i.bin differs with $victim lost"
	d=$(( $(mh_now_ms) - t1 ))
	[ "$d" -gt "$worst" ] && worst=$d
done
log "${#keep[@]} files on the other pools read with $victim lost, slowest $worst ms"
[ "$worst" -le "$TMO" ] || fail "a read took $worst ms with $victim lost (timeout $TMO ms)"
echo new >"$CM/a/b/after-loss" && [ "$(cat "$CM/a/b/after-loss")" = new ] ||
	fail "a new file with $victim lost"
echo "PASS: cl_mount"
