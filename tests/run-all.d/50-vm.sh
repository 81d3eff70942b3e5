# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/run-all.d/50-vm.sh (sourced by tests/run-all.sh): the 'vm' suite on
# the main build: the device-DAX, shared CXL device and rdma_rxe paths inside
# qemu guests of a Debian kernel (tests/vm/, TCG only). A case that cannot
# start qemu at all (no qemu, no kernel package) skips with the reason.
# MARU_VM=0 leaves the suite out.

if [ "${MARU_VM:-1}" != 0 ]; then
	vm_t0=$SECONDS
	meson_suites "$BUILD_DIR" vm
	echo "=== vm suite: $((SECONDS - vm_t0)) s"
else
	echo "=== MARU_VM=0: vm suite skipped"
fi
