#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cl_membership: marud pools joining, draining, leaving and surviving etcd
# faults. Three etcd members and every marud are hosts of their own (network
# namespaces on one bridge; real TCP, real etcd Raft); a marufs mount in a
# worker host shows a pool keeps serving whatever etcd does. Checked:
#  - a pool's record appears under /marufs/NAME/pools/UUID with its UUID,
#    advertised tcp URI, capacity, weight, zone and state "active";
#  - "draining" written by an operator (etcdctl) is taken up, as is drain =
#    yes on SIGHUP, and both come back to "active";
#  - one etcd member lost: nothing changes (no warning, the record stays);
#  - quorum lost: the pool and its mount keep serving, marud says it cannot
#    renew its lease and why; a pool started meanwhile serves and says it
#    cannot join; etcd back: both are registered again by themselves;
#  - SIGTERM: the record goes at once; SIGKILL: it goes when the lease runs
#    out (TTL 3 s here).
. "$(dirname "$0")/lib.sh"

cl_init
cl_etcd_cluster e1 e2 e3
log "etcd cluster up: $CL_ETCD"

ttl=3
cat >"$T/p1.conf" <<CONF
cluster-ttl = $ttl
cluster-weight = 2
cluster-zone = rackA
CONF
t0=$(mh_now_ms)
cl_pool_start p1 -f "$T/p1.conf"
wait_for 10 eval '[ "$(cl_records | wc -l)" = 1 ]' || fail "p1 did not register in 10 s"
log "p1 registered $(( $(mh_now_ms) - t0 )) ms after its start"

uuid=$(sed -n 's/.*pool: created .* uuid \([0-9a-f-]*\),.*/\1/p' "$T/marud-p1.log" | head -1)
[ -n "$uuid" ] || fail "no pool uuid in marud's log"
key=/marufs/$CL_CLUSTER/pools/$uuid
rec=$(cl_etcdctl get "$key" --print-value-only)
[ -n "$rec" ] || fail "no record under $key"
python3 - "$rec" "$uuid" "tcp://${MH_ADDR[p1]}:$MH_PORT" <<'PY' || fail "record of p1: $rec"
import json, sys
r = json.loads(sys.argv[1])
assert r["uuid"] == sys.argv[2], r
assert r["tcp"] == [sys.argv[3]], r
assert r["rdma"] == [], r
assert r["capacity"] > 32 << 20, r
assert r["weight"] == 2 and r["zone"] == "rackA", r
assert r["state"] == "active", r
PY
grep -q "joined as active" "$T/marud-p1.log" || fail "no 'joined' line in p1's log"

state_is()
{
	cl_etcdctl get "$key" --print-value-only | grep -q "\"state\":\"$1\""
}

# an operator drains the pool in etcd, then takes it back
set_state()
{
	local v
	v=$(cl_etcdctl get "$key" --print-value-only | sed "s/\"state\":\"[a-z]*\"/\"state\":\"$1\"/")
	cl_etcdctl put --ignore-lease "$key" "$v" >/dev/null || fail "etcdctl put"
}
set_state draining
wait_for 5 grep -q "set draining in etcd" "$T/marud-p1.log" ||
	fail "p1 did not take up the drain written in etcd"
set_state active
wait_for 5 grep -q "set active in etcd" "$T/marud-p1.log" ||
	fail "p1 did not take up 'active' written in etcd"

# marud's own drain: drain = yes and SIGHUP, then back
echo "drain = yes" >>"$T/p1.conf"
cl_pool_signal p1 HUP
wait_for 3 state_is draining || fail "drain = yes on SIGHUP: the record is not draining"
sed -i '/^drain/d' "$T/p1.conf"
cl_pool_signal p1 HUP
wait_for 3 state_is active || fail "drain removed on SIGHUP: the record is not active"

# a worker uses p1 over tcp
mh_host w1
MH_POOL_HOST=p1
mh_mount w1
w1=$LAST_MNT
head -c 1M /dev/urandom >"$T/chunk"
cp "$T/chunk" "$w1/a" && cmp "$T/chunk" "$w1/a" || fail "write/read through p1"

# one etcd member lost: nothing changes
warns=$(grep -c "cannot renew" "$T/marud-p1.log" || true)
cl_etcd_stop e1
sleep $((2 * ttl))
state_is active || fail "one etcd member lost: p1's record is gone"
assert_eq "$(grep -c "cannot renew" "$T/marud-p1.log" || true)" "$warns" \
	"one etcd member lost: p1 warned"

# quorum lost: the pool serves on, says why; a new pool serves and cannot join
cl_etcd_stop e2
wait_for 10 grep -q "cannot renew the etcd lease" "$T/marud-p1.log" ||
	fail "quorum lost: p1 did not say it cannot renew its lease"
grep "cannot renew the etcd lease" "$T/marud-p1.log" | tail -1 | grep -q "serving on" ||
	fail "quorum lost: p1's line does not say it serves on"
cp "$T/chunk" "$w1/b" && cmp "$T/chunk" "$w1/b" && cmp "$T/chunk" "$w1/a" ||
	fail "quorum lost: the mount of p1 stopped serving"
cl_pool_start p2 -D cluster-ttl=$ttl
wait_for 10 grep -q "cannot join" "$T/marud-p2.log" ||
	fail "quorum lost: p2 did not say it cannot join"
log "p2 without quorum: $(grep "cannot join" "$T/marud-p2.log" | tail -1)"

# etcd back: both registered by themselves
t0=$(mh_now_ms)
cl_etcd_start e1
cl_etcd_start e2
wait_for 30 eval '[ "$(cl_records 2>/dev/null | wc -l)" = 2 ]' ||
	fail "etcd back: the two pools are not both registered in 30 s"
log "etcd back: both pools registered $(( $(mh_now_ms) - t0 )) ms after its restart"
grep -q "joined as active" "$T/marud-p2.log" || fail "p2 has no 'joined' line"

# SIGTERM: the record goes at once
cl_pool_signal p1 TERM
t0=$(mh_now_ms)
cl_pool_wait_exit p1
assert_eq "$EXIT_RC" 0 "p1's exit status"
assert_eq "$(cl_records | wc -l)" 1 "records just after p1 stopped"
grep -q "left the cluster" "$T/marud-p1.log" || fail "p1 has no 'left' line"
log "p1 left: gone from etcd $(( $(mh_now_ms) - t0 )) ms after SIGTERM"

# SIGKILL: the record goes with the lease
cl_pool_signal p2 KILL
t0=$(mh_now_ms)
cl_pool_wait_exit p2
wait_for $((ttl + 5)) eval '[ "$(cl_records 2>/dev/null | wc -l)" = 0 ]' ||
	fail "p2 killed: its record outlived its lease"
log "p2 killed: gone from etcd $(( $(mh_now_ms) - t0 )) ms after SIGKILL (ttl ${ttl} s)"
echo "PASS: cl_membership"
