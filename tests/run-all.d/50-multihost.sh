# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/run-all.d/50-multihost.sh (sourced by tests/run-all.sh): the
# 'multihost' suite (tests/multihost/: marud and marufs mounts in network
# namespaces of their own, real TCP over veth, faults made on a bridge) on the
# main build. It needs root (network namespaces) and /dev/fuse; without them
# every case skips with its reason. MARU_MULTIHOST=0 skips it.

if [ "${MARU_MULTIHOST:-1}" != 0 ]; then
	mh_start=$SECONDS
	meson_suites "$BUILD_DIR" multihost
	echo "=== multihost suite: $((SECONDS - mh_start)) s"
else
	echo "=== MARU_MULTIHOST=0: multihost suite skipped"
fi
