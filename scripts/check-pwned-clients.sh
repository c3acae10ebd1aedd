#!/usr/bin/env bash
# Checks that maintained Pwned Passwords client libraries work unchanged
# against `seekless pwned serve`, pointed at its base URL on 127.0.0.1, over
# plain HTTP and over HTTPS (a certificate from a CA made here, which the
# clients are told to trust as an operator would: NODE_EXTRA_CA_CERTS,
# REQUESTS_CA_BUNDLE, SSL_CERT_FILE):
#   - npm `hibp` (pwnedPassword, pwnedPasswordRange; option `baseUrl`),
#     SHA-1 and NTLM, with and without padding;
#   - PyPI `pyhibp` (module constant PWNED_PASSWORDS_API_BASE_URI);
#   - PyPI `pwned-passwords-django` (its API class's `api_endpoint`; pads by
#     default), through its password validator.
# Installs the clients from the registries into a temporary directory.
# Usage: scripts/check-pwned-clients.sh
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node npm python3 curl openssl; do
    command -v "$tool" >/dev/null || { echo "clients: $tool is not installed" >&2; exit 2; }
done
# The full binary (the default features), the one the user's own `cargo
# build --release` makes, where it puts it: a build with fewer features
# there would replace it with one that lacks commands. Its path is cargo's
# own answer (CARGO_TARGET_DIR, build.target-dir, build.target included).
seekless=$(cargo build --release --quiet --locked -p seekless --bin seekless \
    --message-format json-render-diagnostics \
    | sed -n 's|.*"executable":"\([^"]*/seekless\)".*|\1|p' | tail -n1)
[ -x "$seekless" ] || { echo "clients: cargo build gave no seekless binary" >&2; exit 1; }

work=$(mktemp -d /tmp/seekless-clients.XXXXXX)
server=
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# SHA-1 and NTLM of "password" (9545824 in HIBP) and "123456"; "P@ssw0rd".
cat >"$work/sha1.txt" <<EOF
5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824
7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195
21BD12DC183F740EE76F27B78EB39C8AD972A757:52579
5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD9:3
EOF
cat >"$work/ntlm.txt" <<EOF
8846F7EAEE8FB117AD06BDD830B7586C:9545824
32ED87BDB5FDC5E9CBA88547376818D4:37359195
EOF
"$seekless" pwned prepare "$work/sha1.txt" -o "$work/sha1.idx" >/dev/null
"$seekless" pwned prepare "$work/ntlm.txt" -o "$work/ntlm.idx" >/dev/null
# A CA of this run's, and a certificate it signs for localhost.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=seekless client check CA" -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout "$work/key.pem" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -CAcreateserial -days 2 -extfile "$work/san.ext" -out "$work/cert.pem" 2>/dev/null
"$seekless" pwned serve -i "$work/sha1.idx" -i "$work/ntlm.idx" --listen 127.0.0.1:0 \
    --tls-listen 127.0.0.1:0 --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
    >"$work/serve.out" 2>"$work/serve.err" &
server=$!
for _ in $(seq 1 100); do
    [ "$(wc -l <"$work/serve.out")" -ge 2 ] && break
    sleep 0.05
done
http_base=$(grep -m1 '^listening on http://' "$work/serve.out" | sed 's/^listening on //')
https_base=$(grep -m1 '^listening on https://' "$work/serve.out" | sed 's/^listening on //; s/127.0.0.1/localhost/')
if [ -z "$http_base" ] || [ -z "$https_base" ]; then
    cat "$work/serve.err" >&2
    exit 1
fi
echo "== server at $http_base and $https_base"
# The clients trust the run's CA beside the system's, as an operator
# would tell them to.
cat /etc/ssl/certs/ca-certificates.crt "$work/ca.pem" >"$work/bundle.pem" 2>/dev/null \
    || cp "$work/ca.pem" "$work/bundle.pem"
export NODE_EXTRA_CA_CERTS="$work/ca.pem" REQUESTS_CA_BUNDLE="$work/bundle.pem" \
    SSL_CERT_FILE="$work/bundle.pem"

echo "== npm hibp"
(cd "$work" && npm init -y >/dev/null 2>&1 && npm install --silent hibp >/dev/null 2>&1)
echo "   hibp $(node -p "require('$work/node_modules/hibp/package.json').version")"
cat >"$work/hibp-check.mjs" <<'EOF'
import assert from 'node:assert/strict';
import { pwnedPassword, pwnedPasswordRange } from 'hibp';
const baseUrl = process.argv[2];
assert.equal(await pwnedPassword('password', { baseUrl }), 9545824);
assert.equal(await pwnedPassword('123456', { baseUrl, addPadding: true }), 37359195);
assert.equal(await pwnedPassword('correct horse battery staple', { baseUrl }), 0);
const range = await pwnedPasswordRange('5baa6', { baseUrl });
assert.deepEqual(range, {
  '1E4C9B93F3F0682250B6CF8331B7EE68FD8': 9545824,
  '1E4C9B93F3F0682250B6CF8331B7EE68FD9': 3,
});
const padded = await pwnedPasswordRange('5BAA6', { baseUrl, addPadding: true });
const entries = Object.entries(padded);
assert.ok(entries.length >= 800, `${entries.length} entries`);
assert.equal(padded['1E4C9B93F3F0682250B6CF8331B7EE68FD8'], 9545824);
assert.equal(entries.filter(([, n]) => n > 0).length, 2);
const ntlm = await pwnedPasswordRange('8846F', { baseUrl, mode: 'ntlm' });
assert.deepEqual(ntlm, { '7EAEE8FB117AD06BDD830B7586C': 9545824 });
console.log('   pwnedPassword, pwnedPasswordRange (padding, ntlm): ok');
EOF
for base in "$http_base" "$https_base"; do
    echo "   $base"
    (cd "$work" && node hibp-check.mjs "$base")
done
# The certificate is really checked: without the CA, the client refuses.
if (cd "$work" && env -u NODE_EXTRA_CA_CERTS node hibp-check.mjs "$https_base" >/dev/null 2>&1); then
    echo "clients: hibp accepted a certificate from a CA it was not told to trust" >&2
    exit 1
fi
echo "   without the run's CA trusted, the HTTPS check is refused: ok"

echo "== PyPI pyhibp and pwned-passwords-django"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q pyhibp pwned-passwords-django >/dev/null 2>&1
"$work/venv/bin/pip" list 2>/dev/null | grep -E -i '^(pyhibp|pwned-passwords-django) ' | sed 's/^/   /'
cat >"$work/py-check.py" <<'EOF'
import sys
base = sys.argv[1]

import pyhibp
from pyhibp import pwnedpasswords
pyhibp.set_user_agent(ua="seekless client check")
pwnedpasswords.PWNED_PASSWORDS_API_BASE_URI = base + "/"
assert pwnedpasswords.is_password_breached(password="password") == 9545824
assert pwnedpasswords.is_password_breached(password="P@ssw0rd") == 52579
assert pwnedpasswords.is_password_breached(password="not listed anywhere") == 0
suffixes = pwnedpasswords.suffix_search(hash_prefix="5BAA6")
assert suffixes == ["1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824",
                    "1E4C9B93F3F0682250B6CF8331B7EE68FD9:3"], suffixes
print("   pyhibp is_password_breached, suffix_search: ok")

import django
from django.conf import settings
settings.configure(PWNED_PASSWORDS={"ADD_PADDING": True})
django.setup()
from django.core.exceptions import ValidationError
from pwned_passwords_django import api
from pwned_passwords_django.validators import PwnedPasswordsValidator
api.PwnedPasswords.api_endpoint = base + "/range/"
assert api.check_password("password") == 9545824
assert api.check_password("not listed anywhere") == 0
validator = PwnedPasswordsValidator()
try:
    validator.validate("123456")
    raise AssertionError("123456 passed the validator")
except ValidationError:
    pass
validator.validate("not listed anywhere")
print("   pwned-passwords-django check_password, PwnedPasswordsValidator: ok")
EOF
for base in "$http_base" "$https_base"; do
    echo "   $base"
    "$work/venv/bin/python" "$work/py-check.py" "$base"
done
echo "== all clients ok"
