#!/usr/bin/env bash
# Builds the container image, for linux/amd64 and linux/arm64 under one
# manifest list, into dist/ as an OCI archive:
#   retry-<version>-image.oci.tar   (the image index, tagged retry:<version>)
# from the static binaries scripts/package.sh put in dist/<target>/retry
# (it runs package.sh first when they are missing). Each image is one layer
# on nothing (FROM scratch):
#   /retry, /usr/local/bin/retry   the static binary (one file, hard-linked:
#                                  ENTRYPOINT ["/retry"], and the path for
#                                  COPY --from=IMAGE /usr/local/bin/retry)
#   /etc/ssl/certs/ca-certificates.crt   the Mozilla CA bundle, from
#                                  Debian's ca-certificates, so --http
#                                  https://... works without --cacert
#   /etc/passwd, /etc/group        root and the unprivileged user retry
#                                  (uid and gid 65532), which it runs as
#   /tmp                           sticky, for --hold-output and
#                                  --replay-stdin (a read-only container
#                                  gets a tmpfs there from its runtime)
# with the OCI labels title, description, version, licenses, revision,
# created, and source when the manifest's `repository` field (or
# RETRY_IMAGE_SOURCE) names one: there is no public repository yet, so by
# default the label is left out rather than invented.
#
# buildah builds it with its own storage in a temporary directory: nothing
# is pulled (scratch is empty) and nothing runs inside the image, so the
# arm64 image needs no emulation. Installs buildah and ca-certificates from
# Debian when they are missing. Dated from the last commit
# (SOURCE_DATE_EPOCH), as the archives are.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(cargo pkgid --quiet | sed 's/.*[@#]//')
declare -A arch_of=([x86_64-unknown-linux-musl]=amd64 [aarch64-unknown-linux-musl]=arm64)
targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
bundle=/etc/ssl/certs/ca-certificates.crt
out="dist/retry-$version-image.oci.tar"
ref="retry:$version"

need=()
command -v buildah >/dev/null || need+=(buildah)
[ -f "$bundle" ] || need+=(ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
  echo "image: installing ${need[*]}" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
for t in "${targets[@]}"; do
  [ -x "dist/$t/retry" ] || {
    bash scripts/package.sh
    break
  }
done

SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git rev-parse HEAD 2>/dev/null || true)
source=${RETRY_IMAGE_SOURCE:-$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["packages"][0]["repository"] or "")')}
licenses=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["packages"][0]["license"])')

work=$(mktemp -d)
# buildah's storage is the script's own, gone with it.
buildah=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
trap '"${buildah[@]}" rm --all >/dev/null 2>&1; rm -rf "$work"' EXIT

labels=(
  --label "org.opencontainers.image.title=retry"
  --label "org.opencontainers.image.description=Run a command, or probe a URL or a port, until it succeeds: capped exponential backoff with jitter"
  --label "org.opencontainers.image.version=$version"
  --label "org.opencontainers.image.licenses=$licenses"
  --label "org.opencontainers.image.created=$created"
)
[ -z "$revision" ] || labels+=(--label "org.opencontainers.image.revision=$revision")
if [ -n "$source" ]; then
  labels+=(--label "org.opencontainers.image.source=$source")
else
  echo "image: no repository in Cargo.toml and no RETRY_IMAGE_SOURCE: the image has no source label" >&2
fi

"${buildah[@]}" manifest create "$ref" >/dev/null
for t in "${targets[@]}"; do
  arch=${arch_of[$t]}
  root="$work/rootfs-$arch"
  mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp"
  install -m755 "dist/$t/retry" "$root/retry"
  ln "$root/retry" "$root/usr/local/bin/retry"
  install -m644 "$bundle" "$root/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nretry:x:65532:65532:retry:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nretry:x:65532:\n' >"$root/etc/group"
  chmod 644 "$root/etc/passwd" "$root/etc/group"
  chmod 1777 "$root/tmp"
  # One tar, so the hard link stays one (a copy would double the layer).
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$root" -cf "$work/rootfs-$arch.tar" .
  variant=()
  [ "$arch" = arm64 ] && variant=(--variant v8)
  ctr=$("${buildah[@]}" from --os linux --arch "$arch" "${variant[@]}" scratch)
  "${buildah[@]}" add "$ctr" "$work/rootfs-$arch.tar" / >/dev/null
  "${buildah[@]}" config --os linux --arch "$arch" "${variant[@]}" \
    --user 65532:65532 --workingdir / \
    --entrypoint '["/retry"]' --cmd '["--help"]' \
    --created-by "scripts/image.sh" "${labels[@]}" "$ctr"
  "${buildah[@]}" commit --quiet --format oci --timestamp "$SOURCE_DATE_EPOCH" \
    --manifest "$ref" "$ctr" "localhost/retry:$version-$arch" >/dev/null
done

mkdir -p dist
rm -f "$out"
"${buildah[@]}" manifest push --quiet --all --format oci "$ref" "oci-archive:$out:$ref"

# The size of each image: its one layer, compressed (what a pull fetches)
# and unpacked.
index=$(mktemp -d)
tar -xf "$out" -C "$index"
blob() { echo "$index/blobs/${1/://}"; }
list=$(jq -r '.manifests[0].digest' "$index/index.json")
for arch in amd64 arm64; do
  manifest=$(jq -r --arg a "$arch" '.manifests[] | select(.platform.architecture == $a) | .digest' "$(blob "$list")")
  layer=$(jq -r '.layers[0].digest' "$(blob "$manifest")")
  packed=$(stat -c %s "$(blob "$layer")")
  unpacked=$(gzip -dc "$(blob "$layer")" | wc -c)
  echo "image: linux/$arch: one layer, $packed bytes compressed, $unpacked unpacked"
done
rm -rf "$index"
ls -l "$out"
