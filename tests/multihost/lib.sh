# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/multihost/lib.sh: several hosts on one machine, for the multihost cases
# and the remote-I/O bench. Every host is a network namespace of this run with
# one veth link to a "switch" namespace holding a bridge; marud runs in one host
# and serves tcp:// on a private address with a key file, every marufs mount runs
# in another host with data=tcp. What is real: the kernel's TCP over veth and a
# bridge, marud, marufs, FUSE. What is emulated: the network faults, by rules in
# the switch namespace (nftables on the bridge: per-frame loss, link cuts, so
# neither end sees a link change) and, for delay, by tests/multihost/delayq
# (an NFQUEUE program holding each packet a host receives for N ms: this
# kernel has no netem qdisc).
#
# It sources tests/integration/lib/common.sh (asserts, wait_for, marud and
# marufs bookkeeping, the EXIT trap) and adds, torn down first in that trap:
#
#	mh_init				switch namespace + bridge (exit 77 only
#					when namespaces cannot be made at all)
#	mh_host NAME			host NAME at 10.77.0.N, address in MH_ADDR[NAME]
#	mh_run NAME CMD...		run CMD with NAME's network, the host's mounts
#	mh_marud_start NAME [args]	marud -d in NAME on tcp://ADDR:7450 and
#					unix:$T/marud.sock, key file $MH_KEY
#	mh_mount NAME [-o opts]		marufs data=tcp mount in NAME ($LAST_MNT)
#	mh_cut NAME / mh_heal NAME	drop every frame to and from NAME / stop
#	mh_loss NAME PCT		drop PCT % of NAME's frames each way (0 ends)
#	mh_delay NAME MS		hold the packets NAME receives MS ms (0 ends)
#	mh_offloads NAME on|off		segmentation offloads of NAME's link
#
# Names carry this shell's pid (mh<pid>-NAME) so runs can go in parallel; the
# addresses live only inside the namespaces of the run. Environment: DELAYQ
# (the built delayq, set by meson when libnetfilter-queue was found).

: "${SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# shellcheck source=../integration/lib/common.sh
. "$SRCDIR/tests/integration/lib/common.sh"

MH_ID=mh$$
MH_SW=$MH_ID-sw
MH_PORT=7450
MH_HOSTS=()			# host names in creation order
declare -A MH_ADDR=()		# host name -> IPv4 address
declare -A MH_DELAYQ_PID=()	# host name -> delayq pid
MH_PIDS=()			# other helpers started in namespaces (iperf3, ...)
MH_KEY=$T/key
MH_NS_MADE=()			# namespaces to delete
MH_POOL_HOST=

mh_ns()
{
	echo "$MH_ID-$1"
}

# mh_run NAME CMD...: CMD with the network of host NAME. nsenter, not "ip netns
# exec": that one also gives CMD a private mount namespace, which would hide a
# FUSE mount made there from everybody else.
mh_run()
{
	local h=$1
	shift
	nsenter --net="/run/netns/$(mh_ns "$h")" "$@"
}

# mh_mounted DIR: DIR is in the mount table (without touching the mount)
mh_mounted()
{
	awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts
}

mh_teardown()
{
	local h pid mnt

	set +e
	# by the mount table, not mountpoint(1): a mount whose marufs is cut off
	# or dead fails the stat that mountpoint needs, and would stay behind
	for mnt in "${!MARUFS_LOG_OF[@]}"; do
		mh_mounted "$mnt" && fusermount3 -uz "$mnt" 2>/dev/null
	done
	for pid in "${MH_PIDS[@]}" "${MH_DELAYQ_PID[@]}"; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	for pid in "${MARUFS_PID_OF[@]}" $MARUD_PID; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	MARUD_PID=
	for h in "${MH_NS_MADE[@]}"; do
		ip netns del "$h" 2>/dev/null
	done
	MH_NS_MADE=()
	return 0
}

# mh_init: the switch namespace with bridge br0 and the nftables table the
# faults go into. Skips (77) only when a namespace cannot be made at all.
mh_init()
{
	skip_unless_fuse
	skip_unless_cmd ip nsenter nft iptables
	on_exit mh_teardown
	ip netns add "$MH_SW" 2>"$T/netns.err" ||
		skip "cannot make a network namespace: $(cat "$T/netns.err")"
	MH_NS_MADE+=("$MH_SW")
	ip -n "$MH_SW" link add br0 type bridge
	ip -n "$MH_SW" link set br0 up
	ip -n "$MH_SW" link set lo up
	# one chain per host, jumped to for frames from and to it
	mh_nft -f - <<-EOF || fail "nft: cannot make the bridge table"
	add table bridge mhnet
	add chain bridge mhnet links { type filter hook forward priority 0; policy accept; }
	EOF
	true
}

# mh_host NAME: a host namespace linked to the bridge, 10.77.0.N/24.
mh_host()
{
	local h=$1 ns n addr

	ns=$(mh_ns "$h")
	[ ${#h} -le 12 ] || fail "mh_host: name '$h' longer than 12"
	n=$((${#MH_HOSTS[@]} + 1))
	addr=10.77.0.$n
	ip netns add "$ns" || fail "ip netns add $ns"
	MH_NS_MADE+=("$ns")
	ip -n "$MH_SW" link add "v-$h" type veth peer name eth0 netns "$ns" ||
		fail "veth for $h"
	ip -n "$MH_SW" link set "v-$h" master br0 up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$addr/24" dev eth0
	ip -n "$ns" link set eth0 up
	mh_nft -f - <<-EOF || fail "nft: chain for $h"
	add chain bridge mhnet h_$h
	add rule bridge mhnet links iifname "v-$h" jump h_$h
	add rule bridge mhnet links oifname "v-$h" jump h_$h
	EOF
	MH_HOSTS+=("$h")
	MH_ADDR[$h]=$addr
}

# nft in the switch namespace
mh_nft()
{
	ip netns exec "$MH_SW" nft "$@"
}

# Rules go in the switch: neither end sees its link go down.
mh_cut()
{
	mh_nft flush chain bridge mhnet "h_$1"
	mh_nft add rule bridge mhnet "h_$1" drop
}

mh_heal()
{
	mh_nft flush chain bridge mhnet "h_$1"
}

# mh_loss NAME PCT: each frame to or from NAME is dropped with probability
# PCT/100 (so a round trip loses about twice that). Offloads off first
# (mh_offloads) for "frame" to mean one MTU-sized packet.
mh_loss()
{
	mh_nft flush chain bridge mhnet "h_$1"
	[ "$2" -eq 0 ] || mh_nft add rule bridge mhnet "h_$1" numgen random mod 100 "<" "$2" drop
}

# mh_offloads NAME on|off: TSO/GSO/GRO of both ends of NAME's link.
mh_offloads()
{
	skip_unless_cmd ethtool
	ip netns exec "$MH_SW" ethtool -K "v-$1" tso "$2" gso "$2" gro "$2" >/dev/null 2>&1 || true
	mh_run "$1" ethtool -K eth0 tso "$2" gso "$2" gro "$2" >/dev/null 2>&1 ||
		fail "ethtool -K eth0 in $1"
}

# mh_delay NAME MS: delayq holds every packet NAME receives for MS ms (one
# way; 0 ends it). Skips the case when delayq was not built. On the receiving
# side, not the sending one: a packet held in the sender's output path still
# counts against its socket (TCP small queues), which then sent ~10 Mbit/s
# at 5 ms where the same delay on input keeps ~5 Gbit/s.
mh_delay()
{
	local h=$1 ms=$2 pid

	pid=${MH_DELAYQ_PID[$h]:-}
	if [ -n "$pid" ]; then
		mh_run "$h" iptables -w -t mangle -D PREROUTING -i eth0 -j NFQUEUE --queue-num 7
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		unset "MH_DELAYQ_PID[$h]"
	fi
	[ "$ms" -gt 0 ] || return 0
	[ -n "${DELAYQ:-}" ] && [ -x "$DELAYQ" ] ||
		skip "no delayq (built only when libnetfilter-queue is found)"
	nsenter --net="/run/netns/$(mh_ns "$h")" "$DELAYQ" -q 7 -d "$ms" \
		>>"$T/delayq-$h.log" 2>&1 &
	MH_DELAYQ_PID[$h]=$!
	# the queue must be bound before packets go to it, or they are dropped
	wait_up "${MH_DELAYQ_PID[$h]}" 5 grep -qs bound "$T/delayq-$h.log" ||
		fail "delayq did not start in $h: $(cat "$T/delayq-$h.log")"
	# iptables' NFQUEUE target (xt, through nft_compat): this kernel has no
	# nft "queue" expression. PREROUTING: before the stack sees the packet.
	mh_run "$h" iptables -w -t mangle -A PREROUTING -i eth0 -j NFQUEUE --queue-num 7 ||
		fail "iptables: delay rule in $h"
}

# mh_bg NAME CMD...: CMD in NAME in the background, killed at teardown.
mh_bg()
{
	local h=$1
	shift
	nsenter --net="/run/netns/$(mh_ns "$h")" "$@" &
	MH_PIDS+=($!)
	MH_LAST_PID=$!
}

# mh_listens NAME ADDR:PORT: a TCP socket listens there in NAME (no probe
# connection: a server would count it as a client)
mh_listens()
{
	mh_run "$1" ss -Hltn "src $2" | grep -q .
}

# mh_marud_start NAME [marud args]: marud in host NAME, listening on
# tcp://ADDR:$MH_PORT and on $T/marud.sock (a path socket is reachable from
# every namespace: stats tools use it), with key file $MH_KEY.
mh_marud_start()
{
	local h=$1 saved=("${WRAP[@]}")
	shift
	if [ ! -e "$MH_KEY" ]; then
		(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$MH_KEY")
	fi
	MH_POOL_HOST=$h
	WRAP=(nsenter --net="/run/netns/$(mh_ns "$h")" "${saved[@]}")
	marud_start --key-file "$MH_KEY" --listen "unix:$MARUD_SOCK" \
		--listen "tcp://${MH_ADDR[$h]}:$MH_PORT" "$@"
	WRAP=("${saved[@]}")
	wait_for 5 mh_listens "$h" "${MH_ADDR[$h]}:$MH_PORT" ||
		fail "marud does not accept on ${MH_ADDR[$h]}:$MH_PORT"
}

# mh_marud_restart [kill]: the same marud again in the same host.
mh_marud_restart()
{
	local saved=("${WRAP[@]}")
	WRAP=(nsenter --net="/run/netns/$(mh_ns "$MH_POOL_HOST")" "${saved[@]}")
	marud_restart "$@"
	WRAP=("${saved[@]}")
}

# mh_mount NAME [-o opts]...: marufs -f in host NAME, data=tcp with the key,
# to marud's tcp address. The mountpoint is $LAST_MNT (and $MNT, $MNT2, ...).
mh_mount()
{
	local h=$1 saved=("${WRAP[@]}")
	shift
	WRAP=(nsenter --net="/run/netns/$(mh_ns "$h")" "${saved[@]}")
	marufs_mount -u "maru://${MH_ADDR[$MH_POOL_HOST]}:$MH_PORT" \
		-o "data=tcp,key_file=$MH_KEY" "$@"
	WRAP=("${saved[@]}")
}

# mh_now_ms: monotonic-enough wall clock in ms
mh_now_ms()
{
	echo $(($(date +%s%N) / 1000000))
}

# mh_p99 FILE: the 99th percentile of the numbers in FILE, one a line.
mh_p99()
{
	sort -n "$1" | awk '{ v[NR] = $1 } END { i = int(NR * 0.99 + 0.999); if (i < 1) i = 1; print v[i] }'
}

# mh_tool ARGS...: tests/multihost/mh_tool.py (timed POSIX sequences, raw TCP)
mh_tool()
{
	python3 "$SRCDIR/tests/multihost/mh_tool.py" "$@"
}

# mh_stat_value MNT NAME: first sample of metric NAME in MNT/.maru/stats
mh_stat_value()
{
	awk -v m="$2" 'v == "" && ($1 == m || index($1, m "{") == 1) { v = $NF } END { print v }' \
		"$1/.maru/stats"
}
