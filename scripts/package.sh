#!/usr/bin/env bash
# Builds what a release ships, into dist/, for x86_64 and aarch64 Linux:
#   <target>/retry                               the static binary
#   retry-<version>-<target>.tar.gz (+ .sha256)  the release archive: the
#       binary, man page, completions, README, CHANGELOG, licences, and the
#       guide (docs/, ARCHITECTURE.md, bench/README.md) that the README links
#   retry-tool_<version>-1_<arch>.deb            the Debian package (cargo-deb)
# where <target> is x86_64-unknown-linux-musl (amd64) or
# aarch64-unknown-linux-musl (arm64). The binaries are static and
# position-independent (musl's static-pie): they run on any Linux of their
# architecture, whatever its C library, and the packages depend on nothing.
# Set DEBFULLNAME and DEBEMAIL to sign the packages as their maintainer.
#
# Installs what it needs when it is missing: the rustup targets, a C
# compiler for each (ring has C and assembly: musl-tools' musl-gcc, and
# Debian's gcc-aarch64-linux-gnu, which also links the aarch64 binary), and
# cargo-deb. Works with CARGO_TARGET_DIR set: cargo says where it put each
# binary.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
declare -A deb_arch=([x86_64-unknown-linux-musl]=amd64 [aarch64-unknown-linux-musl]=arm64)

# ---- the toolchain --------------------------------------------------------------

if command -v rustup >/dev/null; then
  installed=$(rustup target list --installed)
  for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$installed" || rustup target add "$t"
  done
fi
need=()
command -v musl-gcc >/dev/null || need+=(musl-tools)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
[ -f /usr/aarch64-linux-gnu/include/string.h ] || need+=(libc6-dev-arm64-cross)
if [ ${#need[@]} -gt 0 ]; then
  echo "package: installing ${need[*]}" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# The aarch64 compiler and linker are set in .cargo/config.toml.

# cargo-deb, pinned so that every build of a given commit makes the same
# package; installed once into cargo's bin directory, where later runs find it.
cargo_deb_version=3.7.0
if ! cargo deb --version 2>/dev/null | grep -qw "$cargo_deb_version"; then
  echo "package: installing cargo-deb $cargo_deb_version" >&2
  cargo install cargo-deb --version "$cargo_deb_version" --locked --quiet
fi

# ---- the builds -------------------------------------------------------------------

version=$(cargo pkgid --quiet | sed 's/.*[@#]//')
# Reproducible archives: every file dated from the last commit.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

# Both targets in one cargo run: each ends in a single-threaded link-time
# optimisation, and the two run side by side. cargo reports every binary it
# made, with its path, wherever CARGO_TARGET_DIR puts it.
target_args=()
for t in "${targets[@]}"; do target_args+=(--target "$t"); done
built=$(mktemp)
stage=$(mktemp -d)
trap 'rm -rf "$built" "$stage"' EXIT
cargo build --release --locked --bin retry "${target_args[@]}" \
  --message-format=json-render-diagnostics >"$built"

mkdir -p dist
for t in "${targets[@]}"; do
  # The artifact line of retry's binary for this target: its "executable".
  exe=$(grep '"reason":"compiler-artifact"' "$built" | grep '"kind":\["bin"\]' |
    grep -F "/$t/release/" | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
  if [ -z "$exe" ] || [ ! -f "$exe" ]; then
    echo "package: cargo reported no retry binary for $t" >&2
    exit 1
  fi
  mkdir -p "dist/$t"
  install -m755 "$exe" "dist/$t/retry"

  deb_args=(--locked --no-build --target "$t" --output dist/)
  if [ -n "${DEBFULLNAME:-}" ] && [ -n "${DEBEMAIL:-}" ]; then
    deb_args+=(--maintainer "$DEBFULLNAME <$DEBEMAIL>")
  fi
  deb=$(cargo deb "${deb_args[@]}")
  # cargo-deb finds the binary through cargo's own idea of the target
  # directory: it must be the one cargo just reported.
  if ! cmp -s "$exe" <(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/retry); then
    echo "package: $deb does not hold the binary cargo built ($exe)" >&2
    exit 1
  fi
  # With nothing to depend on, cargo-deb still writes an empty Depends
  # field, which lintian rejects (empty-field): the package is assembled
  # again without it, each file as it was.
  unpacked="$stage/deb-$t"
  dpkg-deb --raw-extract "$deb" "$unpacked"
  sed -i '/^Depends: *$/d' "$unpacked/DEBIAN/control"
  dpkg-deb --root-owner-group -Zxz --build "$unpacked" \
    "dist/retry-tool_${version}-1_${deb_arch[$t]}.deb" >/dev/null
  [ "$deb" = "dist/retry-tool_${version}-1_${deb_arch[$t]}.deb" ] || rm -f "$deb"

  name="retry-$version-$t"
  mkdir -p "$stage/$name/man" "$stage/$name/completions" "$stage/$name/docs" "$stage/$name/bench"
  install -m755 "$exe" "$stage/$name/retry"
  install -m644 README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE ARCHITECTURE.md "$stage/$name/"
  # man/ and completions/ as in the repository, so that the guide's
  # install lines work as written in either.
  install -m644 man/retry.1 "$stage/$name/man/"
  install -m644 completions/* "$stage/$name/completions/"
  # The README links to the guide, the guide to its pages, its picture and
  # the benchmarks' figures: the same layout, so that every link works.
  install -m644 docs/*.md docs/*.svg "$stage/$name/docs/"
  install -D -m644 bench/README.md "$stage/$name/bench/README.md"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$stage" -cf - "$name" | gzip -9n >"dist/$name.tar.gz"
  (cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
done

ls -l dist/ dist/*/
