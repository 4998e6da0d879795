#!/usr/bin/env bash
# The one command that runs every check and test of retry, on a fresh Debian
# machine with the Rust toolchain: installs what the tests need, then runs
# formatting, lint, unit, integration and doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v sh >/dev/null || need+=(dash)
command -v sleep >/dev/null || need+=(coreutils)
# The man page is rendered with groff -ww; supervision tests use bash's job
# control on a pty, prlimit and unshare (PID namespaces), and a perl child.
command -v groff >/dev/null || need+=(groff-base)
command -v bash >/dev/null || need+=(bash)
command -v prlimit >/dev/null || need+=(util-linux)
command -v perl >/dev/null || need+=(perl-base)
# HTTP mode's tests: certificates, peak memory, a DNS server that never
# answers (in a private network namespace).
command -v openssl >/dev/null || need+=(openssl)
[ -x /usr/bin/time ] || need+=(time)
command -v python3 >/dev/null || need+=(python3)
command -v unshare >/dev/null || need+=(util-linux)
# Shared-state tests play a second user (setpriv) and hold a lock (flock).
command -v setpriv >/dev/null || need+=(util-linux)
command -v flock >/dev/null || need+=(util-linux)
command -v ip >/dev/null || need+=(iproute2)
# The shared-state tests start their own Redis servers (one with TLS).
command -v redis-server >/dev/null || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}"
fi

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings

# Run every test target, then total the per-target summaries into one line.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
{ cargo test --all-targets --locked && cargo test --doc --locked; } 2>&1 | tee "$log"
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
