#!/usr/bin/env bash
# The package tests, run by scripts/test.sh: builds dist/ with
# scripts/package.sh, checks the Debian package with lintian and its control
# fields, checks the release archive, then installs the package for real with
# dpkg (as root), checks what it installed, and removes it again. Debian's own
# `retry` package, if installed, is set aside first and put back at the end.
# Ends with a line "package tests: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAILED: $1" >&2; }
# check DESCRIPTION COMMAND...: the command's success is the test's.
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
  echo "package tests: $passed passed, $failed failed"
  [ "$failed" = 0 ]
}

started=$(date +%s)
if ! bash scripts/package.sh; then
  bad "scripts/package.sh builds dist/"
  finish
  exit 1
fi
echo "package: built in $(($(date +%s) - started)) s"

version=$(cargo pkgid --quiet | sed 's/.*[@#]//')
target=$(rustc -vV | sed -n 's/^host: //p')
arch=$(dpkg --print-architecture)
deb="dist/retry-tool_${version}-1_${arch}.deb"
archive="dist/retry-${version}-${target}.tar.gz"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- the package, as a file --------------------------------------------------

check "the package is $deb" test -f "$deb"
field() { dpkg-deb --field "$deb" "$1"; }
check "it is named retry-tool, not retry" test "$(field Package)" = retry-tool
check "it declares the clash with Debian's retry as Conflicts: retry" \
  test "$(field Conflicts)" = retry
check "it neither replaces nor provides Debian's retry" \
  test -z "$(field Replaces)$(field Provides)"
check "its dependencies were computed: libc6 with a version" \
  grep -Eq '(^|, )libc6 \(>= [0-9.]+\)' <<<"$(field Depends)"
# The glibc the binary asks its loader for: the newest symbol version it
# uses, and 2.36 if its relocations are packed (GLIBC_ABI_DT_RELR).
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/retry >"$work/retry"
glibc_needed=$(
  readelf -V --wide "$work/retry" | grep -o 'GLIBC_[0-9][0-9.]*\|GLIBC_ABI_DT_RELR' |
    sed 's/GLIBC_ABI_DT_RELR/2.36/; s/GLIBC_//' | sort -V | tail -1
)
libc_floor=$(grep -o 'libc6 (>= [0-9.]*)' <<<"$(field Depends)" | sed 's/.*>= //; s/)//' | sort -V | tail -1)
check "its libc6 dependency ($libc_floor) covers the glibc the binary needs ($glibc_needed)" \
  dpkg --compare-versions "$libc_floor" ge "$glibc_needed"

dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's#^\./#/#' >"$work/contents"
for path in /usr/bin/retry /usr/share/man/man1/retry.1.gz \
  /usr/share/bash-completion/completions/retry \
  /usr/share/zsh/vendor-completions/_retry \
  /usr/share/fish/vendor_completions.d/retry.fish \
  /usr/share/doc/retry-tool/copyright /usr/share/doc/retry-tool/changelog.gz \
  /usr/share/doc/retry-tool/changelog.Debian.gz /usr/share/doc/retry-tool/README.md \
  /usr/share/doc/retry-tool/docs/README.md; do
  check "the package holds $path" grep -qx "$path" "$work/contents"
done
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/retry-tool/copyright >"$work/copyright"
check "its copyright file is machine-readable" \
  grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$work/copyright"
check "the Debian changelog is for this version" \
  test "$(dpkg-parsechangelog -l debian/changelog -S Version)" = "${version}-1"

lintian --tag-display-limit 0 "$deb" >"$work/lintian" 2>&1
cat "$work/lintian"
check "lintian finds no error" test "$(grep -c '^E: ' "$work/lintian")" = 0
check "lintian finds at most three warnings" test "$(grep -c '^W: ' "$work/lintian")" -le 3

# ---- the release archive -------------------------------------------------------

check "the archive and its checksum are in dist/" test -f "$archive" -a -f "$archive.sha256"
check "the checksum matches" bash -c "cd dist && sha256sum --quiet -c '${archive#dist/}.sha256'"
name="retry-${version}-${target}"
tar -tzf "$archive" | sort >"$work/listed"
sort >"$work/wanted" <<EOF
$name/
$name/CHANGELOG.md
$name/LICENSE-APACHE
$name/LICENSE-MIT
$name/README.md
$name/completions/
$(for f in completions/*; do echo "$name/$f"; done)
$name/retry
$name/retry.1
EOF
check "the archive holds the binary, man page, completions, README, CHANGELOG and licences" \
  diff -u "$work/wanted" "$work/listed"
tar -xzf "$archive" -C "$work"
check "the archive's binary is the package's" \
  cmp -s "$work/$name/retry" <(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/retry)
check "the archive's binary is position-independent and dynamically linked" \
  bash -c "file -L '$work/$name/retry' | grep -q 'pie executable, .*dynamically linked'"

# ---- installed for real --------------------------------------------------------

if [ "$(id -u)" != 0 ]; then
  echo "SKIPPED: installing the package needs root (dpkg -i)"
  finish
  exit
fi

# Debian's retry, if installed, is saved as a .deb, removed, and put back.
debian_retry=""
if [ "$(dpkg-query -W -f '${db:Status-Status}' retry 2>/dev/null)" = installed ]; then
  ver=$(dpkg-query -W -f '${Version}' retry)
  if (cd "$work" && apt-get download -q "retry=$ver" >/dev/null 2>&1); then
    debian_retry=$(ls "$work"/retry_*.deb)
    dpkg -r retry >/dev/null
    echo "package: Debian's retry $ver removed for the test, put back at the end"
  else
    echo "SKIPPED: Debian's retry is installed and its .deb cannot be fetched to put it back"
    finish
    exit
  fi
elif (cd "$work" && apt-get download -q retry >/dev/null 2>&1); then
  debian_retry_file=$(ls "$work"/retry_*.deb)
fi
restore() {
  dpkg -r retry-tool >/dev/null 2>&1
  if [ -n "$debian_retry" ]; then dpkg -i "$debian_retry" >/dev/null; fi
  rm -rf "$work"
}
trap restore EXIT

for path in $(cat "$work/contents"); do
  if [ -f "$path" ] && ! dpkg -S "$path" >/dev/null 2>&1; then
    echo "SKIPPED: $path exists and belongs to no package; not overwriting it"
    finish
    exit
  fi
done

check "dpkg -i installs the package" dpkg -i "$deb"
check "/usr/bin/retry --version names this version" \
  grep -q "$version" <<<"$(/usr/bin/retry --version)"
check "/usr/bin/retry runs a command" /usr/bin/retry -qq --max 1 -- true
check "man -w retry finds the installed page" \
  test "$(MANPATH= PATH=/usr/bin:/bin man -w retry)" = /usr/share/man/man1/retry.1.gz
check "man renders it" bash -c 'MANPAGER=cat MANWIDTH=80 man retry 2>/dev/null | grep -q "EXIT STATUS"'
check "bash-completion loads it on demand" bash -c '
  source /usr/share/bash-completion/bash_completion
  _completion_loader retry
  # Not found, it would fall back to _minimal.
  complete -p retry | grep -q "_retry"'
check "zsh finds _retry in its function path" \
  zsh -fc 'autoload -U compinit; compinit -u -D; [[ $_comps[retry] == _retry ]]'
check "fish completes retry's options" \
  bash -c 'HOME=$(mktemp -d) fish -c "complete -C \"retry --max-t\"" | grep -q -- --max-time'
if [ -n "${debian_retry_file:-}${debian_retry}" ]; then
  check "dpkg refuses Debian's retry beside it (the declared conflict)" bash -c "
    ! dpkg --no-act -i '${debian_retry_file:-$debian_retry}' >'$work/conflict' 2>&1 &&
    grep -q 'conflicts with retry-tool\|retry-tool conflicts with' '$work/conflict'"
else
  echo "SKIPPED: Debian's retry package cannot be fetched; its conflict is checked in the control field only"
fi

check "dpkg -r removes the package" dpkg -r retry-tool
check "nothing of it is left" bash -c "
  for path in \$(cat '$work/contents'); do
    # Shared directories (/usr/bin/) stay; anything of retry's goes.
    [ ! -e \"\$path\" ] || { [ -d \"\$path\" ] && [[ \"\$path\" != *retry* ]]; } ||
      { echo \"left: \$path\" >&2; exit 1; }
  done"
check "dpkg no longer knows it" test "$(dpkg-query -W -f '${db:Status-Status}' retry-tool 2>/dev/null)" != installed

finish
