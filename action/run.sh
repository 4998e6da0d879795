#!/usr/bin/env bash
# The two steps of the GitHub Action in action.yml (composite, no Node):
#
#   run.sh install   installs the static retry binary of INPUT_VERSION for
#                    the runner (RUNNER_OS Linux, RUNNER_ARCH X64 or ARM64)
#                    from INPUT_DOWNLOAD_BASE/retry-VERSION-TARGET.tar.gz,
#                    checked against the .sha256 beside it, into the tool
#                    cache (RUNNER_TOOL_CACHE, else RUNNER_TEMP), where a
#                    later job on the same runner finds it; adds its
#                    directory to GITHUB_PATH; outputs path and cache-hit.
#   run.sh run       runs INPUT_COMMAND under retry (RETRY_BIN) with the
#                    flags the inputs give and --report; retry itself writes
#                    the report's fields to GITHUB_OUTPUT as the step's
#                    outputs. Exits with retry's exit status.
#
# Inputs arrive in the environment (never pasted into a script, so no input
# can inject shell code into the step). A failure is one ::error:: line
# naming what is wrong, and leaves nothing installed: the archive is
# fetched, checked and unpacked in a temporary directory, and moved into the
# cache only whole. Needs bash, curl, tar, gzip and sha256sum, which the
# runners have.
set -euo pipefail

# fail MESSAGE: one error line (an annotation on GitHub), exit 1.
fail() {
  echo "::error title=retry::$1"
  exit 1
}

output() {
  echo "$1=$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run.sh runs as a step of the Action}"
}

install() {
  local version=${INPUT_VERSION:-} base=${INPUT_DOWNLOAD_BASE:-} target
  version=${version#v}
  [ -n "$version" ] || fail "the input version is missing: give the retry release to install, such as 0.1.0"
  [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]] ||
    fail "the input version '$version' is not a release version, such as 0.1.0"
  [ -n "$base" ] || fail "the input download-base is missing: no public release page exists yet; give the address where retry-$version-TARGET.tar.gz is served"
  [[ $base =~ ^https?:// ]] || fail "the input download-base '$base' is not an http:// or https:// address"
  base=${base%/}
  case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
    Linux/X64) target=x86_64-unknown-linux-musl ;;
    Linux/ARM64) target=aarch64-unknown-linux-musl ;;
    *) fail "retry runs on Linux X64 and ARM64 runners; this one is ${RUNNER_OS:-an unknown OS} ${RUNNER_ARCH:-on an unknown architecture}" ;;
  esac
  local cache=${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:?neither RUNNER_TOOL_CACHE nor RUNNER_TEMP is set}}
  # The tool cache's layout: TOOL/VERSION/ARCH, complete once ARCH.complete exists.
  local dir="$cache/retry/$version/${RUNNER_ARCH,,}"
  if [ -f "$dir.complete" ] && [ -x "$dir/retry" ]; then
    echo "retry $version from the tool cache: $dir"
    output cache-hit true
  else
    local name="retry-$version-$target" temp
    temp=$(mktemp -d "${RUNNER_TEMP:-/tmp}/retry-install.XXXXXX")
    # shellcheck disable=SC2064 # expanded now: the directory of this call
    trap "rm -rf '$temp'" EXIT
    local fetch=(curl --fail --silent --show-error --location --proto '=http,https'
      --connect-timeout 10 --max-time 120 --retry 3)
    "${fetch[@]}" --output "$temp/$name.tar.gz" "$base/$name.tar.gz" 2>"$temp/err" ||
      fail "cannot download $base/$name.tar.gz: $(tail -n 1 "$temp/err")"
    "${fetch[@]}" --output "$temp/$name.tar.gz.sha256" "$base/$name.tar.gz.sha256" 2>"$temp/err" ||
      fail "cannot download $base/$name.tar.gz.sha256: $(tail -n 1 "$temp/err")"
    local want got
    want=$(head -c 200 "$temp/$name.tar.gz.sha256" | awk 'NR == 1 { print $1 }')
    got=$(sha256sum "$temp/$name.tar.gz" | awk '{ print $1 }')
    [[ $want =~ ^[0-9a-f]{64}$ ]] || fail "$base/$name.tar.gz.sha256 holds no SHA-256 checksum"
    [ "$want" = "$got" ] ||
      fail "$name.tar.gz does not match its .sha256 (expected $want, got $got): not installed"
    tar -xzf "$temp/$name.tar.gz" -C "$temp" "$name/retry" 2>"$temp/err" ||
      fail "$name.tar.gz holds no $name/retry: $(tail -n 1 "$temp/err")"
    mkdir -p "$dir.part"
    mv "$temp/$name/retry" "$dir.part/retry"
    chmod 755 "$dir.part/retry"
    rm -rf "$dir"
    mv "$dir.part" "$dir"
    touch "$dir.complete"
    echo "retry $version installed in $dir"
    output cache-hit false
  fi
  echo "$dir" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
  output path "$dir/retry"
}

run() {
  local bin=${RETRY_BIN:?RETRY_BIN is not set: the install step failed}
  local flags=() extra=()
  local pair flag value
  for pair in max:--max max-time:--max-time timeout:--timeout backoff:--backoff \
    base:--base cap:--cap jitter:--jitter retry-on:--retry-on stop-on:--stop-on; do
    value=INPUT_$(tr 'a-z-' 'A-Z_' <<<"${pair%%:*}")
    flag=${pair#*:}
    if [ -n "${!value:-}" ]; then flags+=("$flag" "${!value}"); fi
  done
  # args: shell words, quotes honoured, as bash reads them.
  if [ -n "${INPUT_ARGS:-}" ]; then
    eval "extra=(${INPUT_ARGS})" || fail "the input args is not a list of shell words: ${INPUT_ARGS}"
  fi
  local shell
  case "${INPUT_SHELL:-bash}" in
    bash) shell=(bash --noprofile --norc -eo pipefail -c) ;;
    sh) shell=(sh -e -c) ;;
    *) fail "the input shell '${INPUT_SHELL}' is not bash or sh" ;;
  esac
  [ -n "${INPUT_COMMAND:-}" ] || fail "the input command is missing: give the command to run"
  local report="${RUNNER_TEMP:-/tmp}/retry-report-${GITHUB_RUN_ID:-0}-$$.json"
  output report "$report"
  local status=0
  "$bin" "${flags[@]}" "${extra[@]}" --report "$report" --github-output always \
    -- "${shell[@]}" "$INPUT_COMMAND" || status=$?
  exit "$status"
}

case "${1:-}" in
  install) install ;;
  run) run ;;
  *) fail "usage: run.sh install|run" ;;
esac
