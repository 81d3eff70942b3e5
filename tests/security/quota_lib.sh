# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/security/quota_lib.sh: what the quota cases share (sourced, not a
# case): the integration harness, a key file with two tenants, alpha
# (/alpha, quota $ALPHA_QUOTA) and beta (/beta, quota $BETA_QUOTA), a real
# marud serving it (keys_write, lib/tenants.sh) and a real marufs mounted
# with the administrator key.
# The administrator's writes into a tenant's root count against that
# tenant's quota (the bytes are charged where they live), so these cases
# need no scoped mount; the files are 1 MiB, past the lease cache, so that
# closing one leaves it unleased and evictable.
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/lib/tenants.sh"

: "${ALPHA_QUOTA:=4M}"
: "${BETA_QUOTA:=64M}"
MIB=1048576
quota_setup_args=()	# more marud arguments

quota_setup()
{
	skip_unless_fuse
	keys_write "alpha /alpha rw $ALPHA_QUOTA" "beta /beta rw $BETA_QUOTA"
	marud_start --key-file "$T/keys" "${quota_setup_args[@]}"
	marufs_mount -o "key_file=$(key_client admin)"
	[ -d "$MNT/alpha" ] && [ -d "$MNT/beta" ] || fail "marud did not make the tenant roots"
}

# put DIR/NAME [MiB]: write a file of that many MiB (1 by default) and close it.
put()
{
	head -c $((${2:-1} * MIB)) /dev/urandom >"$MNT/$1" || fail "writing $1"
}

# try_put DIR/NAME [MiB]: put, for a write that may fail (its status returned).
try_put()
{
	head -c $((${2:-1} * MIB)) /dev/urandom >"$MNT/$1"
}

# gone PATH: the name went (eviction reaches the mount by an event).
gone()
{
	wait_for 5 test ! -e "$MNT/$1" || fail "$1 is still there"
}

# kept PATH...: every name is still there.
kept()
{
	local p
	for p in "$@"; do
		[ -e "$MNT/$p" ] || fail "$p was evicted"
	done
}

# ns DIR ATTR: user.maru.ns.ATTR of DIR.
ns()
{
	getfattr --only-values -n "user.maru.ns.$2" "$MNT/$1" 2>"$T/getfattr.err" ||
		fail "getfattr user.maru.ns.$2 on $1: $(cat "$T/getfattr.err")"
}

# tstat FAMILY TENANT: the sample of marud_tenant_FAMILY for that tenant.
tstat()
{
	local v
	v=$(maru_stats | awk -v m="marud_tenant_$1{tenant=\"$2\"}" '$1 == m { v = $2 } END { print v }')
	[ -n "$v" ] || fail "marud_tenant_$1 of $2 missing from the stats"
	echo "$v"
}
