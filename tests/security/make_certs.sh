#!/bin/sh
# make_certs.sh DIR: the certificates the security tests use, made fresh with
# the openssl CLI (nothing is committed): a test CA, a server certificate for
# localhost and 127.0.0.1, a client certificate, and an unrelated CA with a
# client certificate of its own. EC P-256 keys, valid for two days.
#
#   ca.pem ca.key                  the test CA
#   server.pem server.key          CN=localhost, SAN DNS:localhost IP:127.0.0.1
#   client.pem client.key          CN=sampler-test-client (clientAuth)
#   other-ca.pem other-ca.key      an unrelated CA
#   other-client.pem other-client.key  a client certificate from other-ca
#   expired.pem                    server.key's certificate, already expired
#   garbage.pem                    not a certificate
#
# OPENSSL: the openssl binary (default: openssl on the PATH).
set -eu
openssl=${OPENSSL:-openssl}
dir=${1:?usage: make_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"

key() { "$openssl" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() {  # ca NAME CN
  key "$1.key"
  "$openssl" req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
}

leaf() {  # leaf NAME CN CA EXTENSIONS
  key "$1.key"
  "$openssl" req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf '%s\n' "$4" > "$1.ext"
  "$openssl" x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" \
    -CAcreateserial -CAserial "$3.srl" -out "$1.pem" -days 2 \
    -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

ca ca "sampler test CA"
ca other-ca "unrelated test CA"
leaf server localhost ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1"
leaf client sampler-test-client ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
leaf other-client other-test-client other-ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
# For the startup checks: a certificate file that is not one, and the server's
# key certified with an end date already past.
echo "not a certificate" > garbage.pem
"$openssl" req -new -key server.key -out expired.csr -subj "/CN=localhost"
"$openssl" x509 -req -in expired.csr -CA ca.pem -CAkey ca.key \
  -CAserial ca.srl -out expired.pem -days -1 2>/dev/null
rm -f expired.csr
