#!/usr/bin/env bash
# The GitHub Action's tests, run by scripts/test.sh after the package tests
# (on the dist/ that scripts/package.sh built; it builds it when missing):
# - action.yml is valid against the GitHub Action metadata schema
#   (check-jsonschema's built-in vendor.github-actions);
# - action/run.sh, the Action's two steps, run as a runner would run them,
#   with a stand-in runner environment (RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP,
#   RUNNER_TOOL_CACHE, GITHUB_PATH, GITHUB_OUTPUT) against the release
#   archives served from dist/ by Python's http.server on 127.0.0.1: a cold
#   install, a warm one from the tool cache, the ARM64 binary, a command
#   retried to its exit status and one that recovers, with the outputs
#   taken from the report; and a checksum mismatch, an unknown
#   architecture, another OS, a missing version, a version not on the
#   server and a missing download base, each one clear error line with
#   nothing installed.
# Prints the install time from a cold and a warm cache.
# Ends with "action tests: P passed, F failed, S skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
suite=action
# shellcheck source=scripts/counts.sh
. scripts/counts.sh

version=$(cargo pkgid --quiet | sed 's/.*[@#]//')
x86_name="retry-$version-x86_64-unknown-linux-musl"
arm_name="retry-$version-aarch64-unknown-linux-musl"
if [ ! -f "dist/$x86_name.tar.gz" ] || [ ! -f "dist/$arm_name.tar.gz" ]; then
  bash scripts/package.sh >/dev/null || {
    bad "scripts/package.sh builds dist/"
    finish
    exit 1
  }
fi

work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

# ---- the metadata ------------------------------------------------------------

if command -v check-jsonschema >/dev/null; then
  check "action.yml is valid GitHub Action metadata (check-jsonschema)" \
    check-jsonschema --builtin-schema vendor.github-actions action.yml
else
  bad "check-jsonschema is missing (pip install check-jsonschema; scripts/test.sh installs it)"
fi
# Every input the steps read is declared, and every declared one is read.
declared=$(sed -n '/^inputs:/,/^outputs:/p' action.yml | sed -n 's/^  \([a-z-]*\):$/\1/p' | sort)
used=$(grep -o 'inputs\.[a-z-]*' action.yml | sed 's/inputs\.//' | sort -u)
same_inputs() { [ "$declared" = "$used" ]; }
check "the steps pass on every input action.yml declares, and only those" same_inputs

# ---- the served archives -------------------------------------------------------

# good/: the release as package.sh wrote it; bad/: an archive whose
# checksum is another's.
mkdir -p "$work/www/good" "$work/www/bad"
for f in "$x86_name.tar.gz" "$x86_name.tar.gz.sha256" "$arm_name.tar.gz" "$arm_name.tar.gz.sha256"; do
  ln -s "$PWD/dist/$f" "$work/www/good/$f"
done
cp "dist/$x86_name.tar.gz" "$work/www/bad/"
sed "s/^[0-9a-f]*/$(sha256sum "dist/$arm_name.tar.gz" | cut -d' ' -f1)/" \
  "dist/$x86_name.tar.gz.sha256" >"$work/www/bad/$x86_name.tar.gz.sha256"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work/www" "$port" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$port/good/$x86_name.tar.gz.sha256" >/dev/null && break
  sleep 0.1
done
base="http://127.0.0.1:$port/good"

# ---- the stand-in runner ---------------------------------------------------------

# runner NAME: a fresh runner's directories under $work/NAME; sets $r.
runner() {
  r="$work/$1"
  mkdir -p "$r/temp" "$r/cache"
  : >"$r/path"
  : >"$r/output"
}

# step STEP VAR=VALUE...: action/run.sh STEP with the runner's environment
# of $r and the given variables; its stdout and stderr in $r/said.
step() {
  local what=$1
  shift
  env -i PATH="$PATH" HOME="$r" RUNNER_OS=Linux RUNNER_ARCH=X64 \
    RUNNER_TEMP="$r/temp" RUNNER_TOOL_CACHE="$r/cache" GITHUB_ACTIONS=true \
    GITHUB_PATH="$r/path" GITHUB_OUTPUT="$r/output" GITHUB_RUN_ID=7 \
    INPUT_VERSION="$version" INPUT_DOWNLOAD_BASE="$base" INPUT_SHELL=bash "$@" \
    bash action/run.sh "$what" >"$r/said" 2>&1
}

# out KEY: the last value of KEY in the runner's GITHUB_OUTPUT.
out() { sed -n "s/^$1=//p" "$r/output" | tail -n 1; }

# same WHAT A B: A and B are equal and not empty.
same() {
  if [ -n "$2" ] && [ "$2" = "$3" ]; then ok "$1"; else bad "$1: '$2' against '$3'"; fi
}

# nothing_installed WHAT: the step failed with one ::error:: line that
# says WHAT (a grep -E pattern), and left nothing behind.
nothing_installed() {
  local status=$1 what=$2 name=$3
  local errors
  errors=$(grep -c '^::error' "$r/said")
  if [ "$status" = 1 ] && [ "$errors" = 1 ] && grep -qE "^::error title=retry::.*($what)" "$r/said" &&
    [ -z "$(ls -A "$r/cache")" ] && [ -z "$(ls -A "$r/temp")" ] && [ ! -s "$r/path" ]; then
    ok "$name: one clear error, nothing installed ($(grep '^::error' "$r/said" | cut -c1-110))"
  else
    bad "$name: status $status, said: $(cat "$r/said"); cache: $(ls -R "$r/cache" "$r/temp"); path: $(cat "$r/path")"
  fi
}

# millis: now, in milliseconds.
millis() { date +%s%3N; }

# ---- installing ---------------------------------------------------------------

runner cold
t0=$(millis)
step install
status=$?
cold_ms=$(($(millis) - t0))
same "a cold install succeeds" "$status" 0
same "a cold install is no cache hit" "$(out cache-hit)" false
dir="$r/cache/retry/$version/x64"
same "the tool cache's directory goes on GITHUB_PATH" "$(cat "$r/path")" "$dir"
same "the path output names the binary in it" "$(out path)" "$dir/retry"
check "the installed binary is dist/'s x86_64 one" cmp "$dir/retry" dist/x86_64-unknown-linux-musl/retry
same "it runs, this version" "$("$dir/retry" --version)" "retry $version"
check "the cache marks it complete" test -f "$dir.complete"
check "nothing is left in RUNNER_TEMP" test -z "$(ls -A "$r/temp")"

: >"$r/output"
: >"$r/path"
t0=$(millis)
step install
status=$?
warm_ms=$(($(millis) - t0))
same "a warm install succeeds" "$status" 0
same "a warm install is a cache hit" "$(out cache-hit)" true
same "a warm install puts the same directory on GITHUB_PATH" "$(cat "$r/path")" "$dir"
echo "action: install from a cold cache $cold_ms ms, from a warm one $warm_ms ms (local server)"

runner arm
step install RUNNER_ARCH=ARM64
same "an ARM64 runner gets an install" "$?" 0
check "an ARM64 runner gets dist/'s aarch64 binary" \
  cmp "$r/cache/retry/$version/arm64/retry" dist/aarch64-unknown-linux-musl/retry

# ---- running ------------------------------------------------------------------------

r="$work/cold"
: >"$r/output"
step run RETRY_BIN="$dir/retry" INPUT_COMMAND='echo attempt $RETRY_ATTEMPT; exit 3' \
  INPUT_MAX=2 INPUT_BASE=10ms INPUT_JITTER=none INPUT_ARGS="--seed 5 -v"
same "a command that keeps failing: the step exits with its status" "$?" 3
same "its outputs: gave-up at max after 2 attempts, exit_code 3" \
  "$(out outcome) $(out limit) $(out attempts) $(out exit_code)" "gave-up max 2 3"
check "the command's output is the step's" grep -qx 'attempt 2' "$r/said"
same "args are passed on (--seed 5)" "$(out seed)" 5
report=$(out report)
check "the report output names the JSON report" test -s "$report"
same "the outputs are the report's" "$(jq -r '"\(.outcome) \(.attempts) \(.exit_code)"' "$report")" \
  "gave-up 2 3"

: >"$r/output"
step run RETRY_BIN="$dir/retry" INPUT_MAX_TIME=20s INPUT_BASE=10ms \
  INPUT_COMMAND="f=$r/n; n=\$(cat \$f 2>/dev/null || echo 0); echo \$((n+1)) >\$f; [ \$n -ge 1 ]"
same "a command that recovers: the step succeeds" "$?" 0
same "its outputs: success after 2 attempts" "$(out outcome) $(out attempts) $(out exit_code)" "success 2 0"
check "elapsed_ms is a number, waited_ms no more than it" \
  test "$(out elapsed_ms)" -ge "$(out waited_ms)"

: >"$r/output"
step run RETRY_BIN="$dir/retry" INPUT_SHELL=sh INPUT_COMMAND='exit 126'
same "sh runs the command; a permanent failure is not retried" \
  "$(out outcome) $(out attempts) $(out exit_code)" "permanent 1 126"

: >"$r/output"
step run RETRY_BIN="$dir/retry" INPUT_COMMAND=true INPUT_MAX=zero
status=$?
same "a bad input is retry's usage error, exit 2" "$status" 2
check "it names the flag" grep -q -- '--max' "$r/said"

# ---- errors, each with nothing installed ---------------------------------------------

runner mismatch
step install INPUT_DOWNLOAD_BASE="http://127.0.0.1:$port/bad"
nothing_installed $? "does not match its .sha256" "a checksum mismatch"
runner arch
step install RUNNER_ARCH=ARM
nothing_installed $? "Linux X64 and ARM64 runners; this one is Linux ARM" "an unknown architecture"
runner os
step install RUNNER_OS=macOS RUNNER_ARCH=ARM64
nothing_installed $? "this one is macOS ARM64" "another OS"
runner noversion
step install INPUT_VERSION=
nothing_installed $? "input version is missing" "a missing version"
runner badversion
step install INPUT_VERSION=latest
nothing_installed $? "not a release version" "a version that is not one"
runner absent
step install INPUT_VERSION=9.9.9
nothing_installed $? "cannot download .*retry-9\.9\.9-x86_64-unknown-linux-musl\.tar\.gz.*404" "a version not on the server"
runner nobase
step install INPUT_DOWNLOAD_BASE=
nothing_installed $? "no public release page exists yet" "a missing download base"

finish
