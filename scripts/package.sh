#!/usr/bin/env bash
# Builds what a release ships, into dist/:
#   retry-tool_<version>-1_<arch>.deb          the Debian package (cargo-deb)
#   retry-<version>-<target>.tar.gz (+ .sha256) the release archive
# Both hold the default release build (target/release/retry). Set
# DEBFULLNAME and DEBEMAIL to sign the package as its maintainer.
set -euo pipefail
cd "$(dirname "$0")/.."

# cargo-deb, pinned so that every build of a given commit makes the same
# package; installed once into cargo's bin directory, where later runs find it.
cargo_deb_version=3.7.0
if ! cargo deb --version 2>/dev/null | grep -qw "$cargo_deb_version"; then
  echo "package: installing cargo-deb $cargo_deb_version" >&2
  cargo install cargo-deb --version "$cargo_deb_version" --locked --quiet
fi
# `depends = "$auto"` asks dpkg-shlibdeps (dpkg-dev) for the libraries' packages.
if ! command -v dpkg-shlibdeps >/dev/null; then
  echo "package: dpkg-shlibdeps is missing: apt-get install dpkg-dev" >&2
  exit 1
fi

version=$(cargo pkgid --quiet | sed 's/.*[@#]//')
target=$(rustc -vV | sed -n 's/^host: //p')
# Reproducible archives: every file dated from the last commit.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

mkdir -p dist
deb_args=(--locked --output dist/)
if [ -n "${DEBFULLNAME:-}" ] && [ -n "${DEBEMAIL:-}" ]; then
  deb_args+=(--maintainer "$DEBFULLNAME <$DEBEMAIL>")
fi
# The binary is the one `cargo build --release` makes (and bench/ measures);
# cargo-deb only packages it.
cargo build --release --locked
cargo deb --no-build "${deb_args[@]}"

name="retry-$version-$target"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name/completions"
install -m755 target/release/retry "$stage/$name/retry"
install -m644 man/retry.1 README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE "$stage/$name/"
install -m644 completions/* "$stage/$name/completions/"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
  -C "$stage" -cf - "$name" | gzip -9n > "dist/$name.tar.gz"
(cd dist && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")

ls -l dist/
