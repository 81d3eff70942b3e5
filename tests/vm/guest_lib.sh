# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/vm/guest_lib.sh: helpers for the scripts the vm_* cases run inside a
# guest, sourced after tests/integration/lib/common.sh (which gives fail,
# assert_eq, marud_start, marufs_mount, ... and cleans up at exit). Everything
# here drives the guest's real kernel: the nfit/dax drivers through ndctl and
# daxctl, virtio-net, rdma_rxe through iproute2's rdma tool.
#
# Two guests coordinate through files in /vmout (the host's run folder, shared
# by 9p without caching): vm_signal NAME creates /vmout/NAME.sig, vm_await
# NAME SECONDS waits for one. VM_NAME is this guest's name.

# vm_devdax REGION: turn the NVDIMM region's namespace into devdax (2 MiB
# alignment, page metadata in RAM: --map=mem, so two guests on one memory
# file never write it to the shared media) unless the guest already found
# one there; prints the /dev/daxX.Y path.
vm_devdax()
{
	local region=$1 n=${1#region} dev
	modprobe -a nfit nd_pmem dax_pmem device_dax >&2
	wait_for 10 test -d "/sys/bus/nd/devices/$region" || fail "no $region (nfit did not bind)"
	dev=/dev/dax$n.0
	# a namespace made earlier on the same media is found at boot
	if ! wait_for 2 test -c "$dev"; then
		if [ -d "/sys/bus/nd/devices/namespace$n.0" ]; then
			ndctl create-namespace -f -e "namespace$n.0" -m devdax --map=mem --align 2M >&2 ||
				fail "ndctl create-namespace -e namespace$n.0"
		else
			ndctl create-namespace -r "$region" -m devdax --map=mem --align 2M >&2 ||
				fail "ndctl create-namespace -r $region"
		fi
	fi
	wait_for 10 test -c "$dev" || fail "$dev did not appear"
	echo "$dev"
}

# vm_net IFADDR: the virtio-net link to the other guest up, with IFADDR
# (e.g. 10.7.0.1/24); prints the interface name.
vm_net()
{
	local ifc
	modprobe virtio_net
	wait_for 10 eval 'ls /sys/class/net | grep -qv "^lo$"' || fail "no virtio-net interface"
	ifc=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
	ip link set "$ifc" up
	ip addr add "$1" dev "$ifc"
	echo "$ifc"
}

# vm_rxe IFC: Soft-RoCE (rdma_rxe) on interface IFC as rxe0; waits for its
# RoCE v2 IPv4 GID and prints that GID's index (perftest's -x).
vm_rxe()
{
	local ifc=$1 idx
	modprobe rdma_rxe
	rdma link add rxe0 type rxe netdev "$ifc" || fail "rdma link add rxe0"
	wait_for 10 test -d /sys/class/infiniband/rxe0 || fail "rxe0 did not appear"
	for _ in $(seq 100); do
		for idx in $(seq 0 7); do
			if grep -q '0000:0000:0000:0000:0000:ffff' \
				"/sys/class/infiniband/rxe0/ports/1/gids/$idx" 2>/dev/null &&
				grep -q 'RoCE v2' "/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$idx" 2>/dev/null; then
				echo "$idx"
				return 0
			fi
		done
		sleep 0.1
	done
	fail "rxe0 has no RoCE v2 IPv4 GID"
}

# vm_signal NAME: tell the other guest NAME happened.
vm_signal()
{
	: >"/vmout/$1.sig"
}

# vm_await NAME SECONDS: wait for the other guest's vm_signal NAME.
vm_await()
{
	wait_for "$2" test -e "/vmout/$1.sig" || fail "the other guest never signalled $1 (${2}s)"
}

# pool_field FILE KEY: a value of .maru/pool or .maru/stats ("key value").
pool_field()
{
	awk -v k="$2" '$1 == k { print $2; exit }' "$1"
}

# vlog MSG: log with the seconds since the guest's script started.
vlog()
{
	log "[${SECONDS}s] $*"
}
