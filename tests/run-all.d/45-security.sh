# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/run-all.d/45-security.sh (sourced by tests/run-all.sh): the
# 'security' suite (tests/security/: scoped tenant keys, quotas, TTL pins,
# TLS, key rotation) on the main build. MARU_SECURITY=0 skips it.

if [ "${MARU_SECURITY:-1}" != 0 ]; then
	meson_suites "$BUILD_DIR" security
else
	echo "=== MARU_SECURITY=0: security suite skipped"
fi
