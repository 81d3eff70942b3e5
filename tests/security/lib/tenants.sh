# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/security/lib/tenants.sh: key files for the tenant cases, sourced
# after tests/integration/lib/common.sh. keys_write writes marud's key file
# ($T/keys: an admin key and the named keys given), key_client NAME the
# one-key file a client of that key mounts with ($T/NAME.key).

# keys_write "NAME ROOT RIGHTS [QUOTA]"...: marud's key file, mode 0600.
keys_write()
{
	local spec name root rights quota
	{
		echo "marud-keys 1"
		echo "admin secret=${ADMIN_SECRET:-admin-secret-$$-0123456789}"
		for spec in "$@"; do
			read -r name root rights quota <<<"$spec"
			echo "key $name root=$root rights=$rights${quota:+ quota=$quota} secret=$name-secret-$$-0123456789"
		done
	} >"$T/keys.new"
	chmod 600 "$T/keys.new"
	mv "$T/keys.new" "$T/keys"
}

# key_client NAME [ROOT RIGHTS]: the client's key file for NAME ("admin": the admin key).
key_client()
{
	local name=$1 f=$T/$1.key
	{
		echo "marud-keys 1"
		if [ "$name" = admin ]; then
			echo "admin secret=${ADMIN_SECRET:-admin-secret-$$-0123456789}"
		else
			echo "key $name root=${2:-/} rights=${3:-rw} secret=$name-secret-$$-0123456789"
		fi
	} >"$f"
	chmod 600 "$f"
	echo "$f"
}
