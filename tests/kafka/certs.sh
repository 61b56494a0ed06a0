#!/usr/bin/env bash
# certs.sh DIR: make the test PKI of the TLS listeners with openssl (once per
# DIR; an existing complete set is kept). Everything is for 127.0.0.1 only.
#   ca.pem, ca.key              the test CA (brokers trust it for client certs)
#   broker.pem, broker.key      the brokers' certificate (SAN IP:127.0.0.1,
#                               DNS:localhost), signed by the CA
#   broker-keystore.pem         key + chain for Kafka's ssl.keystore.type=PEM
#   client.pem, client.key      a client certificate (CN=krabka-client) signed
#                               by the CA; client.key is PKCS#8 encrypted with
#                               the password in client.password
#   client-plain.key            the same key, unencrypted
#   expired.pem, expired.key    a client certificate signed by the CA that
#                               expired in 2021
#   other-ca.pem                a CA nobody uses (the "wrong CA")
#   stranger.pem, stranger.key  a client certificate signed by other-ca
set -euo pipefail
dir="${1:?usage: certs.sh DIR}"
mkdir -p "$dir"
cd "$dir"
[[ -f .complete ]] && exit 0
command -v openssl >/dev/null || { echo "certs.sh: openssl is required for the TLS listeners" >&2; exit 1; }
rm -rf tmp && mkdir tmp
q() { "$@" > tmp/openssl.log 2>&1 || { cat tmp/openssl.log >&2; echo "certs.sh: failed: $*" >&2; exit 1; }; }
ca() { # ca NAME CN
  q openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days 3650 -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
ca ca "krabka test CA"
ca other-ca "krabka wrong CA"
# sign CA NAME CN EXT [openssl-ca dates]
leaf() {
  local ca="$1" name="$2" cn="$3" ext="$4"
  q openssl req -new -newkey rsa:2048 -nodes -keyout "$name.key" -out "tmp/$name.csr" -subj "/CN=$cn"
  printf '%s\n' "$ext" > "tmp/$name.ext"
  q openssl x509 -req -in "tmp/$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial -days 3650 \
    -extfile "tmp/$name.ext" -out "$name.pem"
}
leaf ca broker localhost "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
leaf ca client krabka-client "extendedKeyUsage=clientAuth"
leaf other-ca stranger krabka-stranger "extendedKeyUsage=clientAuth"
cat broker.key broker.pem ca.pem > broker-keystore.pem
# The client key, encrypted (PKCS#8, PBES2 AES-256) and in clear.
echo "client-key-secret" > client.password
mv client.key client-plain.key
q openssl pkcs8 -topk8 -in client-plain.key -out client.key -v2 aes-256-cbc -passout file:client.password
# An expired client certificate: `openssl ca` takes explicit dates.
mkdir -p tmp/db && : > tmp/db/index.txt && echo 1000 > tmp/db/serial
cat > tmp/ca.cnf <<CNF
[ca]
default_ca = test
[test]
dir = tmp/db
database = tmp/db/index.txt
serial = tmp/db/serial
new_certs_dir = tmp/db
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
[ext]
extendedKeyUsage = clientAuth
CNF
q openssl req -new -newkey rsa:2048 -nodes -keyout expired.key -out tmp/expired.csr -subj "/CN=krabka-expired"
q openssl ca -batch -config tmp/ca.cnf -cert ca.pem -keyfile ca.key -in tmp/expired.csr -out expired.pem \
  -startdate 20200101000000Z -enddate 20210101000000Z -extensions ext -notext
rm -rf tmp ca.srl other-ca.srl
touch .complete
