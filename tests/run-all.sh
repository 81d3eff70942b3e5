#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/run-all.sh: the project's test command. Configures a -Werror build in
# a fresh directory (build-ci, wiped when it exists), builds everything, runs the
# unit, integration and rdma suites, then the optional suites in tests/run-all.d/, and
# ends with one line "N passed, N failed, N skipped" summed over every suite run.
# Exits non-zero when anything failed, timed out or errored, when a build
# failed, or when no test ran at all.
#
#	tests/run-all.sh [SUITE...]	default suites: unit integration rdma
#
# Environment: BUILD_DIR (default <source>/build-ci), MESON_TEST_PROCS (2),
# MARU_EXTRA_SUITES=0 to skip tests/run-all.d/.
#
# Adding a suite: drop tests/run-all.d/NN-name.sh; it is sourced (bash) after
# the main suites and calls the two functions below, e.g. for an ASan build:
#
#	dir=$(ci_build_dir asan)
#	configure "$dir" -Db_sanitize=address,undefined -Db_lundef=false &&
#		meson_suites "$dir" unit

set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC/build-ci}
PROCS=${MESON_TEST_PROCS:-2}

PASSED=0
FAILED=0
SKIPPED=0
RAN=0

# ci_build_dir NAME: the directory for an extra build, beside the main one.
ci_build_dir()
{
	echo "$BUILD_DIR-$1"
}

# configure DIR [meson options]: fresh -Werror configuration and a full build.
# A failed configure or build counts as one failed test, so it cannot hide.
configure()
{
	local dir=$1
	shift
	local setup=(meson setup)

	[ -d "$dir/meson-private" ] && setup+=(--wipe)
	echo "=== configure $dir $*"
	if ! "${setup[@]}" -Dwerror=true "$@" "$dir" "$SRC"; then
		echo "FAILED: meson setup $dir" >&2
		FAILED=$((FAILED + 1))
		return 1
	fi
	echo "=== build $dir"
	if ! ninja -C "$dir"; then
		echo "FAILED: ninja -C $dir" >&2
		FAILED=$((FAILED + 1))
		return 1
	fi
}

# meson_suites DIR SUITE...: run those meson test suites of an already built
# DIR and add their results to the totals.
meson_suites()
{
	local dir=$1 args=() s
	shift
	for s in "$@"; do
		args+=(--suite "$s")
	done
	meson_run "$dir" "${args[@]}"
}

# meson_tests DIR NAME...: run those tests (by meson name) of a built DIR.
meson_tests()
{
	meson_run "$@"
}

# meson_run DIR ARGS...: run meson test with ARGS and add the results up.
meson_run()
{
	local dir=$1 args counts p f k n
	shift
	args=("$@")
	echo "=== test $dir: $*"
	# Count this run only, never a log left by an earlier one.
	rm -f "$dir/meson-logs/testlog.json"
	# Its exit status says nothing the log does not; the log is counted below.
	meson test -C "$dir" --no-rebuild "${args[@]}" --print-errorlogs \
		--num-processes "$PROCS" || true
	if [ ! -e "$dir/meson-logs/testlog.json" ]; then
		echo "=== $dir ($*): no test ran" >&2
		return 0
	fi
	if ! counts=$(count_results "$dir/meson-logs/testlog.json"); then
		echo "FAILED: unreadable $dir/meson-logs/testlog.json" >&2
		FAILED=$((FAILED + 1))
		return 1
	fi
	read -r p f k n <<<"$counts"
	echo "=== $dir: $p passed, $f failed, $k skipped"
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SKIPPED=$((SKIPPED + k))
	RAN=$((RAN + n))
}

# count_results TESTLOG: print "passed failed skipped total" from meson's
# testlog.json (one JSON object per line).
count_results()
{
	python3 - "$1" <<'PY'
import json, sys

passed = failed = skipped = 0
with open(sys.argv[1]) as log:
    for line in log:
        line = line.strip()
        if not line:
            continue
        result = json.loads(line).get("result")
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:	# FAIL UNEXPECTEDPASS TIMEOUT ERROR, or anything unknown
            failed += 1
print(passed, failed, skipped, passed + failed + skipped)
PY
}

summary()
{
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	if [ "$FAILED" -ne 0 ]; then
		exit 1
	fi
	if [ "$RAN" -eq 0 ]; then
		echo "no test ran" >&2
		exit 1
	fi
	exit 0
}

main()
{
	local suites=("$@") extra

	[ ${#suites[@]} -gt 0 ] || suites=(unit integration rdma)
	if configure "$BUILD_DIR"; then
		meson_suites "$BUILD_DIR" "${suites[@]}"
	fi
	if [ "${MARU_EXTRA_SUITES:-1}" != 0 ]; then
		for extra in "$SRC"/tests/run-all.d/*.sh; do
			[ -e "$extra" ] || continue
			# shellcheck source=/dev/null
			. "$extra"
		done
	fi
	summary
}

main "$@"
