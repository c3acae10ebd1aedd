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
# Then, as root, the stand-in for clients that hardcode the host (`serve
# --tls-ca-dir DIR --tls-name api.pwnedpasswords.com` on 127.0.0.1:443, an
# /etc/hosts entry added for the run and removed after it): pyhibp and npm
# hibp at their default base URL, unchanged, trusting DIR/ca.pem their usual
# way (REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS), and an NTLM range request
# shaped as Lithnet's Sync-HashesFromHibp sends it (If-None-Match, and an
# ETag wanted back). Not root: that part says it is skipped.
# Installs the clients, pinned with everything they pull in, from the
# registries into a temporary directory; an install that fails shows its
# output.
# Usage: scripts/check-pwned-clients.sh [--seekless PATH]
#   --seekless PATH  the binary to check (e.g. the release step's static
#                    one); without it, `cargo build --release` makes it.
set -euo pipefail
cd "$(dirname "$0")/.."

seekless=
while [ $# -gt 0 ]; do
    case $1 in
        --seekless) seekless=${2:?--seekless needs a path}; shift 2 ;;
        *) echo "clients: unknown argument $1 (usage: $0 [--seekless PATH])" >&2; exit 2 ;;
    esac
done

for tool in node npm python3 curl openssl; do
    command -v "$tool" >/dev/null || { echo "clients: $tool is not installed" >&2; exit 2; }
done
# The full binary (the default features), the one the user's own `cargo
# build --release` makes, where it puts it: a build with fewer features
# there would replace it with one that lacks commands. Its path is cargo's
# own answer (CARGO_TARGET_DIR, build.target-dir, build.target included).
if [ -z "$seekless" ]; then
    seekless=$(cargo build --release --quiet --locked -p seekless --bin seekless \
        --message-format json-render-diagnostics \
        | sed -n 's|.*"executable":"\([^"]*/seekless\)".*|\1|p' | tail -n1)
    [ -x "$seekless" ] || { echo "clients: cargo build gave no seekless binary" >&2; exit 1; }
fi
[ -x "$seekless" ] || { echo "clients: $seekless is not an executable" >&2; exit 2; }

# The clients, pinned (hibp 15.2.1, pyhibp 4.2.0: the versions the stand-in
# was tried with; pwned-passwords-django 5.2.0), with what they pull in:
# hibp depends on nothing; the Python packages' dependencies are pinned
# here too, so a new release of one changes nothing until this list does.
HIBP_NPM=hibp@15.2.1
PYPI_CLIENTS=(
    pyhibp==4.2.0 pwned-passwords-django==5.2.0
    Django==5.2.19 asgiref==3.13.0 sqlparse==0.6.1
    requests==2.34.2 urllib3==2.8.0 idna==3.20 certifi==2026.10.19.post1 charset-normalizer==3.5.3
    httpx==0.28.1 httpcore==1.0.9 h11==0.16.0 anyio==4.16.0 typing_extensions==4.16.0
)
# The host the stand-in answers for, and the /etc/hosts line that sends it
# here for this run only (this script's own: found and removed by its text).
STAND_IN_HOST=api.pwnedpasswords.com
hosts_line="127.0.0.1 $STAND_IN_HOST # seekless check-pwned-clients $$"

work=$(mktemp -d /tmp/seekless-clients.XXXXXX)
server=
stand_in=
hosts_added=0
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    if [ -n "$stand_in" ]; then kill "$stand_in" 2>/dev/null || true; fi
    if [ "$hosts_added" = 1 ]; then
        # Rewritten in place (the file may be a mount: no rename over it).
        grep -v -F -x -e "$hosts_line" /etc/hosts >"$work/hosts" || true
        cat "$work/hosts" >/etc/hosts
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# logged NAME COMMAND...: runs COMMAND with its output in a file, shown
# only when it fails.
logged() {
    local name=$1 status=0
    shift
    "$@" >"$work/$name.log" 2>&1 || status=$?
    if [ "$status" != 0 ]; then
        echo "clients: $name failed (status $status):" >&2
        sed 's/^/   | /' "$work/$name.log" >&2
        return "$status"
    fi
}

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
(cd "$work" && logged "npm-init" npm init -y && logged "npm-install" npm install --save-exact "$HIBP_NPM")
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
logged "pip-install" "$work/venv/bin/pip" install --no-deps "${PYPI_CLIENTS[@]}"
logged "pip-check" "$work/venv/bin/pip" check
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
stand_in_check() {
    echo "== the stand-in: $STAND_IN_HOST on 127.0.0.1:443, clients unchanged"
    if [ "$(id -u)" != 0 ]; then
        echo "   skipped: not root (it needs port 443 and an /etc/hosts entry)"
        return 0
    fi
    "$seekless" pwned serve -i "$work/sha1.idx" -i "$work/ntlm.idx" \
        --tls-listen 127.0.0.1:443 --tls-ca-dir "$work/stand-in" --tls-name "$STAND_IN_HOST" \
        >"$work/stand-in.out" 2>"$work/stand-in.err" &
    stand_in=$!
    for _ in $(seq 1 100); do
        grep -q '^listening on https://' "$work/stand-in.out" && break
        kill -0 "$stand_in" 2>/dev/null || break
        sleep 0.05
    done
    if ! grep -q '^listening on https://127.0.0.1:443$' "$work/stand-in.out"; then
        cat "$work/stand-in.err" >&2
        echo "clients: the stand-in did not start on 127.0.0.1:443" >&2
        return 1
    fi
    local ca
    ca=$(sed -n 's/^CA certificate to distribute: //p' "$work/stand-in.out")
    [ "$ca" = "$work/stand-in/ca.pem" ] || { echo "clients: announced CA: $ca" >&2; return 1; }
    echo "   serve made its CA: $ca"
    printf '%s\n' "$hosts_line" >>/etc/hosts
    hosts_added=1
    # Every resolver the clients use must send the name here before any
    # client runs: nothing may reach the real API.
    local seen
    seen=$(getent ahosts "$STAND_IN_HOST" | awk '{print $1}' | sort -u | tr '\n' ' ')
    [ "$seen" = "127.0.0.1 " ] || { echo "clients: $STAND_IN_HOST resolves to $seen" >&2; return 1; }
    seen=$(node -e "require('dns').lookup('$STAND_IN_HOST', {all: true}, (e, a) => \
        console.log(e ? e.code : [...new Set(a.map(x => x.address))].join(' ')))")
    [ "$seen" = "127.0.0.1" ] || { echo "clients: node resolves $STAND_IN_HOST to $seen" >&2; return 1; }
    seen=$("$work/venv/bin/python" -c "import socket; \
print(' '.join(sorted({a[4][0] for a in socket.getaddrinfo('$STAND_IN_HOST', 443)})))")
    [ "$seen" = "127.0.0.1" ] || { echo "clients: python resolves $STAND_IN_HOST to $seen" >&2; return 1; }
    echo "   /etc/hosts: $STAND_IN_HOST is 127.0.0.1 for libc, node and python"
    # No proxy may take the requests elsewhere; each client trusts the CA
    # its usual way, and nothing else of this run's.
    local clean=(env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u all_proxy
        -u ALL_PROXY -u SSL_CERT_FILE -u SSL_CERT_DIR -u NODE_EXTRA_CA_CERTS -u REQUESTS_CA_BUNDLE)

    cat >"$work/hibp-default.mjs" <<'JS'
import assert from 'node:assert/strict';
import { pwnedPassword, pwnedPasswordRange } from 'hibp';
// No baseUrl: the library's own default, https://api.pwnedpasswords.com.
assert.equal(await pwnedPassword('password'), 9545824);
assert.equal(await pwnedPassword('123456', { addPadding: true }), 37359195);
assert.equal(await pwnedPassword('correct horse battery staple'), 0);
const ntlm = await pwnedPasswordRange('8846F', { mode: 'ntlm' });
assert.deepEqual(ntlm, { '7EAEE8FB117AD06BDD830B7586C': 9545824 });
console.log('   npm hibp at its default host (NODE_EXTRA_CA_CERTS): ok');
JS
    (cd "$work" && "${clean[@]}" NODE_EXTRA_CA_CERTS="$ca" node hibp-default.mjs)
    if (cd "$work" && "${clean[@]}" node hibp-default.mjs >/dev/null 2>&1); then
        echo "clients: hibp accepted the stand-in without its CA trusted" >&2
        return 1
    fi
    echo "   without the CA trusted, hibp refuses the stand-in: ok"

    cat >"$work/pyhibp-default.py" <<'PY'
import pyhibp
from pyhibp import pwnedpasswords
# Unchanged: the module's own base URI.
assert pwnedpasswords.PWNED_PASSWORDS_API_BASE_URI == "https://api.pwnedpasswords.com/", \
    pwnedpasswords.PWNED_PASSWORDS_API_BASE_URI
pyhibp.set_user_agent(ua="seekless client check")
assert pwnedpasswords.is_password_breached(password="password") == 9545824
assert pwnedpasswords.is_password_breached(password="P@ssw0rd") == 52579
assert pwnedpasswords.is_password_breached(password="not listed anywhere") == 0
print("   pyhibp at its default host (REQUESTS_CA_BUNDLE): ok")
PY
    "${clean[@]}" REQUESTS_CA_BUNDLE="$ca" "$work/venv/bin/python" "$work/pyhibp-default.py"

    # Lithnet's Sync-HashesFromHibp (.NET HttpClient): NTLM ranges with the
    # ETag it stored in If-None-Match, gzip accepted; it fails on an answer
    # without an ETag. A stale ETag gets the range and its ETag, the ETag
    # got gets a 304 with it.
    cat >"$work/lithnet-shaped.py" <<'PY'
import gzip, http.client, ssl, sys
host, ca = sys.argv[1], sys.argv[2]
def get(etag):
    context = ssl.create_default_context(cafile=ca)
    connection = http.client.HTTPSConnection(host, 443, context=context)
    connection.request("GET", "/range/8846F?mode=ntlm", headers={
        "User-Agent": "Lithnet.ActiveDirectory.PasswordProtection",
        "Accept-Encoding": "gzip, deflate",
        "If-None-Match": etag,
    })
    response = connection.getresponse()
    body = response.read()
    if response.getheader("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    return response.status, response.getheader("ETag"), body.decode()
status, etag, body = get('"0x8DC0000000000000"')
assert status == 200 and etag, (status, etag)
assert "7EAEE8FB117AD06BDD830B7586C:9545824" in body.splitlines(), body
status, again, body = get(etag)
assert status == 304 and again == etag and body == "", (status, again, body)
print("   an NTLM range as Lithnet asks for it: 200 with an ETag, then 304: ok")
PY
    "${clean[@]}" "$work/venv/bin/python" "$work/lithnet-shaped.py" "$STAND_IN_HOST" "$ca"
}
stand_in_check
echo "== all clients ok"
