#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/fuzz/run.sh: builds the libFuzzer harnesses in their own clang build
# (ASan + UBSan) and runs each one for SECONDS from the committed seeds and
# regression inputs. New corpus entries and crash inputs go to a work
# directory, never into the source tree. Ends with "N passed, N failed" (one
# per harness) and exits non-zero when a harness crashed, hung, leaked, or
# failed one of its checks, or when the build failed.
#
#	tests/fuzz/run.sh [SECONDS [HARNESS...]]	default: 60 proto server keyfile
#
# Environment: FUZZ_BUILD_DIR (default <source>/build-fuzz), FUZZ_WORK
# (default a new directory under /tmp; kept, its path is printed), CC
# (default clang).
#
# A crash input is kept in FUZZ_WORK/artifacts/HARNESS/. Once the bug is
# fixed, copy it to tests/fuzz/regressions/HARNESS/ under a name that says
# what it was: the unit suite replays it on every build from then on.

set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECONDS_EACH=${1:-60}
shift $(($# > 0 ? 1 : 0))
HARNESSES=("$@")
[ ${#HARNESSES[@]} -eq 0 ] && HARNESSES=(proto server keyfile)
BUILD=${FUZZ_BUILD_DIR:-$SRC/build-fuzz}
WORK=${FUZZ_WORK:-$(mktemp -d /tmp/marufs-fuzz.XXXXXX)}

case $SECONDS_EACH in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS [HARNESS...]]" >&2
	exit 2
	;;
esac

build()
{
	if [ ! -d "$BUILD/meson-private" ]; then
		CC=${CC:-clang} meson setup "$BUILD" "$SRC" \
			-Db_sanitize=address,undefined -Db_lundef=false || return 1
	fi
	local targets=()
	for h in "${HARNESSES[@]}"; do
		targets+=("tests/fuzz/${h}_fuzz")
	done
	ninja -C "$BUILD" "${targets[@]}"
}

# Per-harness libFuzzer options: server inputs are frame sequences, and a
# marud per input is slower, so they get more room and more time per input.
harness_args()
{
	case $1 in
	proto) echo "-max_len=8192 -timeout=10" ;;
	server) echo "-max_len=65536 -timeout=20" ;;
	keyfile) echo "-max_len=16384 -timeout=10 -dict=$SRC/tests/fuzz/keyfile.dict" ;;
	*) return 1 ;;
	esac
}

# server_fuzz names its pool file /dev/shm/marud-fuzz-PID and removes it at
# exit; one that crashed cannot. Remove those whose process is gone.
remove_dead_pools()
{
	local f
	for f in /dev/shm/marud-fuzz-*; do
		[ -e "$f" ] || continue
		kill -0 "${f##*-}" 2>/dev/null || rm -f "$f"
	done
}

# run_one HARNESS: 0 when it ran its time with no finding.
run_one()
{
	local h=$1 args rc
	local exe="$BUILD/tests/fuzz/${h}_fuzz" log="$WORK/$h.log"
	local corpus="$WORK/corpus/$h" art="$WORK/artifacts/$h/"

	args=$(harness_args "$h") || { echo "run.sh: no harness '$h'" >&2; return 1; }
	if [ ! -x "$exe" ]; then
		echo "run.sh: $exe was not built (clang with libFuzzer needed)" >&2
		return 1
	fi
	mkdir -p "$corpus" "$art"
	echo "=== fuzz $h for ${SECONDS_EACH}s (log $log)"
	# marud's own log lines ("maru: ...") are dropped: thousands a second.
	# shellcheck disable=SC2086
	"$exe" $args -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
		-artifact_prefix="$art" "$corpus" \
		"$SRC/tests/fuzz/corpus/$h" "$SRC/tests/fuzz/regressions/$h" 2>&1 |
		grep -av --line-buffered '^maru: ' >"$log"
	rc=${PIPESTATUS[0]}
	remove_dead_pools
	grep -a -E '^(INFO: Loaded|#[0-9]+[[:space:]]+DONE|stat::)' "$log" | sed 's/^/    /'
	if [ "$rc" -ne 0 ] || ! grep -aq 'DONE' "$log"; then
		echo "=== fuzz $h: FAILED (exit $rc); last lines of $log:"
		tail -n 60 "$log"
		ls -l "$art" 2>/dev/null
		return 1
	fi
	echo "=== fuzz $h: ok"
	return 0
}

if ! build; then
	echo "run.sh: build in $BUILD failed"
	echo "0 passed, 1 failed"
	exit 1
fi
passed=0
failed=0
for h in "${HARNESSES[@]}"; do
	if run_one "$h"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
echo "work directory: $WORK"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
