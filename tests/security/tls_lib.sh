# shellcheck shell=bash
# tests/security/tls_lib.sh: sourced by the tls_* cases after common.sh.
# Throwaway certificates for one case, made with openssl(1) (Debian's
# openssl; gnutls-bin's certtool is not installed here): a CA, a server
# certificate for 127.0.0.1/localhost, a client certificate, and a second
# CA that signed none of them. EC P-256 keys: quick to make.
#
#   tls_certs DIR   -> DIR/{ca,ca2,srv,cli}.{pem,key}

tls_cert_sign()		# NAME CN EXT CA_DIR_PREFIX
{
	local d=$1 name=$2 cn=$3 ext=$4 ca=$5

	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$d/$name.key" -out "$d/$name.csr" -subj "/CN=$cn" 2>/dev/null
	printf '%s\n' "$ext" >"$d/$name.ext"
	openssl x509 -req -in "$d/$name.csr" -CA "$d/$ca.pem" -CAkey "$d/$ca.key" \
		-CAcreateserial -out "$d/$name.pem" -days 2 -extfile "$d/$name.ext" 2>/dev/null
}

tls_ca()		# DIR NAME [SUBJECT_NAME]
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$1/$2.key" -out "$1/$2.pem" -days 2 -subj "/CN=maru test ${3:-$2}" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}

tls_certs()
{
	local d=$1

	skip_unless_cmd openssl
	mkdir -p "$d"
	tls_ca "$d" ca
	tls_ca "$d" ca2
	tls_cert_sign "$d" srv 127.0.0.1 \
		"subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth" ca
	tls_cert_sign "$d" cli maru-client "extendedKeyUsage=clientAuth" ca
	chmod 600 "$d"/*.key
	[ -s "$d/srv.pem" ] && [ -s "$d/cli.pem" ] || fail "openssl made no certificates in $d"
}

# tls_marud_start PORT ARGS...: marud on unix:$MARUD_SOCK and tcp 127.0.0.1:PORT.
tls_marud_start()
{
	local port=$1
	shift
	marud_start --listen "unix:$MARUD_SOCK" --listen "tcp://127.0.0.1:$port" "$@"
}

# mount_must_fail TEXT URI OPTS: marufs must exit non-zero within 20 s
# without mounting, and its log must say TEXT.
mount_must_fail()
{
	local text=$1 uri=$2 opts=$3 mnt=$T/mnt-refused logf pid

	TLS_REFUSED=$((${TLS_REFUSED:-0} + 1))
	logf=$T/marufs-refused-$TLS_REFUSED.log
	TLS_REFUSED_LOG=$logf
	mkdir -p "$mnt"
	"$MARUFS" -f -o "$opts" "$uri" "$mnt" >"$logf" 2>&1 &
	pid=$!
	if ! wait_exit "$pid" 20; then
		kill -TERM "$pid" 2>/dev/null || true
		fusermount3 -u "$mnt" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		fail "marufs -o $opts $uri still runs after 20 s: it should have been refused"
	fi
	[ "$EXIT_RC" != 0 ] || fail "marufs -o $opts $uri exited 0: it should have been refused"
	! mountpoint -q "$mnt" || fail "$mnt is mounted: it should have been refused"
	grep -q -- "$text" "$logf" || fail "marufs -o $opts: no '$text' in its log: $(cat "$logf")"
	log "refused as expected ($text)"
}
