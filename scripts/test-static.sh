#!/usr/bin/env bash
# The static release binaries, tested as they are shipped (run by
# scripts/test.sh after the package tests, on the dist/ that
# scripts/package.sh built; it builds it when it is missing):
# - both are static and position-independent, and ask for no loader;
# - the x86_64 binary in a root that holds no C library at all (only the
#   binary, busybox and the files each case needs), in private mount, PID
#   and network namespaces, against servers on that namespace's 127.0.0.1:
#   the entry point (arguments, environment, closed standard descriptors,
#   an inherited SIGPIPE disposition), command mode (exit codes, a timeout
#   that stops a process group), --http by a name from /etc/hosts, by DNS
#   with search domains (a dnsmasq on 127.0.0.1:53) and by IPv6 literal,
#   https with --cacert, the system CA store at the Debian, RHEL and Alpine
#   paths and SSL_CERT_FILE, --tcp, the local and the Redis state stores,
#   --metrics-file and --hold-output; and the checkout's glibc build
#   resolving the same names alike (with "hosts: files dns");
# - the aarch64 binary under qemu-user: --version, a command retried to its
#   exit status, and --dry-run and --simulate output byte for byte the
#   x86_64 binary's;
# - the checkout's own build asks for no GLIBC_ABI_DT_RELR.
# Ends with "static tests: P passed, F failed, S skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
suite=static
# shellcheck source=scripts/counts.sh
. scripts/counts.sh

x86=dist/x86_64-unknown-linux-musl/retry
arm=dist/aarch64-unknown-linux-musl/retry
version=$(cargo pkgid --quiet | sed 's/.*[@#]//')

# ---- inside the namespaces: the root without a C library ---------------------------

# Processes of this PID namespace whose command line is exactly "$*".
procs_running() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" = "$* " ] && echo "${p#/proc/}"
  done
}

running() { [ -n "$(procs_running "$@")" ]; }
none_left() { [ -z "$(procs_running /bin/busybox sleep 61)$(procs_running /bin/busybox sleep 62)" ]; }

# Polls CMD... every 50 ms until it succeeds, for at most 10 s.
within_10s() {
  local i
  for i in $(seq 200); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}

# Runs retry (or any command) in the root with a clean environment; extra
# VAR=value words before the command are passed through env. Sets rc, out
# and err.
run() {
  chroot "$root" /bin/env -i PATH=/usr/local/bin:/bin HOME=/tmp/home "$@" \
    >"$work/out" 2>"$work/err"
  rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
}
# expect WHAT STATUS: the last run's exit status; shows its stderr if not.
expect() {
  if [ "$rc" = "$2" ]; then
    ok "$1"
  else
    bad "$1: exit $rc, expected $2"
    sed 's/^/    /' "$work/err" >&2
  fi
}
has() { grep -q -- "$1" <<<"$2"; }

# sigpipe_is default|ignored: what the last run's output (a SigIgn line of
# /proc/PID/status) says of SIGPIPE (13, bit 12) in the command retry ran.
sigpipe_is() {
  local mask
  mask=$(sed -n 's/^SigIgn:[[:space:]]*//p' <<<"$out")
  [ -n "$mask" ] || return 1
  if (((0x$mask >> 12) & 1)); then [ "$1" = ignored ]; else [ "$1" = default ]; fi
}

make_root() {
  mkdir -p "$root"/{bin,usr/local/bin,etc,tmp,dev,proc,pki}
  chmod 1777 "$root/tmp"
  cp "$(command -v busybox)" "$root/bin/busybox"
  chroot "$root" /bin/busybox --install -s /bin
  install -m755 "$x86" "$root/usr/local/bin/retry"
  # A dynamically linked program, to show that nothing in the root can load it.
  cp "$(type -P true)" "$root/bin/dynamic-true"
  touch "$root/dev/null"
  mount --bind /dev/null "$root/dev/null"
  mount -t proc proc "$root/proc"
  printf '127.0.0.1 localhost\n127.0.0.1 web.test\n' >"$root/etc/hosts"
  printf 'nameserver 127.0.0.1\nsearch example.test\noptions timeout:1 attempts:1\n' \
    >"$root/etc/resolv.conf"
  cp "$work/pki/ca.pem" "$root/pki/ca.pem"
}

make_pki() {
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  mkdir -p "$work/pki"
  (
    cd "$work/pki" &&
      openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj "/CN=retry test CA" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign &&
      openssl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=web.test &&
      printf 'subjectAltName=DNS:web.test,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
        >ext.cnf &&
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out server.pem -days 2 -extfile ext.cnf
  ) >/dev/null 2>&1
}

# HTTP on 127.0.0.1:8080 (and [::1]:8080), HTTPS on 127.0.0.1:8443, in this
# network namespace only: /ok answers 200 "hello", /status/N answers N.
start_web() {
  cat >"$work/serve.py" <<'EOF'
import http.server, socket, ssl, sys, threading

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/ok":
            code, body = 200, b"hello\n"
        elif self.path.startswith("/status/"):
            code, body = int(self.path[len("/status/"):]), b"no\n"
        else:
            code, body = 404, b""
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

class V6(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6

pki, ready, ipv6 = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 8080), Handler)]
if ipv6:
    servers.append(V6(("::1", 8080), Handler))
tls = http.server.ThreadingHTTPServer(("127.0.0.1", 8443), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(pki + "/server.pem", pki + "/server.key")
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
servers.append(tls)
for s in servers:
    threading.Thread(target=s.serve_forever, daemon=True).start()
open(ready, "w").close()
threading.Event().wait()
EOF
  python3 "$work/serve.py" "$work/pki" "$work/web.ready" "$ipv6" &
  within_10s test -e "$work/web.ready"
}

# The checkout's glibc build, on the host's root, with this mount
# namespace's own /etc/hosts, /etc/resolv.conf and /etc/nsswitch.conf (the
# root's, and "hosts: files dns"): the names the static binary resolved,
# resolved alike. Sets rc, out and err as run does.
run_glibc() {
  env -i PATH=/usr/bin:/bin HOME=/tmp "$@" >"$work/out" 2>"$work/err"
  rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
}
glibc_resolves_alike() {
  printf 'hosts: files dns\n' >"$work/nsswitch.conf"
  if ! mount --bind "$root/etc/hosts" /etc/hosts ||
    ! mount --bind "$root/etc/resolv.conf" /etc/resolv.conf ||
    ! mount --bind "$work/nsswitch.conf" /etc/nsswitch.conf; then
    bad "this mount namespace gets its own /etc/hosts, resolv.conf and nsswitch.conf"
    return
  fi
  local url
  for url in http://web.test:8080/ok http://web:8080/ok http://web.example.test:8080/ok; do
    run_glibc "$glibc_build" --max 1 --http "$url"
    check "glibc build: --http $url, as the static binary" test "$rc-$out" = "0-hello"
  done
  if [ "$ipv6" = 1 ]; then
    run_glibc "$glibc_build" --max 1 --http http://web6:8080/ok
    check "glibc build: --http to a name with an AAAA record only, as the static binary" \
      test "$rc-$out" = "0-hello"
  fi
  run_glibc "$glibc_build" --max 1 --tcp web:8080
  expect "glibc build: --tcp by DNS with the search domain, as the static binary" 0
  run_glibc "$glibc_build" --max 1 --http http://nowhere.example.test:8080/ok
  expect "glibc build: a name DNS does not know, exit 6 as the static binary" 6
  run_glibc SSL_CERT_FILE="$work/pki/ca.pem" "$glibc_build" --max 1 --http https://web.test:8443/ok
  check "glibc build: https trusting SSL_CERT_FILE, as the static binary" test "$rc-$out" = "0-hello"
}

listening() { [ -n "$(ss -Hln "$@" 2>/dev/null)" ]; }

inside() {
  ip link set lo up
  ipv6=0
  if ip -6 addr show dev lo 2>/dev/null | grep -q '::1/128'; then ipv6=1; fi
  make_pki || {
    bad "openssl makes a CA and a server certificate"
    return
  }
  make_root
  start_web || bad "the HTTP servers start on 127.0.0.1"
  # DNS on 127.0.0.1:53, the only source of example.test's names: it
  # answers for that domain alone (web.example.test, and web6 on ::1), from
  # neither the host's resolver nor its /etc/hosts.
  dnsmasq --keep-in-foreground --port=53 --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --user=root --pid-file= --local=/example.test/ \
    --host-record=web.example.test,127.0.0.1 --host-record=web6.example.test,::1 \
    2>"$work/dnsmasq.log" &
  within_10s listening -u 'sport = :53' || bad "dnsmasq answers on 127.0.0.1:53"
  redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly no \
    >"$work/redis.log" 2>&1 &
  within_10s listening -t 'sport = :6379' || bad "redis-server listens on 127.0.0.1:6379"

  # -- the root itself
  check "the root holds no C library and no dynamic loader" \
    test -z "$(find "$root" -path "$root/proc" -prune -o \( -name 'ld-*' -o -name 'libc*' -o -name '*.so*' \) -print)"
  run /bin/dynamic-true
  check "a dynamically linked program cannot run in it (positive control)" test "$rc" != 0

  # -- the entry point
  run retry --version
  check "retry --version names $version" test "$rc-$out" = "0-retry $version"
  run retry --max 2 --base 10ms -- sh -c 'exit 4'
  expect "arguments: a command retried, exit status its own" 4
  check "  and each attempt logged" has "attempt 2/2 failed (exit 4)" "$err"
  run RETRY_MAX=3 retry --base 0 -- false
  check "environment: RETRY_MAX=3 sets the attempts" has "giving up after 3 attempts" "$err"
  run GREETING=hi retry -- sh -c 'printf %s "$GREETING"'
  check "environment: the command sees its variables" test "$rc-$out" = "0-hi"
  run retry --max 1 -- sh -c 'for fd in 0 1 2; do [ -e /proc/$$/fd/$fd ] && echo "$fd open" >&2 || echo "$fd closed" >&2; done'
  check "standard descriptors: all three open by default (control)" \
    test "$(grep -c '^[012] open$' "$work/err")" = 3
  chroot "$root" /bin/env -i PATH=/usr/local/bin:/bin retry --max 1 -- \
    sh -c 'for fd in 0 1 2; do [ -e /proc/$$/fd/$fd ] && echo "$fd open" >&2 || echo "$fd closed" >&2; done' \
    <&- >&- 2>"$work/err"
  check "standard descriptors: closed stdin and stdout stay closed for the command" \
    test "$(grep '^[012] ' "$work/err" | tr '\n' ' ')" = "0 closed 1 closed 2 open "
  run retry -- sh -c 'grep SigIgn /proc/$$/status'
  check "SIGPIPE: default for the command when retry got it default" sigpipe_is default
  out=$(trap '' PIPE && chroot "$root" /bin/env -i PATH=/usr/local/bin:/bin retry -- sh -c 'grep SigIgn /proc/$$/status')
  check "SIGPIPE: still ignored for the command when retry got it ignored" sigpipe_is ignored

  # -- command mode
  run retry --max 5 --base 10ms -- sh -c 'n=$(cat /tmp/n 2>/dev/null || echo 0); echo $((n + 1)) >/tmp/n; [ "$n" -ge 2 ]'
  expect "a command that succeeds on its third attempt: exit 0" 0
  check "  after exactly three attempts" test "$(cat "$root/tmp/n")" = 3
  run retry -- no-such-command
  expect "a command that does not exist: 127" 127
  run retry -- /etc/hosts
  expect "a command that is not executable: 126" 126
  chroot "$root" /bin/env -i PATH=/usr/local/bin:/bin retry --max 1 --timeout 1s -- \
    sh -c '/bin/busybox sleep 61 & /bin/busybox sleep 62' >/dev/null 2>&1 &
  local job=$!
  # (By its path: busybox's shell runs a plain `sleep` in a forked copy of
  # itself, whose command line stays the shell's.)
  check "--timeout: the command and its background job run (control)" \
    within_10s running /bin/busybox sleep 61
  wait "$job"
  rc=$?
  expect "--timeout: exit 124" 124
  check "--timeout: no process of the command's group is left" \
    within_10s none_left

  # -- names, HTTP and TCP
  run retry --max 1 --http http://web.test:8080/ok
  check "--http to a name from /etc/hosts" test "$rc-$out" = "0-hello"
  run retry --max 2 --base 10ms --http http://web.test:8080/status/503
  expect "--http: 503 retried, then exit 22" 22
  run retry --max 1 --http http://web:8080/ok
  check "--http by DNS, through resolv.conf's search domain (web -> web.example.test)" \
    test "$rc-$out" = "0-hello"
  run retry --max 1 --http http://web.example.test:8080/ok
  check "--http by DNS, a full name" test "$rc-$out" = "0-hello"
  run retry --max 1 --http http://nowhere.example.test:8080/ok
  expect "--http: a name DNS does not know: exit 6" 6
  if [ "$ipv6" = 1 ]; then
    run retry --max 1 --http 'http://[::1]:8080/ok'
    check "--http to an IPv6 literal" test "$rc-$out" = "0-hello"
    run retry --max 1 --tcp '[::1]:8080'
    expect "--tcp to an IPv6 literal" 0
    run retry --max 1 --http http://web6:8080/ok
    check "--http to a name DNS gives as an IPv6 address only (AAAA)" test "$rc-$out" = "0-hello"
  else
    skip "IPv6 literals: this kernel gives loopback no ::1"
  fi
  run retry --max 1 --tcp web.test:8080
  expect "--tcp to a name from /etc/hosts" 0
  run retry --max 1 --tcp web:8080
  expect "--tcp by DNS with the search domain" 0
  run retry --max 1 --tcp 127.0.0.1:1
  expect "--tcp to a closed port: exit 7" 7

  # -- TLS
  run retry --max 1 --http https://web.test:8443/ok --cacert /pki/ca.pem
  check "https with --cacert" test "$rc-$out" = "0-hello"
  run retry --max 1 --http https://web.test:8443/ok
  expect "https with no CA store at all fails as a TLS failure: 35 (control)" 35
  local store
  for store in /etc/ssl/certs/ca-certificates.crt \
    /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem /etc/pki/tls/certs/ca-bundle.crt \
    /etc/ssl/cert.pem; do
    mkdir -p "$root${store%/*}"
    cp "$work/pki/ca.pem" "$root$store"
    run retry --max 1 --http https://web.test:8443/ok
    check "https trusting the system CA store at $store" test "$rc-$out" = "0-hello"
    rm -rf "$root/etc/ssl" "$root/etc/pki"
  done
  run SSL_CERT_FILE=/pki/ca.pem retry --max 1 --http https://web.test:8443/ok
  check "https trusting SSL_CERT_FILE" test "$rc-$out" = "0-hello"

  # -- the glibc build beside it, resolving the same names
  if [ -n "${glibc_build:-}" ]; then
    glibc_resolves_alike
  else
    skip "the glibc build's name resolution: no glibc build to compare with"
  fi

  # -- shared state, metrics, held output
  mkdir -m700 "$root/tmp/home"
  local store_at
  for store_at in local redis://127.0.0.1:6379; do
    local flags=(--group "g-${store_at%%:*}" --breaker 2:1m --max 1)
    [ "$store_at" = local ] || flags+=(--state "$store_at" --state-required)
    rm -f "$root/tmp/ran"
    run retry "${flags[@]}" -- false
    run retry "${flags[@]}" -- false
    expect "$store_at store: a failed run" 1
    run retry "${flags[@]}" -- touch /tmp/ran
    expect "$store_at store: the breaker opens after two failed runs: 75" 75
    check "$store_at store: and the command did not run" test ! -e "$root/tmp/ran"
  done
  check "local store: the state is in the home directory" \
    test -n "$(find "$root/tmp/home" -name 'g-local.json')"
  check "redis store: the state is in Redis" \
    test "$(redis-cli -p 6379 exists 'retry:{g-redis}:state')" = 1
  run retry --max 1 --metrics-file /tmp/m.prom -- true
  check "--metrics-file: written, the run a success" \
    grep -q '^retry_last_run_success{.*} 1$' "$root/tmp/m.prom"
  run retry -qq --hold-output --max 3 --base 10ms -- sh -c 'echo "attempt $RETRY_ATTEMPT"; exit 1'
  check "--hold-output: only the last attempt's output, after giving up" test "$rc-$out" = "1-attempt 3"
  run retry -q --hold-output --max 3 --base 10ms -- sh -c 'echo "attempt $RETRY_ATTEMPT"; [ "$RETRY_ATTEMPT" = 2 ]'
  check "--hold-output: nothing from a run that recovers" test "$rc-$out-$err" = "0--"
}

if [ "${1:-}" = --in-namespaces ]; then
  work=$2
  root=$work/root
  inside
  echo "$passed $failed $skipped" >"$work/counts"
  # Servers and leftovers end with this PID namespace.
  exit 0
fi

# ---- outside: the binaries, the root's namespaces, aarch64 under qemu ---------------

if [ ! -x "$x86" ] || [ ! -x "$arm" ]; then
  if ! bash scripts/package.sh; then
    bad "scripts/package.sh builds dist/"
    finish
    exit 1
  fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for pair in "$x86:x86-64" "$arm:ARM aarch64"; do
  bin=${pair%%:*}
  check "$bin is a static position-independent executable for ${pair#*:}" \
    bash -c "file -L '$bin' | grep -q 'LSB pie executable, ${pair#*:},.*static-pie linked'"
  check "$bin asks for no dynamic loader and no shared library" \
    bash -c "! readelf -lW '$bin' | grep -q INTERP && ! readelf -dW '$bin' | grep -q NEEDED"
done

# The checkout's own build (glibc) stays the conventional one: packed
# relative relocations would make it need glibc 2.36 (GLIBC_ABI_DT_RELR).
host=$(cargo build --locked --bin retry --message-format=json 2>/dev/null |
  grep '"reason":"compiler-artifact"' | grep '"kind":\["bin"\]' |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
if [ -z "$host" ]; then
  bad "cargo builds the checkout's own binary"
elif readelf -dW "$host" | grep -q 'NEEDED.*libc\.so'; then
  check "the checkout's build asks for no GLIBC_ABI_DT_RELR (no glibc 2.36 floor)" \
    bash -c "readelf -V --wide '$host' | grep -q 'GLIBC_2' && ! readelf -V --wide '$host' | grep -q GLIBC_ABI_DT_RELR"
else
  skip "the checkout's build is not linked to glibc here: no glibc floor to check"
  host=""
fi

if [ "$(id -u)" != 0 ]; then
  skip "the x86_64 binary in a root without a C library: needs root (chroot, namespaces)"
elif ! unshare --net --mount --pid --fork true 2>/dev/null; then
  skip "the x86_64 binary in a root without a C library: cannot make namespaces here (unshare)"
else
  missing=""
  for tool in busybox python3 openssl dnsmasq redis-server redis-cli ip ss; do
    command -v "$tool" >/dev/null || missing+=" $tool"
  done
  if [ -z "$missing" ] && ! file -L "$(command -v busybox)" | grep -q 'statically linked'; then
    missing+=" busybox-static"
  fi
  if [ -n "$missing" ]; then
    bad "tools for the root without a C library are installed (missing:$missing; scripts/test.sh installs them)"
  else
    mkdir -m700 "$work/ns"
    glibc_build=$host unshare --net --mount --pid --fork --mount-proc --propagation private \
      bash "$0" --in-namespaces "$work/ns"
    if read -r p f s <"$work/ns/counts"; then
      passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    else
      bad "the checks in the namespaces ran to their end"
    fi
  fi
fi

# ---- aarch64 under qemu-user ------------------------------------------------------------

if ! command -v qemu-aarch64 >/dev/null; then
  bad "qemu-aarch64 is installed (qemu-user; scripts/test.sh installs it)"
else
  arm_out=$(qemu-aarch64 "$arm" --version)
  check "aarch64 under qemu: --version names $version" test "$arm_out" = "retry $version"
  qemu-aarch64 "$arm" --max 3 --base 10ms -- sh -c 'exit 3' 2>"$work/arm-err"
  rc=$?
  check "aarch64 under qemu: a command retried to its exit status (3)" test "$rc" = 3
  check "  after three attempts" grep -q 'giving up after 3 attempts' "$work/arm-err"
  for args in "--dry-run --seed 7" "--simulate 1000 --outage 2s --seed 7"; do
    # shellcheck disable=SC2086 # the words of one case
    "$x86" $args >"$work/x86.out" 2>&1
    # shellcheck disable=SC2086
    qemu-aarch64 "$arm" $args >"$work/arm.out" 2>&1
    check "aarch64 under qemu: 'retry $args' prints byte for byte what x86_64 prints" \
      bash -c "test -s '$work/x86.out' && cmp '$work/x86.out' '$work/arm.out'"
  done
fi

finish
