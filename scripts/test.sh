#!/usr/bin/env bash
# The one command that runs every check and test of retry, on a fresh Debian
# machine with the Rust toolchain: installs what the tests need, then runs
# formatting, lint, unit and integration tests (some again against the
# plain POSIX platform layer), the cross-builds for FreeBSD and macOS, the
# package tests
# (scripts/test-package.sh: builds the static release binaries, checks,
# installs and removes the Debian packages and checks the release archives),
# the static binaries' own tests (scripts/test-static.sh), the GitHub
# Action's (scripts/test-action.sh) and the container image's
# (scripts/test-image.sh). It ends with
# one line, "tests: P passed, F failed, S skipped", whether the run passed
# or not.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every step runs even when one before it failed, and the summary line
# always comes last: "tests: P passed, F failed, S skipped", from the test
# runners' own counts.
work=$(mktemp -d)
# A skipped test appends one line here (tests/it/need.rs).
export RETRY_TEST_SKIPS="$work/skipped"
: >"$RETRY_TEST_SKIPS"
# The property tests (proptest) draw their cases from a fixed seed here, so
# that a run is repeatable: the same cases every time. Another seed explores
# others: PROPTEST_RNG_SEED=N bash scripts/test.sh.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261128}"
failed_steps=()
script_logs=()
summarised=""

# summary STATUS: the totals, once, whatever the exit STATUS.
summary() {
  [ -n "$summarised" ] && return
  summarised=1
  local skipped totals
  skipped=$(cut -f1 "$RETRY_TEST_SKIPS" | sort -u | grep -c . || true)
  # cargo: every "test result" line (a skipped test reported "ok": it is
  # taken out of the passed); a target that ran but gave no result line
  # (it crashed) is one failure. Ignored tests are skipped ones.
  totals=$(awk -v skipped="$skipped" '
    /^     Running / { targets++ }
    /^test result:/ { results++; p += $4; f += $6; s += $8 }
    END { printf "%d %d %d\n", p - skipped, f + targets - results, s + skipped }
  ' "$work/cargo.log" 2>/dev/null || echo "0 0 0")
  read -r passed failed skipped <<<"$totals"
  # The shell test scripts: each ends with one line
  # "NAME tests: P passed, F failed, S skipped" (", S skipped" optional);
  # one that does not ended early, which is a failure.
  local log last
  for log in "${script_logs[@]}"; do
    last=$(tail -n 1 "$log")
    if [[ $last =~ ^[a-z][a-z0-9-]*\ tests:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
      passed=$((passed + BASH_REMATCH[1]))
      failed=$((failed + BASH_REMATCH[2]))
      skipped=$((skipped + ${BASH_REMATCH[4]:-0}))
    else
      echo "$(basename "$log" .log) ended without its summary line" >&2
      failed=$((failed + 1))
    fi
  done
  if [ -s "$RETRY_TEST_SKIPS" ]; then
    echo "skipped (a precondition is missing here):"
    sort -u "$RETRY_TEST_SKIPS" | sed 's/\t/: /; s/^/  /'
  fi
  if [ ${#failed_steps[@]} -gt 0 ]; then
    echo "failed: ${failed_steps[*]}"
  elif [ "$1" != 0 ]; then
    echo "failed: the set-up (exit status $1)"
  fi
  echo "tests: $passed passed, $failed failed, $skipped skipped"
}
# Set while this script's own policy-rc.d keeps installed services from
# starting: removed however the script ends, an apt failure included.
no_start=""
sudo=""
trap 'status=$?; if [ -n "$no_start" ]; then $sudo rm -f /usr/sbin/policy-rc.d; fi
  summary "$status"; rm -rf "$work"' EXIT

# step NAME COMMAND...: runs it; a failure is remembered, not fatal.
step() {
  local name=$1
  shift
  "$@" || failed_steps+=("$name")
}

# shell_tests SCRIPT: a shell test script, its output kept for the summary.
shell_tests() {
  local script=$1 started log
  log="$work/$(basename "$script" .sh).log"
  script_logs+=("$log")
  started=$(date +%s)
  bash "$script" 2>&1 | tee "$log" || failed_steps+=("$script")
  echo "$script took $(($(date +%s) - started)) s"
}

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
# The tracing tests' receiver and traced command (below) live in a virtual
# environment of their own.
python3 -m venv --help >/dev/null 2>&1 || need+=(python3-venv)
command -v unshare >/dev/null || need+=(util-linux)
# --last-stdout's tests: a real curl download cut off midway, and jq reading
# the one document a pipeline gets.
command -v curl >/dev/null || need+=(curl)
command -v jq >/dev/null || need+=(jq)
# Shared-state tests play a second user (setpriv) and hold a lock (flock).
command -v setpriv >/dev/null || need+=(util-linux)
command -v flock >/dev/null || need+=(util-linux)
# Directories writable through an ACL (setfacl) must count as others' write.
command -v setfacl >/dev/null || need+=(acl)
command -v ip >/dev/null || need+=(iproute2)
# The shared-state tests start their own Redis servers (one with TLS), a
# master with a replica watched by three sentinels, and clusters made with
# redis-cli.
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-sentinel >/dev/null || need+=(redis-sentinel)
command -v redis-cli >/dev/null || need+=(redis-tools)
# The shared-state tests run their single-server and cluster checks against
# Valkey too. Debian has it from trixie on; bookworm has it in backports.
backports=()
command -v valkey-server >/dev/null || backports+=(valkey-server valkey-tools)
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
# The container image (scripts/image.sh builds it with buildah; its tests,
# scripts/test-image.sh, run it with podman on runc, and mount the static
# busybox in to look inside) and the CA bundle it ships.
command -v buildah >/dev/null || bare+=(buildah)
# pip, for check-jsonschema below.
python3 -c 'import pip' 2>/dev/null || need+=(python3-pip)
command -v podman >/dev/null || bare+=(podman)
command -v runc >/dev/null || bare+=(runc)
[ -f /etc/ssl/certs/ca-certificates.crt ] || bare+=(ca-certificates)
command -v prometheus-node-exporter >/dev/null || bare+=(prometheus-node-exporter)
command -v prometheus-pushgateway >/dev/null || bare+=(prometheus-pushgateway)
command -v promtool >/dev/null || bare+=(prometheus)
# Installs packages from the archive if it has them, else from the
# release's backports, through an apt configuration of this script's own:
# the system's sources are left as they are.
from_backports() {
  if [ -n "$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v none)" ]; then
    $sudo apt-get install -y -qq "$@"
    return
  fi
  local codename dir
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  dir=$(mktemp -d)
  chmod 755 "$dir" # apt fetches as its own user
  mkdir -p "$dir/parts" "$dir/lists/partial" "$dir/cache/archives/partial"
  cp /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list "$dir/parts/" 2>/dev/null || true
  if [ -f /etc/apt/sources.list ]; then cp /etc/apt/sources.list "$dir/parts/system.list"; fi
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$codename" >"$dir/parts/backports.sources"
  local o=(-o Dir::Etc::sourcelist=- -o "Dir::Etc::sourceparts=$dir/parts"
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache")
  $sudo apt-get "${o[@]}" update -qq
  $sudo apt-get "${o[@]}" install -y -qq -t "$codename-backports" "$@"
  $sudo rm -rf "$dir"
}

if [ $((${#need[@]} + ${#bare[@]} + ${#backports[@]})) -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  # The tests start their own servers on 127.0.0.1: installing a server
  # package must not start its service (Debian's policy-rc.d convention).
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    no_start=1
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod 755 /usr/sbin/policy-rc.d
  fi
  $sudo apt-get update -qq
  if [ ${#need[@]} -gt 0 ]; then $sudo apt-get install -y -qq "${need[@]}"; fi
  if [ ${#bare[@]} -gt 0 ]; then
    $sudo apt-get install -y -qq --no-install-recommends "${bare[@]}"
  fi
  if [ ${#backports[@]} -gt 0 ]; then from_backports "${backports[@]}"; fi
  if [ -n "$no_start" ]; then
    $sudo rm -f /usr/sbin/policy-rc.d
    no_start=""
  fi
fi

# The GitHub Action's tests (scripts/test-action.sh) validate action.yml
# with check-jsonschema, which carries the Action metadata schema (PyPI).
if ! command -v check-jsonschema >/dev/null; then
  python3 -m pip install -q check-jsonschema 2>/dev/null ||
    python3 -m pip install -q --break-system-packages check-jsonschema
fi

# The tracing tests (tests/it/trace/): an OTLP/HTTP receiver that decodes
# with the official opentelemetry-proto package, and a command that exports
# its own span with the OpenTelemetry Python SDK and its OTLP exporter, all
# from PyPI into a virtual environment kept beside the build.
otel_python="$(pwd)/${CARGO_TARGET_DIR:-target}/otel-python"
case ${CARGO_TARGET_DIR:-} in /*) otel_python="$CARGO_TARGET_DIR/otel-python" ;; esac
if ! "$otel_python/bin/python" -c 'import opentelemetry.proto, opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http' 2>/dev/null; then
  python3 -m venv "$otel_python"
  "$otel_python/bin/pip" install --quiet opentelemetry-proto opentelemetry-sdk opentelemetry-exporter-otlp-proto-http
fi
export RETRY_TEST_OTEL_PYTHON="$otel_python/bin/python"

# The cross-builds for macOS and FreeBSD (below): zig as the C compiler
# (ring's C) and linker, through cargo-zigbuild, both from PyPI at versions
# known to work, in a virtual environment kept beside the build; and the
# three Rust standard libraries (rustup, as scripts/package.sh does).
zig_python="$(pwd)/${CARGO_TARGET_DIR:-target}/zig-python"
case ${CARGO_TARGET_DIR:-} in /*) zig_python="$CARGO_TARGET_DIR/zig-python" ;; esac
cross_targets=(x86_64-unknown-freebsd aarch64-apple-darwin x86_64-apple-darwin)
if [ "$("$zig_python/bin/cargo-zigbuild" --version 2>/dev/null)" != "cargo-zigbuild 0.24.0" ] ||
  [ "$("$zig_python/bin/python-zig" version 2>/dev/null)" != "0.17.0" ]; then
  python3 -m venv "$zig_python"
  "$zig_python/bin/pip" install --quiet ziglang==0.17.0 cargo-zigbuild==0.24.0
fi
installed_targets=$(rustup target list --installed)
for t in "${cross_targets[@]}"; do
  grep -qx "$t" <<<"$installed_targets" || rustup target add "$t"
done


# The gRPC tests' servers (tests/it/grpc/server.py): Python's grpcio and
# the official health service, grpcio-health-checking, from PyPI.
if ! python3 -c 'import grpc, grpc_health.v1.health' 2>/dev/null; then
  python3 -m pip install -q grpcio grpcio-health-checking ||
    python3 -m pip install -q --break-system-packages grpcio grpcio-health-checking
fi

# Strict (CI set and not empty, or RETRY_TEST_STRICT=1; RETRY_TEST_STRICT=0
# turns it off): a test that lacks a precondition it cannot install (root,
# namespaces, an IPv6 loopback) fails. Otherwise it is skipped, and counted.
if [ "${RETRY_TEST_STRICT:-}" = 1 ] || { [ "${RETRY_TEST_STRICT:-}" != 0 ] && [ -n "${CI:-}" ]; }; then
  echo "strict run: a test whose precondition is missing fails"
fi

step fmt cargo fmt --all -- --check
step clippy cargo clippy --all-targets --locked -- -D warnings
# The plain POSIX platform layer (src/sys/portable.rs) is what other
# Unixes would build: it must keep compiling, lint-clean, on Linux too.
step clippy-portable cargo clippy --all-targets --locked --features portable -- -D warnings

# Every test target (unit, integration, the examples'), all of them even
# when one fails. No doc-test step: the library exists for the binary and
# its tests, and its documentation holds no code examples to run (the
# README's and the guide's examples are run by tests/it/examples.rs and
# tests/it/docs.rs).
cargo test --all-targets --locked --no-fail-fast 2>&1 | tee "$work/cargo.log" ||
  failed_steps+=("cargo-test")

# timed NAME COMMAND...: a step that says how long it took.
timed() {
  local started
  started=$(date +%s)
  step "$@"
  echo "$1 took $(($(date +%s) - started)) s"
}

# The plain POSIX platform layer, run: every unit test, and the
# integration tests of commands, supervision, signals, the terminal and the
# local store, against the Linux build with the portable feature
# (docs/platforms.md says where it differs; the tests assert that).
portable_tests() {
  local lib it
  cargo test --locked --features portable --lib 2>&1 | tee -a "$work/cargo.log"
  lib=${PIPESTATUS[0]}
  cargo test --locked --features portable --test it --no-fail-fast -- \
    core:: process:: supervise:: leftovers:: descriptors:: terminal:: replay:: \
    hooks:: idle:: state::failing:: state::rules:: state::hostile:: state::show:: 2>&1 |
    tee -a "$work/cargo.log"
  it=${PIPESTATUS[0]}
  [ "$lib" = 0 ] && [ "$it" = 0 ]
}
timed portable-tests portable_tests

# cross_build TARGET: builds retry for TARGET with zig (cargo's dev
# profile: every crate compiled, ring's C included). FreeBSD links (zig
# carries its C library). macOS cannot link here: rustls-platform-verifier
# needs Apple's Security and CoreFoundation frameworks, which come only
# with the macOS SDK. There the one error allowed is that link's, for want
# of those frameworks, after everything else has compiled.
cross_build() {
  local log="$work/cross-$1.log"
  PATH="$zig_python/bin:$PATH" cargo zigbuild --locked --target "$1" >"$log" 2>&1 && return
  case $1 in *-apple-darwin) ;; *) cat "$log"; return 1 ;; esac
  if grep -q 'unable to find system framework' "$log" &&
    ! grep -E '^ *(= note: )?error' "$log" |
    grep -vE '^error: linking with `[^`]*zigcc[^`]*` failed|^error: could not compile `retry-tool` \(bin "retry"\)|unable to find system framework "(Security|CoreFoundation)"'; then
    echo "$1: every crate compiled; the link needs the macOS SDK's frameworks"
    return
  fi
  cat "$log"
  return 1
}
for t in "${cross_targets[@]}"; do timed "cross-$t" cross_build "$t"; done

shell_tests scripts/test-package.sh
shell_tests scripts/test-static.sh
# On the dist/ the package tests built: the Action installs its archives,
# the image is made of its static binaries.
shell_tests scripts/test-action.sh
shell_tests scripts/test-image.sh

summary 0
[ ${#failed_steps[@]} -eq 0 ]
