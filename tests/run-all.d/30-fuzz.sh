# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by tests/run-all.sh: a bounded libFuzzer run of each harness (clang,
# ASan+UBSan) from the kept corpus. Crashes, hangs, leaks and failed checks
# count as failures; new inputs stay in a temp dir, never in the tree.
# FUZZ_SECONDS (default 60) per harness.
if command -v clang >/dev/null 2>&1; then
	fuzz_log=$(mktemp /tmp/marufs-fuzz-ci.XXXXXX)
	"$SRC/tests/fuzz/run.sh" "${FUZZ_SECONDS:-60}" >"$fuzz_log" 2>&1
	grep -a '^===\|^fuzz:' "$fuzz_log"
	fuzz_out=$(tail -n 1 "$fuzz_log")
	if [[ $fuzz_out =~ ^fuzz:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
		PASSED=$((PASSED + BASH_REMATCH[1]))
		FAILED=$((FAILED + BASH_REMATCH[2]))
		RAN=$((RAN + BASH_REMATCH[1] + BASH_REMATCH[2]))
	else
		echo "FAILED: tests/fuzz/run.sh gave no summary; its output is in $fuzz_log" >&2
		FAILED=$((FAILED + 1))
	fi
else
	echo "=== fuzz: clang missing, counted as a failure" >&2
	FAILED=$((FAILED + 1))
fi
