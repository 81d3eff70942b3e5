# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/cluster/lib.sh: a cluster on one machine, for the cluster cases. It
# grows tests/multihost/lib.sh (hosts are network namespaces on one bridge,
# faults are rules on the bridge) by an etcd cluster, one member per host,
# and by several marud pools, each in a host of its own with a pool of its
# own, each joined to the cluster (marud --cluster). What is real: etcd 3.4
# (Debian's etcd-server) with its Raft among the members over TCP, marud's
# membership through etcd's JSON gateway, the kernel's TCP over veth.
#
#	cl_etcd_cluster NAME...		one etcd member per host (made here)
#	cl_etcd_stop NAME		SIGKILL that member (its data stays)
#	cl_etcd_start NAME		start it again on its data
#	cl_etcdctl ARGS...		etcdctl (v3) against every member
#	cl_pool_start NAME [args]	marud in host NAME (made here), pool
#					shm of its own, tcp://ADDR:7450 and
#					$T/NAME.sock, --cluster to the members;
#					log $T/marud-NAME.log
#	cl_pool_signal NAME SIG		send SIG to that marud
#	cl_pool_wait_exit NAME		its exit status in EXIT_RC
#	cl_records			the pools' records in etcd, one a line
#	cl_mount_in HOST URI [opts]	marufs mount in HOST, data=tcp with the
#					key, -o opts added ($LAST_MNT)
#	cl_cut_pair A B / cl_heal_pair A  drop every frame between hosts A
#					and B only / stop (A's bridge chain)
#
# CL_CLUSTER is the cluster's name (per run), CL_ETCD the member list.

: "${SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# shellcheck source=../multihost/lib.sh
. "$SRCDIR/tests/multihost/lib.sh"

CL_CLUSTER=cl$$
CL_ETCD=			# "ADDR:2379,ADDR:2379,..."
CL_ETCD_PEERS=			# the --initial-cluster value
CL_ETCD_HOSTS=()
declare -A CL_ETCD_PID=()
declare -A CL_POOL_PID=()
declare -A CL_POOL_SHM=()

cl_teardown()
{
	local h

	set +e
	for h in "${!CL_POOL_PID[@]}"; do
		kill -KILL "${CL_POOL_PID[$h]}" 2>/dev/null
		wait "${CL_POOL_PID[$h]}" 2>/dev/null
	done
	for h in "${!CL_ETCD_PID[@]}"; do
		kill -KILL "${CL_ETCD_PID[$h]}" 2>/dev/null
		wait "${CL_ETCD_PID[$h]}" 2>/dev/null
	done
	for h in "${CL_POOL_SHM[@]}"; do
		rm -f "/dev/shm/$h"
	done
	return 0
}

cl_init()
{
	mh_init
	skip_unless_cmd etcd etcdctl
	on_exit cl_teardown
}

cl_etcdctl()
{
	ETCDCTL_API=3 mh_run "${CL_ETCD_HOSTS[0]}" etcdctl --endpoints "$CL_ETCD" \
		--dial-timeout 2s --command-timeout 3s "$@"
}

cl_etcd_launch()
{
	local h=$1 a=${MH_ADDR[$1]}

	nsenter --net="/run/netns/$(mh_ns "$h")" etcd --name "$h" --data-dir "$T/etcd-$h" \
		--listen-client-urls "http://$a:2379" --advertise-client-urls "http://$a:2379" \
		--listen-peer-urls "http://$a:2380" --initial-advertise-peer-urls "http://$a:2380" \
		--initial-cluster "$CL_ETCD_PEERS" --initial-cluster-token "$CL_CLUSTER" \
		--initial-cluster-state new >>"$T/etcd-$h.log" 2>&1 &
	CL_ETCD_PID[$h]=$!
}

cl_etcd_cluster()
{
	local h peers=() eps=()

	for h in "$@"; do
		mh_host "$h"
		peers+=("$h=http://${MH_ADDR[$h]}:2380")
		eps+=("${MH_ADDR[$h]}:2379")
		CL_ETCD_HOSTS+=("$h")
	done
	CL_ETCD_PEERS=$(IFS=,; echo "${peers[*]}")
	CL_ETCD=$(IFS=,; echo "${eps[*]}")
	for h in "$@"; do
		cl_etcd_launch "$h"
	done
	wait_for 30 cl_etcdctl endpoint health >/dev/null 2>&1 ||
		fail "etcd cluster ($CL_ETCD) not healthy in 30 s"
}

cl_etcd_stop()
{
	kill -KILL "${CL_ETCD_PID[$1]}" 2>/dev/null || true
	wait "${CL_ETCD_PID[$1]}" 2>/dev/null || true
	unset "CL_ETCD_PID[$1]"
}

cl_etcd_start()
{
	cl_etcd_launch "$1"
}

cl_pool_start()
{
	local h=$1 shm
	shift
	[ -n "${MH_ADDR[$h]:-}" ] || mh_host "$h"
	if [ ! -e "$MH_KEY" ]; then
		(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$MH_KEY")
	fi
	shm=maru-cl-$$-$h
	CL_POOL_SHM[$h]=$shm
	rm -f "$T/$h.sock"
	echo "=== $(date +%T) marud in $h $*" >>"$T/marud-$h.log"
	nsenter --net="/run/netns/$(mh_ns "$h")" "${WRAP[@]}" "$MARUD" -d --size 64M \
		--pool "shm:$shm" --key-file "$MH_KEY" --listen "unix:$T/$h.sock" \
		--listen "tcp://${MH_ADDR[$h]}:$MH_PORT" \
		--cluster "etcd://$CL_ETCD/$CL_CLUSTER" "$@" >>"$T/marud-$h.log" 2>&1 &
	CL_POOL_PID[$h]=$!
	wait_up "${CL_POOL_PID[$h]}" 10 test -S "$T/$h.sock" ||
		fail "marud in $h did not start: $(tail -3 "$T/marud-$h.log")"
}

cl_pool_signal()
{
	kill "-$2" "${CL_POOL_PID[$1]}"
}

cl_pool_wait_exit()
{
	wait_exit "${CL_POOL_PID[$1]}" 10 || fail "marud in $1 still runs"
	unset "CL_POOL_PID[$1]"
}

cl_records()
{
	cl_etcdctl get --prefix "/marufs/$CL_CLUSTER/pools/" --print-value-only | grep .
}

cl_mount_in()
{
	local h=$1 uri=$2 saved=("${WRAP[@]}") o="data=tcp,key_file=$MH_KEY"
	[ -z "${3:-}" ] || o+=",$3"
	WRAP=(nsenter --net="/run/netns/$(mh_ns "$h")" "${saved[@]}")
	marufs_mount -u "$uri" -o "$o"
	WRAP=("${saved[@]}")
}

# A partition of two hosts, the others reaching both: rules in A's chain
# of the bridge (tests/multihost/lib.sh), which frames to and from A pass.
cl_cut_pair()
{
	mh_nft flush chain bridge mhnet "h_$1"
	mh_nft add rule bridge mhnet "h_$1" iifname "v-$1" oifname "v-$2" drop
	mh_nft add rule bridge mhnet "h_$1" iifname "v-$2" oifname "v-$1" drop
}

cl_heal_pair()
{
	mh_heal "$1"
}
