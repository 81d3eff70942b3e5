# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/run-all.d/10-asan.sh (sourced by tests/run-all.sh): the unit and
# integration suites again on a separate AddressSanitizer + UBSan build
# (clang when installed: its ASan lets the FUSE daemon mount; gcc also works
# but warns falsely under -fsanitize at -O2). Every marud and marufs the
# cases start inherit the options: leaks are reported at a clean exit
# (making marud_stop / marufs_umount fail on the exit status), and the first
# ASan or UBSan report aborts the process, which fails its case.
# MARU_ASAN=0 skips this suite.

if [ "${MARU_ASAN:-1}" != 0 ]; then
	asan_start=$SECONDS
	asan_dir=$(ci_build_dir asan)
	asan_cc=${CC:-}
	command -v clang >/dev/null && asan_cc=clang
	if CC=${asan_cc:-cc} configure "$asan_dir" -Db_sanitize=address,undefined \
		-Db_lundef=false -Dtests=true; then
		# every unit and integration case, none excluded (also those in a
		# second suite, listed as "integration+engines"), and the security
		# suite: the code that faces untrusted tenants and certificates
		mapfile -t asan_tests < <(meson test -C "$asan_dir" --list 2>/dev/null |
			sed -n -E 's%^marufs:([a-z]+\+)*(unit|integration|security)(\+[a-z]+)* / %%p')
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-} \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-} \
			meson_tests "$asan_dir" "${asan_tests[@]}"
	fi
	echo "=== asan suite: $((SECONDS - asan_start)) s"
fi
