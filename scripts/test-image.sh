#!/usr/bin/env bash
# The container image's tests, run by scripts/test.sh after the package
# tests: builds dist/retry-<version>-image.oci.tar with scripts/image.sh
# (from the static binaries already in dist/), then checks it with podman:
# - the archive is one index of linux/amd64 and linux/arm64, each image one
#   layer holding exactly the binary (hard-linked at /usr/local/bin), the CA
#   bundle, /etc/passwd, /etc/group and /tmp, with its OCI labels, user
#   and entry point;
# - the amd64 image run by podman (host network, runc, its own storage):
#   --version, a retried exit status, --http and --tcp against servers on
#   the host's 127.0.0.1, https trusted through the bundled CAs (a test copy
#   of the bundle with the test CA added, mounted over it; refused without),
#   the unprivileged user (busybox's id, mounted in), a read-only root
#   file system, and COPY --from in a build FROM scratch;
# - the arm64 image's binary, taken out of the archive's layer, under
#   qemu-aarch64.
# Prints the image size per architecture and the start-up of `podman run`
# beside the bare binary's.
# Ends with "image tests: P passed, F failed, S skipped".
#
# podman here: --runtime runc (crun refuses this machine's cgroups), vfs
# storage in a temporary directory, and --ulimit values within the hard
# limits (runc cannot raise them).
set -uo pipefail
cd "$(dirname "$0")/.."
suite=image
# shellcheck source=scripts/counts.sh
. scripts/counts.sh

version=$(cargo pkgid --quiet | sed 's/.*[@#]//')
archive="dist/retry-$version-image.oci.tar"
work=$(mktemp -d)
pids=()
podman=(podman --root "$work/storage" --runroot "$work/run" --storage-driver vfs --runtime runc)
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  "${podman[@]}" rm --all --force >/dev/null 2>&1
  "${podman[@]}" rmi --all --force >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

same() {
  if [ -n "$2" ] && [ "$2" = "$3" ]; then ok "$1"; else bad "$1: '$2' against '$3'"; fi
}

for tool in podman buildah runc qemu-aarch64 busybox jq openssl python3; do
  command -v "$tool" >/dev/null || bad "$tool is missing (scripts/test.sh installs it)"
done

started=$(date +%s)
if ! bash scripts/image.sh >"$work/image.log" 2>&1; then
  cat "$work/image.log"
  bad "scripts/image.sh builds $archive"
  finish
  exit 1
fi
echo "image: built in $(($(date +%s) - started)) s"
grep '^image:' "$work/image.log"

# ---- the archive --------------------------------------------------------------

oci="$work/oci"
mkdir -p "$oci"
tar -xf "$archive" -C "$oci"
blob() { echo "$oci/blobs/${1/://}"; }
index=$(blob "$(jq -r '.manifests[0].digest' "$oci/index.json")")
same "the archive's one entry is tagged retry:$version" \
  "$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$oci/index.json")" "retry:$version"
same "it is an OCI image index of linux/amd64 and linux/arm64/v8" \
  "$(jq -r '[.mediaType] + [.manifests[].platform | "\(.os)/\(.architecture)\(if .variant then "/" + .variant else "" end)"] | join(" ")' "$index")" \
  "application/vnd.oci.image.index.v1+json linux/amd64 linux/arm64/v8"
for arch in amd64 arm64; do
  manifest=$(blob "$(jq -r --arg a "$arch" '.manifests[] | select(.platform.architecture == $a) | .digest' "$index")")
  config=$(blob "$(jq -r '.config.digest' "$manifest")")
  same "$arch: one layer" "$(jq '.layers | length' "$manifest")" 1
  layer=$(blob "$(jq -r '.layers[0].digest' "$manifest")")
  # (buildah stores the names without "./".)
  same "$arch: the layer holds the binary, its hard link, the CA bundle, passwd, group and /tmp" \
    "$(tar -tzf "$layer" | grep -v '/$' | sort | tr '\n' ' ')" \
    "etc/group etc/passwd etc/ssl/certs/ca-certificates.crt retry usr/local/bin/retry "
  check "$arch: /usr/local/bin/retry is a hard link to /retry, not a second copy" \
    bash -c "tar -tvzf '$layer' usr/local/bin/retry | grep -q '^h.* link to retry$'"
  mkdir -p "$work/$arch"
  tar -xzf "$layer" -C "$work/$arch" retry etc/passwd etc/ssl/certs/ca-certificates.crt
  target=$([ "$arch" = amd64 ] && echo x86_64 || echo aarch64)-unknown-linux-musl
  check "$arch: /retry is dist/'s static binary" cmp "$work/$arch/retry" "dist/$target/retry"
  check "$arch: the CA bundle is Debian's" cmp "$work/$arch/etc/ssl/certs/ca-certificates.crt" /etc/ssl/certs/ca-certificates.crt
  same "$arch: /etc/passwd names the user retry, uid 65532" \
    "$(grep '^retry:' "$work/$arch/etc/passwd" | cut -d: -f1,3,4)" "retry:65532:65532"
  same "$arch: it runs as 65532:65532, entry point /retry" \
    "$(jq -r '.config | "\(.User) \(.Entrypoint | join(","))"' "$config")" "65532:65532 /retry"
  same "$arch: its labels give the version and licences" \
    "$(jq -r '.config.Labels | "\(.["org.opencontainers.image.version"]) \(.["org.opencontainers.image.licenses"])"' "$config")" \
    "$version MIT OR Apache-2.0"
  repo=$(cargo metadata --no-deps --format-version 1 --locked | jq -r '.packages[0].repository // ""')
  same "$arch: its source label is the manifest's repository, absent while there is none" \
    "[$(jq -r '.config.Labels["org.opencontainers.image.source"] // ""' "$config")]" "[$repo]"
  packed=$(stat -c %s "$layer")
  unpacked=$(gzip -dc "$layer" | wc -c)
  binary=$(stat -c %s "dist/$target/retry")
  bundle=$(stat -c %s /etc/ssl/certs/ca-certificates.crt)
  echo "image: linux/$arch: $packed bytes to pull, $unpacked unpacked (binary $binary, CA bundle $bundle)"
  # The layer is the binary and the bundle, and a few kB of tar headers,
  # passwd and group.
  check "$arch: nothing else weighs in the image" test "$unpacked" -lt $((binary + bundle + 16384))
done

# ---- the arm64 binary, out of the image, under qemu-user -------------------------------

same "arm64: the image's binary runs under qemu-aarch64 (--version)" \
  "$(qemu-aarch64 "$work/arm64/retry" --version 2>&1)" "retry $version"
# (The command is the same binary, under qemu too: the kernel cannot run it.)
qemu-aarch64 "$work/arm64/retry" -qq -n 3 -b 10ms -- \
  qemu-aarch64 "$work/arm64/retry" -qq -n 1 --tcp 127.0.0.1:1
same "arm64: it retries a command to its exit status (7, connection refused)" "$?" 7

# ---- podman -----------------------------------------------------------------------

image="localhost/retry:$version"
pulled=$("${podman[@]}" pull -q "oci-archive:$archive" 2>"$work/pull.err") &&
  "${podman[@]}" tag "$pulled" "$image" || cat "$work/pull.err"
check "podman pulls the archive (the amd64 image)" "${podman[@]}" image exists "$image"
nofile=$(ulimit -Hn)
run=("${podman[@]}" run --rm --network host --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)

same "podman run IMAGE --version" "$("${run[@]}" "$image" --version 2>&1)" "retry $version"
"${run[@]}" "$image" -n 3 -b 10ms -- /retry -qq -n 1 --tcp 127.0.0.1:1 2>"$work/retried"
same "a command in the image is retried to its exit status (7)" "$?" 7
same "three attempts were logged" "$(grep -c 'attempt [0-9]/3 failed' "$work/retried")" 3

# Servers on the host's 127.0.0.1: plain HTTP, and HTTPS with a test CA.
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http_port=$(port)
mkdir -p "$work/www"
echo ready >"$work/www/health"
python3 -m http.server --bind 127.0.0.1 --directory "$work/www" "$http_port" >/dev/null 2>&1 &
pids+=($!)
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=retry test CA" \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$work/san"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
  -CAcreateserial -days 2 -extfile "$work/san" -out "$work/server.crt" 2>/dev/null
https_port=$(port)
python3 - "$https_port" "$work/server.crt" "$work/server.key" "$work/www" <<'EOF' >/dev/null 2>&1 &
import functools, http.server, ssl, sys
port, cert, key, root = sys.argv[1:]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
EOF
pids+=($!)
for p in "$http_port" "$https_port"; do
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break
    sleep 0.1
  done
done

same "--http against a server on the host" \
  "$("${run[@]}" "$image" -qq -n 3 -b 10ms --http "http://127.0.0.1:$http_port/health" 2>&1)" ready
"${run[@]}" "$image" -qq -n 3 -b 10ms --tcp "127.0.0.1:$http_port"
same "--tcp against a port on the host" "$?" 0
# The bundle as shipped does not know the test CA: TLS error, 35, not retried.
"${run[@]}" "$image" -qq -n 3 -b 10ms --http "https://localhost:$https_port/health"
same "https to a server of an unknown CA fails with 35" "$?" 35
cat "$work/amd64/etc/ssl/certs/ca-certificates.crt" "$work/ca.crt" >"$work/bundle.crt"
chmod 644 "$work/bundle.crt"
same "https through the bundled CAs (a test copy with the test CA, mounted over the bundle)" \
  "$("${run[@]}" -v "$work/bundle.crt:/etc/ssl/certs/ca-certificates.crt:ro" "$image" \
    -qq -n 3 -b 10ms --http "https://localhost:$https_port/health" 2>&1)" ready

bb=(-v "$(command -v busybox):/busybox:ro" --entrypoint /busybox)
same "it runs as the unprivileged user named in /etc/passwd" \
  "$("${run[@]}" "${bb[@]}" "$image" id 2>&1)" "uid=65532(retry) gid=65532(retry) groups=65532(retry)"
"${run[@]}" --read-only "${bb[@]}" "$image" touch /retry-was-here 2>/dev/null
check "--read-only: the root file system cannot be written" test "$?" -ne 0
same "--read-only: retry runs a retried probe all the same" \
  "$("${run[@]}" --read-only "$image" -qq -n 3 -b 10ms --http "http://127.0.0.1:$http_port/health" 2>&1)" ready

# COPY --from, as a multi-stage build does, in a build FROM scratch.
mkdir -p "$work/ctx"
printf 'FROM scratch\nCOPY --from=%s /usr/local/bin/retry /usr/local/bin/retry\nENTRYPOINT ["/usr/local/bin/retry"]\n' \
  "$image" >"$work/ctx/Containerfile"
if "${podman[@]}" build -q --network none -t localhost/copied "$work/ctx" >/dev/null 2>"$work/build.err"; then
  same "COPY --from=IMAGE /usr/local/bin/retry gives a working retry" \
    "$("${run[@]}" localhost/copied --version 2>&1)" "retry $version"
else
  bad "podman build with COPY --from: $(tail -n 3 "$work/build.err")"
fi

# ---- start-up ------------------------------------------------------------------

# median_ms N CMD...: the median wall time of N runs of CMD, in ms.
median_ms() {
  local n=$1 i t0
  shift
  for i in $(seq "$n"); do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    echo $((($(date +%s%N) - t0) / 1000))
  done | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] / 1000 }'
}
bare=$(median_ms 21 dist/x86_64-unknown-linux-musl/retry --version)
contained=$(median_ms 7 "${run[@]}" "$image" --version)
echo "image: start-up (median, --version): bare binary $bare ms, podman run $contained ms (podman's own overhead: runc, vfs storage)"

finish
