# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/vm/lib.sh: the host side of the VM harness, sourced by the vm_* cases.
# It boots guests of the Debian kernel that tests/vm/kernel.sh unpacked into
# the build folder, under qemu with TCG (never KVM), each with the host's root
# read-only through 9p under a tmpfs overlay (so the build's binaries are at
# the same paths inside) and the run folder $RUN writable on /vmout. A guest
# runs the bash script the case wrote with vm_cmd, and its exit status, output
# and kernel log come back as $RUN/NAME.{rc,log,dmesg}, the console in
# $RUN/NAME.console. The EXIT trap powers off (kills) every qemu this shell
# started, removes the shared memory files and keeps $RUN when the case failed.
#
#	. "$(dirname "$0")/lib.sh"
#	vm_init
#	vm_cmd A <<'EOF'
#	modprobe nfit; ...
#	EOF
#	vm_start A 1G -machine pc,nvdimm=on ...
#	vm_wait A 300	# 0 when the guest's command exited 0
#
# Environment (tests/vm/meson.build sets it): MARUD, MARUFS, TOOLS, EXAMPLES,
# SRCDIR, LD_LIBRARY_PATH (handed to the guests), MARU_VM_CACHE (where the
# kernel is kept). MARU_VM_KEEP=1 keeps $RUN even when the case passes.
# Exit 77 only when no guest can start at all (no qemu, no kernel package).

set -euo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${SRCDIR:=$(cd "$VM_DIR/../.." && pwd)}"
: "${MARU_VM_CACHE:=$SRCDIR/build/tests/vm/cache}"
QEMU=${MARU_VM_QEMU:-qemu-system-x86_64}
declare -A VM_PID=()	# guest name -> qemu pid
VM_SHM=()		# memory files made by vm_memfile
VM_FAILED=1		# cleared by vm_pass

vm_fail()
{
	echo "FAIL: $*" >&2
	exit 1
}

vm_skip()
{
	echo "SKIP: $*" >&2
	exit 77
}

vm_log()
{
	echo "# $(date +%T) $*" >&2
}

vm_cleanup()
{
	local n pid i kids
	for n in "${!VM_PID[@]}"; do
		pid=${VM_PID[$n]}
		# timeout(1) passes TERM on to its qemu; were timeout killed
		# first, its qemu (by pid) goes too
		kids=$(pgrep -P "$pid" 2>/dev/null || true)
		kill -TERM "$pid" 2>/dev/null || continue
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		for i in $kids; do
			[ "$(cat "/proc/$i/comm" 2>/dev/null)" != qemu-system-x86 ] ||
				kill -KILL "$i" 2>/dev/null || true
		done
		wait "$pid" 2>/dev/null || true
	done
	rm -f "${VM_SHM[@]}"
	if [ -n "${RUN:-}" ] && [ -d "$RUN" ]; then
		if [ "$VM_FAILED" = 1 ] || [ "${MARU_VM_KEEP:-0}" = 1 ]; then
			echo "# run folder kept: $RUN" >&2
		else
			rm -rf "$RUN"
		fi
	fi
}

# vm_init: the kernel (fetched and unpacked once), the run folder, the trap.
vm_init()
{
	local out rc=0
	command -v "$QEMU" >/dev/null || vm_skip "no $QEMU (package qemu-system-x86)"
	out=$("$VM_DIR/kernel.sh" "$MARU_VM_CACHE") || rc=$?
	[ "$rc" = 77 ] && vm_skip "no guest kernel (see above)"
	[ "$rc" = 0 ] || vm_fail "tests/vm/kernel.sh failed ($rc)"
	VM_KERNEL=$(sed -n 's/^kernel=//p' <<<"$out")
	VM_INITRD=$(sed -n 's/^initrd=//p' <<<"$out")
	VM_MODULES=$(sed -n 's/^modules=//p' <<<"$out")
	RUN=$(mktemp -d /tmp/maru-vm.XXXXXX)
	chmod 755 "$RUN"
	trap vm_cleanup EXIT
	trap 'exit 1' INT TERM HUP
	vm_log "kernel $(cat "$MARU_VM_CACHE/ready"), run folder $RUN"
}

# vm_pass: the case passed (its run folder goes at exit).
vm_pass()
{
	VM_FAILED=0
	echo "PASS"
	exit 0
}

# vm_cmd NAME: the guest's command, read from stdin (bash), after a header
# that exports the build's paths.
vm_cmd()
{
	local v
	{
		echo "set -euo pipefail"
		for v in MARUD MARUFS TOOLS EXAMPLES SRCDIR LD_LIBRARY_PATH BUILDDIR; do
			[ -z "${!v:-}" ] || printf 'export %s=%q\n' "$v" "${!v}"
		done
		echo "export MARU_IT_TIMEOUT=60 VM_NAME=$1 VM=$SRCDIR/tests/vm"
		cat
	} >"$RUN/$1.cmd"
}

# vm_memfile NAME SIZE: a memory file in /dev/shm for share=on backends,
# removed at exit; its path in MEMFILE (not to be called in $(...): the
# list of files to remove lives in this shell).
vm_memfile()
{
	MEMFILE=/dev/shm/maru-vm-$$-$1
	rm -f "$MEMFILE"
	truncate -s "$2" "$MEMFILE" || vm_skip "cannot make $MEMFILE ($2)"
	VM_SHM+=("$MEMFILE")
}

# vm_port: a TCP port of 127.0.0.1 that was free a moment ago.
vm_port()
{
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# vm_start NAME MEM SECONDS [qemu args...]: boot guest NAME with MEM of RAM
# (e.g. 1G; "1G,slots=2,maxmem=8G" for an NVDIMM) for at most SECONDS,
# then run $RUN/NAME.cmd. One vCPU unless the arguments say -smp.
vm_start()
{
	local name=$1 mem=$2 secs=$3 smp=(-smp 1) a
	shift 3
	for a in "$@"; do
		[ "$a" != -smp ] || smp=()
	done
	[ -e "$RUN/$name.cmd" ] || vm_fail "vm_start $name: no vm_cmd"
	rm -f "$RUN/$name.rc"
	timeout --foreground -k 5 "$secs" "$QEMU" -accel tcg -cpu max "${smp[@]}" -m "$mem" \
		-nodefaults -no-reboot -display none -monitor none \
		-serial "file:$RUN/$name.console" \
		-kernel "$VM_KERNEL" -initrd "$VM_INITRD" \
		-append "console=ttyS0 panic=-1 quiet maru.name=$name maru.init=$VM_DIR/guest-init.sh maru.modules=$VM_MODULES" \
		-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=root,mount_tag=root \
		-fsdev "local,id=out,path=$RUN,security_model=none" \
		-device virtio-9p-pci,fsdev=out,mount_tag=out \
		"$@" >"$RUN/$name.qemu" 2>&1 &
	VM_PID[$name]=$!
	vm_log "guest $name: qemu ${VM_PID[$name]} ($mem, ${secs}s at most)"
}

# vm_listening PORT: true when something listens on 127.0.0.1:PORT.
vm_listening()
{
	ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

# vm_wait_listen NAME PORT: wait until guest NAME's qemu listens on PORT
# (a -netdev socket,listen= the other guest connects to).
vm_wait_listen()
{
	local i
	for i in $(seq 100); do
		vm_listening "$2" && return 0
		kill -0 "${VM_PID[$1]}" 2>/dev/null || vm_qemu_failed "$1"
		sleep 0.1
	done
	vm_fail "guest $1: qemu does not listen on $2"
}

# vm_qemu_failed NAME: qemu of NAME ended; 77 when the guest never started
# (nothing on its console), else a failure. Either way with the reason.
vm_qemu_failed()
{
	if [ ! -s "$RUN/$1.console" ]; then
		cat "$RUN/$1.qemu" >&2
		vm_skip "qemu cannot start guest $1: $(head -c 400 "$RUN/$1.qemu")"
	fi
	vm_show "$1"
	vm_fail "guest $1 stopped without an exit status"
}

# vm_show NAME: the guest's output, then the end of its console.
vm_show()
{
	local f
	for f in "$RUN/$1.log" "$RUN/$1.console" "$RUN/$1.qemu"; do
		[ -s "$f" ] || continue
		echo "----- $f (last 80 lines) -----" >&2
		tail -n 80 "$f" >&2
	done
	echo "----- end of guest $1 -----" >&2
}

# vm_wait NAME: wait for guest NAME to power off; sets VM_RC to the exit
# status of its command and returns it. A guest killed by its time limit,
# or one that stopped without a status, fails the case.
vm_wait()
{
	local name=$1 pid=${VM_PID[$1]} qrc=0
	wait "$pid" || qrc=$?
	unset "VM_PID[$name]"
	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		vm_show "$name"
		vm_fail "guest $name ran out of time"
	fi
	[ -s "$RUN/$name.rc" ] || vm_qemu_failed "$name"
	VM_RC=$(cat "$RUN/$name.rc")
	vm_log "guest $name: command exited $VM_RC"
	if [ "$VM_RC" != 0 ]; then
		vm_show "$name"
	fi
	return "$VM_RC"
}
