#!/usr/bin/env bash
# The one command that runs every check and test of retry, on a fresh Debian
# machine with the Rust toolchain: installs what the tests need, then runs
# formatting, lint, unit, integration and doc tests, the package tests
# (scripts/test-package.sh: builds the static release binaries, checks,
# installs and removes the Debian package and checks the release archives)
# and the static binaries' own tests (scripts/test-static.sh).
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
# The package tests: cargo-deb's $auto depends (dpkg-shlibdeps), lintian,
# the man page, and the three shells whose completions the package installs.
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
command -v lintian >/dev/null || need+=(lintian)
command -v man >/dev/null || need+=(man-db)
[ -f /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
command -v zsh >/dev/null || need+=(zsh)
command -v fish >/dev/null || need+=(fish)
command -v file >/dev/null || need+=(file)
command -v xz >/dev/null || need+=(xz-utils)
# The monitoring tests serve the metrics file with node_exporter, push to a
# Pushgateway, and check the format with promtool, which comes with the
# prometheus package (19 MB; the three install in about 15 s from a near mirror).
# Their recommendations (hardware collectors, timers) are not needed.
bare=()
# The static release builds (scripts/package.sh): a C compiler for each
# target (ring), musl-gcc and the aarch64 cross compiler, which also links.
# Their tests (scripts/test-static.sh): busybox for a root without a C
# library, a DNS server, ss, and qemu-user for the aarch64 binary.
command -v musl-gcc >/dev/null || bare+=(musl-tools)
command -v aarch64-linux-gnu-gcc >/dev/null || bare+=(gcc-aarch64-linux-gnu)
[ -f /usr/aarch64-linux-gnu/include/string.h ] || bare+=(libc6-dev-arm64-cross)
file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' || bare+=(busybox-static)
command -v dnsmasq >/dev/null || bare+=(dnsmasq-base)
command -v ss >/dev/null || need+=(iproute2)
command -v qemu-aarch64 >/dev/null || bare+=(qemu-user)
command -v prometheus-node-exporter >/dev/null || bare+=(prometheus-node-exporter)
command -v prometheus-pushgateway >/dev/null || bare+=(prometheus-pushgateway)
command -v promtool >/dev/null || bare+=(prometheus)
if [ $((${#need[@]} + ${#bare[@]})) -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  # The tests start their own servers on 127.0.0.1: installing a server
  # package must not start its service (Debian's policy-rc.d convention).
  no_start=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod 755 /usr/sbin/policy-rc.d
    no_start=1
  fi
  $sudo apt-get update -qq
  if [ ${#need[@]} -gt 0 ]; then $sudo apt-get install -y -qq "${need[@]}"; fi
  if [ ${#bare[@]} -gt 0 ]; then
    $sudo apt-get install -y -qq --no-install-recommends "${bare[@]}"
  fi
  if [ -n "$no_start" ]; then $sudo rm -f /usr/sbin/policy-rc.d; fi
fi

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings

# Run every test target, then total the per-target summaries into one line.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
{ cargo test --all-targets --locked && cargo test --doc --locked; } 2>&1 | tee "$log"
started=$(date +%s)
bash scripts/test-package.sh 2>&1 | tee -a "$log"
echo "package tests took $(($(date +%s) - started)) s"
started=$(date +%s)
bash scripts/test-static.sh 2>&1 | tee -a "$log"
echo "static tests took $(($(date +%s) - started)) s"
awk '/^test result:/ { p += $4; f += $6 }
     /^package tests:/ { p += $3; f += $5 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
