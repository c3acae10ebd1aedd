#!/usr/bin/env bash
# Checks that maintained Pwned Passwords client libraries work unchanged
# against `seekless pwned serve`, pointed at its base URL on 127.0.0.1:
#   - npm `hibp` (pwnedPassword, pwnedPasswordRange; option `baseUrl`),
#     SHA-1 and NTLM, with and without padding;
#   - PyPI `pyhibp` (module constant PWNED_PASSWORDS_API_BASE_URI);
#   - PyPI `pwned-passwords-django` (its API class's `api_endpoint`; pads by
#     default), through its password validator.
# Installs the clients from the registries into a temporary directory.
# Usage: scripts/check-pwned-clients.sh
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node npm python3 curl; do
    command -v "$tool" >/dev/null || { echo "clients: $tool is not installed" >&2; exit 2; }
done
target=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet -p seekless --no-default-features --features serve
seekless=$target/release/seekless

work=$(mktemp -d /tmp/seekless-clients.XXXXXX)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
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
"$seekless" pwned serve -i "$work/sha1.idx" -i "$work/ntlm.idx" --listen 127.0.0.1:0 \
    >"$work/serve.out" 2>"$work/serve.err" &
server=$!
for _ in $(seq 1 100); do
    [ -s "$work/serve.out" ] && break
    sleep 0.05
done
base=$(sed 's/^listening on //' "$work/serve.out")
echo "== server at $base"

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
(cd "$work" && node hibp-check.mjs "$base")

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
"$work/venv/bin/python" "$work/py-check.py" "$base"
echo "== all clients ok"
