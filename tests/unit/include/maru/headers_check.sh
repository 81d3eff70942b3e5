#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/unit/include/maru/headers_check.sh: every public header compiles
# on its own, as C11 and as C++11 (engines' extensions are C++), with
# warnings as errors. A header that needs another one first, or uses what
# C++ lacks (_Static_assert), fails here.
#
# usage: headers_check.sh INCLUDE_DIR
set -u
inc=$1
cc=${CC:-cc}
cxx=${CXX:-c++}
command -v "$cxx" >/dev/null || { echo "no C++ compiler ($cxx): install g++" >&2; exit 1; }
fail=0
n=0
for h in "$inc"/maru/*.h; do
	name=maru/$(basename "$h")
	for lang in c c++; do
		if [ $lang = c ]; then
			set -- "$cc" -x c -std=c11
		else
			set -- "$cxx" -x c++ -std=c++11
		fi
		if ! printf '#include <%s>\nint main(void) { return 0; }\n' "$name" |
			"$@" -Wall -Wextra -Werror -fsyntax-only -I"$inc" - 2>"${TMPDIR:-/tmp}/hc.$$"; then
			echo "FAIL: <$name> as $lang:" >&2
			cat "${TMPDIR:-/tmp}/hc.$$" >&2
			fail=1
		fi
		n=$((n + 1))
	done
done
rm -f "${TMPDIR:-/tmp}/hc.$$"
[ $n -ge 10 ] || { echo "only $n compiles: headers missing?" >&2; exit 1; }
[ $fail = 0 ] && echo "$n header compiles (C11, C++11) clean"
exit $fail
