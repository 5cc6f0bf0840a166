#!/usr/bin/env bash
# Put `cake` on PATH: `cargo install --path crates/cake-cli --locked` into cargo's bin directory
# (~/.cargo/bin), and install the pinned compile-only CUDA toolchain into .toolchain/, where an
# installed `cake` finds it (run inside this checkout, or anywhere while the checkout stays put).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/toolchain.sh >/dev/null
# The checkout's target directory, so a release build from scripts/demo.sh is reused.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" \
  cargo install --quiet --locked --force --path crates/cake-cli
bin="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
echo "installed $bin/cake"
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "note: $bin is not on PATH; add it (rustup's env file does: . \"${CARGO_HOME:-\$HOME/.cargo}/env\")" >&2 ;;
esac
