# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/run-all.d/55-cluster.sh (sourced by tests/run-all.sh): the 'cluster'
# suite (tests/cluster/: marud pools joined through a real three-member
# etcd cluster, every member, pool and worker a network namespace of its
# own) on the main build. Needs root, /dev/fuse and etcd; without them the
# cases skip with the reason. MARU_CLUSTER=0 skips it.

if [ "${MARU_CLUSTER:-1}" != 0 ]; then
	cl_start=$SECONDS
	meson_suites "$BUILD_DIR" cluster
	echo "=== cluster suite: $((SECONDS - cl_start)) s"
else
	echo "=== MARU_CLUSTER=0: cluster suite skipped"
fi
