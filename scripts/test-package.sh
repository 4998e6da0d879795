#!/usr/bin/env bash
# The package tests, run by scripts/test.sh: builds dist/ with
# scripts/package.sh, checks both Debian packages (amd64, arm64) with
# lintian and their control fields, checks both release archives (files,
# checksums, binaries, and that every link of the README and the guide works
# inside them), then installs the amd64 package for real with dpkg (as root),
# checks what it installed, and removes it again. Debian's own `retry`
# package, if installed, is set aside first and put back at the end.
# Ends with "package tests: P passed, F failed, S skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
suite=package
# shellcheck source=scripts/counts.sh
. scripts/counts.sh

# same WHAT A B: A and B are equal and not empty (an empty value means the
# tool that should have produced it did not run).
same() {
  if [ -n "$2" ] && [ "$2" = "$3" ]; then
    ok "$1"
  else
    bad "$1: '$2' against '$3'"
  fi
}

# binstall_render TARGET: the binstall templates of Cargo.toml rendered for
# TARGET, as two lines: the archive's name from pkg-url (the first of the
# tgz suffixes whose file is in dist/, else the .tgz one) once the
# stand-in repository and the release page's path are taken off, and
# bin-dir. Fails if pkg-url does not point under the release page of
# v{ version } or pkg-fmt is not tgz.
binstall_render() {
  cargo metadata --no-deps --format-version 1 --locked |
    TARGET=$1 python3 -c '
import json, os, re, sys
pkg = json.load(sys.stdin)["packages"][0]
meta = pkg["metadata"]["binstall"]
assert meta["pkg-fmt"] == "tgz", meta["pkg-fmt"]
bins = [t["name"] for t in pkg["targets"] if "bin" in t["kind"]]
def render(template, suffix):
    values = {"name": pkg["name"], "version": pkg["version"], "repo": "REPO",
              "bin": bins[0], "target": os.environ["TARGET"],
              "archive-suffix": suffix, "archive-format": suffix[1:],
              "binary-ext": ""}
    return re.sub(r"\{ *([a-z-]+) *\}", lambda m: values[m.group(1)], template)
page = "REPO/releases/download/v%s/" % pkg["version"]
names = []
for suffix in (".tgz", ".tar.gz"):
    url = render(meta["pkg-url"], suffix)
    assert url.startswith(page), url
    names.append(url[len(page):])
found = [n for n in names if os.path.exists(os.path.join("dist", n))]
print((found or names)[0])
print(render(meta["bin-dir"], ".tgz"))
'
}

started=$(date +%s)
if ! bash scripts/package.sh; then
  bad "scripts/package.sh builds dist/"
  finish
  exit 1
fi
echo "package: built in $(($(date +%s) - started)) s"

version=$(cargo pkgid --quiet | sed 's/.*[@#]//')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for target in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
  case $target in
    x86_64-*) arch=amd64 machine=x86-64 ;;
    aarch64-*) arch=arm64 machine="ARM aarch64" ;;
  esac
  deb="dist/retry-tool_${version}-1_${arch}.deb"
  archive="dist/retry-${version}-${target}.tar.gz"
  name="retry-${version}-${target}"
  mkdir -p "$work/$arch"

  # ---- the package, as a file ------------------------------------------------

  check "the package $deb is in dist/" test -f "$deb"
  field() { dpkg-deb --field "$deb" "$@"; }
  same "$arch: it is named retry-tool, not retry" "$(field Package)" retry-tool
  same "$arch: its architecture is $arch" "$(field Architecture)" "$arch"
  same "$arch: its version is ${version}-1" "$(field Version)" "${version}-1"
  same "$arch: it declares the clash with Debian's retry as Conflicts: retry" \
    "$(field Conflicts)" retry
  # (Each empty field checked beside one that must be there, so that an
  # unreadable package does not pass as one without the field.)
  same "$arch: it neither replaces nor provides Debian's retry" \
    "$(field Package Replaces Provides)" "Package: retry-tool"
  same "$arch: it depends on nothing, no C library included" \
    "$(field Package Depends Pre-Depends)" "Package: retry-tool"
  dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/retry >"$work/$arch/retry"
  check "$arch: its binary is the static one built for $target" \
    cmp "$work/$arch/retry" "dist/$target/retry"
  check "$arch: which is static and position-independent, for $machine" \
    bash -c "file -L '$work/$arch/retry' | grep -q 'LSB pie executable, $machine,.*static-pie linked'"

  dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's#^\./#/#' >"$work/$arch/contents"
  for path in /usr/bin/retry /usr/share/man/man1/retry.1.gz \
    /usr/share/bash-completion/completions/retry \
    /usr/share/zsh/vendor-completions/_retry \
    /usr/share/fish/vendor_completions.d/retry.fish \
    /usr/share/doc/retry-tool/copyright /usr/share/doc/retry-tool/changelog.gz \
    /usr/share/doc/retry-tool/changelog.Debian.gz /usr/share/doc/retry-tool/README.md \
    /usr/share/doc/retry-tool/docs/README.md; do
    check "$arch: the package holds $path" grep -qx "$path" "$work/$arch/contents"
  done
  dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/retry-tool/copyright >"$work/copyright"
  check "$arch: its copyright file is machine-readable" \
    grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$work/copyright"

  # lintian exits 0 when it finds no error, 1 when it finds one, and 2 when
  # it could not check the package at all (with no E: line to count).
  lintian --tag-display-limit 0 "$deb" >"$work/lintian" 2>&1
  status=$?
  cat "$work/lintian"
  same "$arch: lintian checks the package and finds no error (its exit status)" "$status" 0
  check "$arch: lintian reports no error" test "$(grep -c '^E: ' "$work/lintian")" = 0
  check "$arch: lintian reports at most three warnings" test "$(grep -c '^W: ' "$work/lintian")" -le 3

  # ---- the release archive -----------------------------------------------------

  check "the archive $archive and its checksum are in dist/" test -f "$archive" -a -f "$archive.sha256"
  check "$arch: the checksum matches" bash -c "cd dist && sha256sum --quiet -c '${archive#dist/}.sha256'"
  tar -tzf "$archive" | sort >"$work/listed"
  {
    printf '%s\n' "$name/" "$name/ARCHITECTURE.md" "$name/CHANGELOG.md" "$name/LICENSE-APACHE" \
      "$name/LICENSE-MIT" "$name/README.md" "$name/bench/" "$name/bench/README.md" \
      "$name/completions/" "$name/docs/" "$name/man/" "$name/man/retry.1" "$name/retry"
    for f in completions/* docs/*.md docs/*.svg; do echo "$name/$f"; done
  } | sort >"$work/wanted"
  check "$arch: the archive holds the binary, man page, completions, README, CHANGELOG, licences and the guide" \
    diff -u "$work/wanted" "$work/listed"
  tar -xzf "$archive" -C "$work/$arch"
  check "$arch: the archive's binary is the package's" cmp "$work/$arch/$name/retry" "$work/$arch/retry"
  # The guide's install lines (`install -Dm644 man/retry.1 ...`) name files
  # where the archive holds them: it held retry.1 at its top.
  named=$(sed -n 's/^install -Dm644 \([^ ]*\) .*/\1/p' "$work/$arch/$name/docs/README.md")
  missing=""
  for f in $named; do [ -f "$work/$arch/$name/$f" ] || missing="$missing $f"; done
  check "$arch: every file the guide's install lines name is in the archive (${missing:-none missing})" \
    test -n "$named" -a -z "$missing"
  # Every relative link of the README and the guide leads to a file in the
  # archive (anchors aside).
  links=0 broken=""
  for page in "$work/$arch/$name/README.md" "$work/$arch/$name"/docs/*.md; do
    for link in $(grep -o '](\([^)#:]*\)[)#]' "$page" | sed 's/^](//; s/.$//'); do
      links=$((links + 1))
      [ -e "$(dirname "$page")/$link" ] || broken+=" ${page#"$work/$arch/$name/"}:$link"
    done
  done
  check "$arch: the $links links of the README and the guide lead to files in the archive${broken:+ (broken:$broken)}" \
    test "$links" -gt 20 -a -z "$broken"

  # ---- cargo-binstall's metadata ---------------------------------------------
  # Its templates, rendered by binstall's documented rules (SUPPORT.md): each
  # `{ key }` replaced; for pkg-fmt tgz, `{ archive-suffix }` is tried as
  # .tgz and as .tar.gz; `{ binary-ext }` is empty off Windows. A stand-in
  # for the repository (the manifest has none yet) and the release page's
  # path are taken off; what is left must name the archive in dist/, and
  # bin-dir the executable inside it.
  rendered=$(binstall_render "$target") || rendered=""
  pkg_url=$(sed -n 1p <<<"$rendered")
  bin_dir=$(sed -n 2p <<<"$rendered")
  same "$arch: binstall's pkg-url names the archive in dist/" "$pkg_url" "$(basename "$archive")"
  check "$arch: binstall's bin-dir ($bin_dir) is the executable retry in the archive" \
    test -n "$bin_dir" -a -x "$work/$arch/$bin_dir" -a "$(basename "$bin_dir")" = retry
done
same "the changelog in debian/ is for this version" \
  "$(dpkg-parsechangelog -l debian/changelog -S Version)" "${version}-1"

# ---- installed for real --------------------------------------------------------

deb="dist/retry-tool_${version}-1_amd64.deb"
if [ "$(id -u)" != 0 ]; then
  skip "installing the package needs root (dpkg -i)"
  finish
  exit
fi
if [ "$(dpkg --print-architecture)" != amd64 ]; then
  skip "installing the amd64 package needs an amd64 machine"
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
    skip "Debian's retry is installed and its .deb cannot be fetched to put it back"
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

for path in $(cat "$work/amd64/contents"); do
  if [ -f "$path" ] && ! dpkg -S "$path" >/dev/null 2>&1; then
    skip "$path exists and belongs to no package; not overwriting it"
    finish
    exit
  fi
done

check "dpkg -i installs the package" dpkg -i "$deb"
check "the installed /usr/bin/retry is the static x86_64 binary" \
  cmp /usr/bin/retry dist/x86_64-unknown-linux-musl/retry
same "/usr/bin/retry --version names this version" "$(/usr/bin/retry --version)" "retry $version"
check "/usr/bin/retry runs a command" /usr/bin/retry -qq --max 1 -- true
same "man -w retry finds the installed page" \
  "$(MANPATH= PATH=/usr/bin:/bin man -w retry)" /usr/share/man/man1/retry.1.gz
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
  skip "Debian's retry package cannot be fetched: its conflict is checked in the control field only"
fi

check "dpkg -r removes the package" dpkg -r retry-tool
check "nothing of it is left" bash -c "
  for path in \$(cat '$work/amd64/contents'); do
    # Shared directories (/usr/bin/) stay; anything of retry's goes.
    [ ! -e \"\$path\" ] || { [ -d \"\$path\" ] && [[ \"\$path\" != *retry* ]]; } ||
      { echo \"left: \$path\" >&2; exit 1; }
  done"
known=$(dpkg-query -W -f '${db:Status-Status}' retry-tool 2>/dev/null) || known="unknown to dpkg"
check "dpkg no longer has it installed ($known)" test -n "$known" -a "$known" != installed

finish
