#!/usr/bin/env bash
# The one command that runs every check and test of retry, on a fresh Debian
# machine with the Rust toolchain: installs what the tests need, then runs
# formatting, lint, unit, integration and doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v sh >/dev/null || need+=(dash)
command -v sleep >/dev/null || need+=(coreutils)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}"
fi

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --all-targets --locked
cargo test --doc --locked
