#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/unpack_example.sh SRCDIR OUTDIR FILE...: copy each FILE of a
# Debian examples directory into OUTDIR, gunzipping FILE.gz when only that is
# shipped (dh_compress may compress larger example files).
set -eu
src=$1 out=$2
shift 2
for f in "$@"; do
	if [ -f "$src/$f" ]; then
		cp "$src/$f" "$out/$f"
	elif [ -f "$src/$f.gz" ]; then
		gzip -dc "$src/$f.gz" >"$out/$f"
	else
		echo "unpack_example.sh: neither $src/$f nor $src/$f.gz" >&2
		exit 1
	fi
done
