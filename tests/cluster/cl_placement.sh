#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cl_placement: names placed over the pools of a cluster by libmaru's
# cluster client (maru_cluster_owner()), measured on real pools. Three etcd
# members, four marud pools and a worker are hosts of their own (network
# namespaces, real TCP); tests/cluster/cl_tool writes and reads through
# ordinary libmaru clients of the owners, data=tcp with the key.
#  - spread: 10k names over 3 equal pools, each pool holds within 15% of a
#    third (counted by readdir on each pool, not by the client);
#  - join: a fourth pool joins; about a quarter of the names now belong to
#    it, every one of the 10k is still found (at its owner, else where it
#    was placed before the join) with its bytes;
#  - drain: with one pool draining, new names never land on it, and the
#    names it holds are still found;
#  - loss: a pool killed: its names miss within the client's timeout, the
#    others are found.
. "$(dirname "$0")/lib.sh"

: "${CL_TOOL:?}"
N=10000
cl_init
cl_etcd_cluster e1 e2 e3
mh_host w1
CL=maru+etcd://$CL_ETCD/$CL_CLUSTER
tool()
{
	mh_run w1 "$CL_TOOL" "$@"
}
for p in p1 p2 p3; do
	cl_pool_start "$p" -D cluster-ttl=3
done
tool wait "$CL" 3 >/dev/null || fail "the client does not see 3 pools"
t_formed=$(date +%s)

t0=$(mh_now_ms)
tool put "$CL" "$MH_KEY" $N a >"$T/put-a" || fail "put: $(cat "$T/put-a")"
log "10k names put through the owners in $(( $(mh_now_ms) - t0 )) ms"
for p in p1 p2 p3; do
	n=$(tool count "maru://${MH_ADDR[$p]}:$MH_PORT" "$MH_KEY" | awk '{ print $2 }')
	log "pool $p holds $n names ($(( n * 300 / N ))% of its share)"
	[ "$n" -gt $((N * 85 / 300)) ] && [ "$n" -lt $((N * 115 / 300)) ] ||
		fail "pool $p holds $n of $N names: not within 15% of a third"
done

# a fourth pool joins, after the first three formed the cluster (pools
# joining within 30 s of the first are its founders, never new)
sleep_until=$((t_formed + 31))
while [ "$(date +%s)" -lt "$sleep_until" ]; do sleep 1; done
cl_pool_start p4 -D cluster-ttl=3
tool wait "$CL" 4 >/dev/null || fail "the client does not see the fourth pool"
moved=$(tool moved "$CL" $N a | awk '{ print $2 }')
log "after p4 joined, $moved of $N names have a new owner"
[ "$moved" -gt $((N * 20 / 100)) ] && [ "$moved" -lt $((N * 30 / 100)) ] ||
	fail "p4 joining moved $moved of $N placements, not about a quarter"
res=$(tool check "$CL" "$MH_KEY" $N a) || fail "check after the join: $res"
log "after the join: $res"
set -- $res
assert_eq "$2/$6" "$((N - moved))/0" "names found at their owner / missing after the join"
assert_eq "$4" "$moved" "names found where they were placed before the join"

# p2 drains: new names avoid it, its own are still found
v=$(cl_etcdctl get --prefix "/marufs/$CL_CLUSTER/pools/" --print-value-only |
	grep "${MH_ADDR[p2]}:" | sed 's/"state":"active"/"state":"draining"/')
k=$(cl_etcdctl get --prefix "/marufs/$CL_CLUSTER/pools/" | grep -B1 "${MH_ADDR[p2]}:" | head -1)
cl_etcdctl put --ignore-lease "$k" "$v" >/dev/null || fail "etcdctl put (drain p2)"
wait_for 5 eval 'tool pools "$CL" | grep "${MH_ADDR[p2]}:" | grep -q draining' ||
	fail "the client does not see p2 draining"
before=$(tool count "maru://${MH_ADDR[p2]}:$MH_PORT" "$MH_KEY" | awk '{ print $2 }')
tool put "$CL" "$MH_KEY" 2000 b >"$T/put-b" || fail "put b: $(cat "$T/put-b")"
after=$(tool count "maru://${MH_ADDR[p2]}:$MH_PORT" "$MH_KEY" | awk '{ print $2 }')
assert_eq "$after" "$before" "names on draining p2 after 2000 new ones"
res=$(tool check "$CL" "$MH_KEY" $N a) || fail "check with p2 draining: $res"
set -- $res
assert_eq "$6" 0 "names missing with p2 draining"

# p3 is lost: its names miss, nothing waits past the timeout
on3=$(tool count "maru://${MH_ADDR[p3]}:$MH_PORT" "$MH_KEY" | awk '{ print $2 }')
cl_pool_signal p3 KILL
cl_pool_wait_exit p3
res=$(tool check "$CL" "$MH_KEY" $N a) || fail "check with p3 lost: $res"
log "p3 lost (it held $on3 names, a-* and b-*): $res"
set -- $res
[ "$6" -gt 0 ] || fail "p3 lost: no name missed"
assert_eq "$(($2 + $4 + $6))" "$N" "names found or missed with p3 lost"
[ "${10}" -le 3000 ] || fail "p3 lost: a lookup took ${10} ms (timeout 2000 ms)"
echo "PASS: cl_placement"
