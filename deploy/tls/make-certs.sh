#!/bin/sh
# Makes a cluster's certificates for mutual TLS (docs/security.md): a CA, and for each
# identity a key and a certificate whose common name is the identity, valid for server
# and client use, laid out as a Kubernetes TLS Secret mounts them (what --tls_dir reads):
#
#   OUT/ca.crt, OUT/ca.key                    the CA (keep ca.key out of the cluster)
#   OUT/<identity>/tls.crt, tls.key, ca.crt   one directory per identity
#
# Usage: make-certs.sh OUT IDENTITY[=HOST,HOST...] ...
#   The hosts are the names and addresses the identity's servers are reached at (its
#   certificate's subject alternative names); localhost and 127.0.0.1 are always added.
#   An existing OUT/ca.key is reused, so running it again with new identities (or the
#   same ones, to rotate their certificates) keeps the cluster's trust.
#   OUT itself is made private (mode 700: ca.key); keys are mode 600, or KEY_MODE (644
#   when a container running as another user mounts an identity's directory, as the
#   Compose deployment does; OUT's mode still keeps them from other users of the host).
# Example: make-certs.sh certs master=master worker=ps0,ps1,worker0,worker1 chief trainer
set -eu

if [ $# -lt 2 ]; then
  echo "usage: $0 OUT IDENTITY[=HOST,HOST...] ..." >&2
  exit 2
fi
out=$1
shift
command -v openssl >/dev/null || { echo "$0: needs openssl (apt-get install openssl)" >&2; exit 1; }
mkdir -p "$out"
chmod 700 "$out"
key_mode=${KEY_MODE:-600}
days=${CERT_DAYS:-365}

if [ ! -f "$out/ca.key" ]; then
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$out/ca.key" -out "$out/ca.crt" -days "$days" -subj "/CN=overseer-cluster-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
  chmod 600 "$out/ca.key"
fi

for spec in "$@"; do
  name=${spec%%=*}
  hosts=
  [ "$name" != "$spec" ] && hosts=${spec#*=}
  case $name in
    ''|*/*|.*) echo "$0: bad identity '$name'" >&2; exit 2 ;;
  esac
  san="DNS:localhost,IP:127.0.0.1,IP:::1"
  oldifs=$IFS
  IFS=,
  for host in $hosts; do
    case $host in
      *[!0-9.]*) case $host in *:*) san="$san,IP:$host" ;; *) san="$san,DNS:$host" ;; esac ;;
      *) san="$san,IP:$host" ;;
    esac
  done
  IFS=$oldifs
  dir=$out/$name
  mkdir -p "$dir"
  ext=$(mktemp)
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n' "$san" > "$ext"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$dir/tls.key.new" -out "$dir/tls.csr" -subj "/CN=$name" 2>/dev/null
  openssl x509 -req -in "$dir/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
    -days "$days" -extfile "$ext" -out "$dir/tls.crt.new" 2>/dev/null
  rm -f "$ext" "$dir/tls.csr"
  chmod "$key_mode" "$dir/tls.key.new"
  chmod 755 "$dir"
  cp "$out/ca.crt" "$dir/ca.crt"
  # Key and certificate replaced together, each by a rename.
  mv "$dir/tls.key.new" "$dir/tls.key"
  mv "$dir/tls.crt.new" "$dir/tls.crt"
  echo "$dir: CN=$name, $san"
done
