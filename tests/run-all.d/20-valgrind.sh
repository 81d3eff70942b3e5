# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/run-all.d/20-valgrind.sh (sourced by tests/run-all.sh): a few
# integration cases, at least one libmaru and one marufs mount case, with
# every marud and marufs they start under valgrind memcheck (the 'valgrind'
# suite of tests/integration/meson.build: --error-exitcode=99, definite
# leaks are errors). Runs on the main build; skipped without valgrind.

if command -v valgrind >/dev/null; then
	vg_start=$SECONDS
	meson_suites "$BUILD_DIR" valgrind
	echo "=== valgrind suite: $((SECONDS - vg_start)) s"
else
	echo "=== valgrind not installed: valgrind suite skipped"
fi
