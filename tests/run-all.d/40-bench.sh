# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/run-all.d/40-bench.sh (sourced by tests/run-all.sh): the benchmarks
# once in their --quick form (the 'bench' suite: tests/bench/run.sh with
# few iterations, names and rounds) on the main build. It proves every
# benchmark and peer still builds, runs, reads back the right bytes and
# prints well-formed rows; its ratios are not judged (a quick run on a CI
# machine says nothing about them). MARU_BENCH=0 skips it.

if [ "${MARU_BENCH:-1}" != 0 ]; then
	bench_start=$SECONDS
	meson_suites "$BUILD_DIR" bench
	echo "=== bench suite (quick): $((SECONDS - bench_start)) s"
else
	echo "=== MARU_BENCH=0: bench suite skipped"
fi
