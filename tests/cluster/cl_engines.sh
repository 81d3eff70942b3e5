#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cl_engines: the engine-pattern tools of tests/integration (engine_vllm,
# engine_sglang, engine_lmcache: each replays its engine's file calls and
# checks every byte and errno) on cluster mounts of three pools, from two
# worker namespaces, with the bytes that renames moved between pools
# counted (maru_cluster_rename_moved_bytes_total of each mount). Real:
# etcd, three marud pools each in a namespace of its own, marufs, FUSE,
# TCP over veth; nothing faked. vLLM's and LMCache's temporary names share
# their final name's placement key: 0 bytes moved. SGLang's newest writer
# (.<32 hex>.tmp) names nothing of its final name: its renames may cross
# pools, and the bytes that moved are measured and reported, not asserted.
. "$(dirname "$0")/lib.sh"

: "${CL_TOOL:?}"
ENGINE_TOOLS=$(dirname "$TOOLS")
cl_init
cl_etcd_cluster e1 e2 e3
mh_host w1
mh_host w2
CL=maru+etcd://$CL_ETCD/$CL_CLUSTER
for p in p1 p2 p3; do
	cl_pool_start "$p" -D cluster-ttl=3 --size 512M
done
mh_run w1 "$CL_TOOL" wait "$CL" 3 >/dev/null || fail "the client does not see 3 pools"

cl_mount()
{
	local saved=("${WRAP[@]}")
	WRAP=(nsenter --net="/run/netns/$(mh_ns "$1")" "${saved[@]}")
	marufs_mount -u "$CL" -o "data=tcp,key_file=$MH_KEY"
	WRAP=("${saved[@]}")
}
moved()
{
	echo $(( $(mh_stat_value "$M1" maru_cluster_rename_moved_bytes_total | cut -d. -f1) +
		 $(mh_stat_value "$M2" maru_cluster_rename_moved_bytes_total | cut -d. -f1) ))
}
renames()
{
	local m s=0
	for m in "$M1" "$M2" "$M3"; do
		s=$((s + $(awk '$1 ~ /^maru_cluster_renames_total/ { s += $NF } END { print s + 0 }' \
			"$m/.maru/stats")))
	done
	echo "$s"
}
cl_mount w1
M1=$LAST_MNT
cl_mount w2
M2=$LAST_MNT
cl_mount w1
M3=$LAST_MNT

run_engine()	# NAME CMD...: the tool in w1, then the bytes moved
{
	local name=$1 m0 r0 t0
	shift
	m0=$(moved)
	r0=$(renames)
	t0=$(mh_now_ms)
	mh_run w1 "$@" >"$T/$name.out" 2>&1 || fail "$name: $(tail -5 "$T/$name.out")"
	MOVED=$(( $(moved) - m0 ))
	log "$name: $(( $(mh_now_ms) - t0 )) ms, $(( $(renames) - r0 )) renames," \
		"$MOVED bytes moved between pools"
}

mkdir "$M1/vllm"
run_engine vllm "$ENGINE_TOOLS/engine_vllm" "$M1/vllm" "$M2/vllm"
grep -qx 'O_DIRECT probe: works' "$T/vllm.out" || fail "vLLM's O_DIRECT probe failed"
assert_eq "$MOVED" 0 "bytes moved by vLLM's renames"
rm -rf "$M1/vllm"

mkdir "$M1/lmcache"
run_engine lmcache-one "$ENGINE_TOOLS/engine_lmcache" one -r 12 "$M1/lmcache"
assert_eq "$MOVED" 0 "bytes moved by LMCache's renames (one mount)"
run_engine lmcache-two "$ENGINE_TOOLS/engine_lmcache" two -r 12 "$M1/lmcache" "$M2/lmcache" \
	"$M3/lmcache"
assert_eq "$MOVED" 0 "bytes moved by LMCache's renames (two workers)"
for m in "$M1" "$M2" "$M3"; do
	assert_eq "$(ls -A "$m/lmcache" | wc -l)" 0 "names left in $m/lmcache"
done
rmdir "$M1/lmcache"

mkdir "$M1/hicache"
run_engine sglang "$ENGINE_TOOLS/engine_sglang" -n 3000 "$M1/hicache" "$M2/hicache"
log "SGLang: the newest writer's renames moved $MOVED bytes (its temporary name" \
	"does not say its final one)"
rm -rf "$M1/hicache"
assert_eq "$(ls -A "$M1" | grep -v '^\.maru$' | wc -l)" 0 "names left behind"
echo "PASS: cl_engines"
