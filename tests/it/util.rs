//! A small fluent harness around the real `retry` binary: build an
//! invocation, run it to the end or spawn it to signal it, and inspect
//! status, output, elapsed time and JSON log lines.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Longest any single invocation may take before the test fails instead of hanging.
const HARD_LIMIT: Duration = Duration::from_secs(60);

pub fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("retry")
}

/// The real binary with a known environment: nothing inherited that could
/// change its behaviour (RETRY_*, GITHUB_ACTIONS, NO_COLOR, COLUMNS, TERM).
pub fn command() -> Command {
    let mut cmd = Command::new(bin());
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd
}

/// An invocation of `retry` being built.
pub struct Retry {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

/// `retry ARGS...`
pub fn retry<I, S>(args: I) -> Retry
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = command();
    cmd.args(args);
    Retry { cmd, stdin: None }
}

/// `retry [ARGS...] -- sh -c SCRIPT`
pub fn retry_sh(args: &[&str], script: &str) -> Retry {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", "sh", "-c", script]);
    retry(all)
}

impl Retry {
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Run to completion.
    pub fn run(self) -> Outcome {
        self.spawn().wait()
    }

    /// Run to completion with stdout and stderr on one pipe, as `2>&1 |`
    /// does: the exit status and everything that came out, in order.
    pub fn run_merged(self) -> (i32, Vec<u8>) {
        let Retry { mut cmd, stdin } = self;
        assert!(stdin.is_none(), "run_merged gives retry no stdin");
        let (reader, writer) = std::io::pipe().expect("pipe");
        cmd.stdin(Stdio::null())
            .stdout(writer.try_clone().expect("dup"))
            .stderr(writer);
        let mut child = cmd.spawn().expect("spawn retry");
        // The command's copies of the write end must close, or the read
        // never ends.
        drop(cmd);
        let out = drain(reader);
        let status = exit_within(&mut child, HARD_LIMIT);
        let out = out
            .recv_timeout(Duration::from_secs(10))
            .expect("output still held open after retry exited");
        (status.code().expect("retry exited"), out)
    }

    /// Start it and return at once, to signal it while it runs.
    pub fn spawn(mut self) -> Running {
        self.cmd
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = self.cmd.spawn().expect("spawn retry");
        if let Some(bytes) = self.stdin.take() {
            let mut pipe = child.stdin.take().expect("stdin pipe");
            thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&bytes);
            });
        }
        let stdout = drain(child.stdout.take().expect("stdout pipe"));
        let stderr = drain(child.stderr.take().expect("stderr pipe"));
        Running {
            child,
            started,
            stdout,
            stderr,
            reader: None,
        }
    }

    /// Start it with its stdout a pipe into `sleep 60`, a reader that
    /// never reads (`retry … | sleep 60`), and return at once. The reader
    /// is killed once retry has ended; the outcome's stdout is empty.
    pub fn spawn_into_sleep(self) -> Running {
        let Retry { mut cmd, stdin } = self;
        assert!(stdin.is_none(), "spawn_into_sleep gives retry no stdin");
        let (reader, writer) = std::io::pipe().expect("pipe");
        let sleep = Command::new("sleep")
            .arg("60")
            .stdin(reader)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn sleep");
        cmd.stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawn retry");
        // retry's must be the only write end.
        drop(cmd);
        let stderr = drain(child.stderr.take().expect("stderr pipe"));
        let (tx, stdout) = mpsc::channel();
        let _ = tx.send(Vec::new());
        Running {
            child,
            started,
            stdout,
            stderr,
            reader: Some(sleep),
        }
    }
}

/// Read a pipe to its end on a thread, so a full pipe never blocks the child.
fn drain(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// A `retry` process under way.
pub struct Running {
    child: Child,
    started: Instant,
    stdout: mpsc::Receiver<Vec<u8>>,
    stderr: mpsc::Receiver<Vec<u8>>,
    /// The reader of `spawn_into_sleep`, which never reads.
    reader: Option<Child>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut reader) = self.reader.take() {
            let _ = reader.kill();
            let _ = reader.wait();
        }
    }
}

impl Running {
    pub fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    pub fn signal(&self, sig: Signal) {
        kill(self.pid(), sig).expect("signal retry");
    }

    /// Wait for it to end, however it ends (a death by signal included).
    pub fn wait_status(mut self) -> std::process::ExitStatus {
        self.child.wait().expect("wait")
    }

    /// Wait for it to exit; kill it and fail the test past the hard limit.
    pub fn wait(mut self) -> Outcome {
        let left = HARD_LIMIT.saturating_sub(self.started.elapsed());
        let status = exit_within(&mut self.child, left);
        let elapsed = self.started.elapsed();
        drop(
            self.reader
                .take()
                .map(|mut r| r.kill().and_then(|()| r.wait())),
        );
        // A leaked grandchild holding a pipe open would block here: bound it.
        let take = |rx: &mpsc::Receiver<Vec<u8>>, name: &str| {
            rx.recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("{name} still held open after retry exited"))
        };
        let stdout = take(&self.stdout, "stdout");
        let stderr = take(&self.stderr, "stderr");
        Outcome {
            code: std::os::unix::process::ExitStatusExt::into_raw(status),
            exit: status.code(),
            stdout,
            stderr,
            elapsed,
        }
    }
}

/// How an invocation ended.
#[derive(Debug)]
pub struct Outcome {
    code: i32,
    exit: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
}

impl Outcome {
    /// What `Command::output` gave, for invocations the harness did not start.
    pub fn from_output(out: std::process::Output) -> Outcome {
        Outcome {
            code: std::os::unix::process::ExitStatusExt::into_raw(out.status),
            exit: out.status.code(),
            stdout: out.stdout,
            stderr: out.stderr,
            elapsed: Duration::ZERO,
        }
    }

    /// The exit status; fails the test if retry itself died of a signal.
    pub fn code(&self) -> i32 {
        self.exit.unwrap_or_else(|| {
            panic!(
                "retry died of a signal (raw status {}); stderr: {}",
                self.code,
                self.stderr_text()
            )
        })
    }

    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr_text().lines().map(str::to_string).collect()
    }

    /// Every stderr line parsed as JSON; fails on a line that is not.
    pub fn json(&self) -> Vec<serde_json::Value> {
        self.stderr_lines()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
            .collect()
    }

    /// Assert the exit status, showing stderr on failure.
    #[track_caller]
    pub fn expect_code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code(),
            want,
            "exit status; stderr was:\n{}",
            self.stderr_text()
        );
        self
    }

    /// A usage error: exit 2 and one line on stderr that contains `needle`.
    /// Returns that line.
    #[track_caller]
    pub fn expect_usage_line(&self, needle: &str) -> String {
        self.expect_code(2);
        let err = self.stderr_text();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
        err
    }
}

/// Wait for `child` to end; kill it and fail the test if it is still
/// running after `within`.
#[track_caller]
pub fn exit_within(child: &mut std::process::Child, within: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return st;
        }
        if started.elapsed() > within {
            let _ = child.kill();
            panic!("retry did not finish within {within:?}");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// A fresh temporary directory for files a test's children write.
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// A copy of the binary that any user can run, wherever the checkout lives:
/// in a fresh directory (mode 0755) under a temporary directory whose every
/// ancestor others may search. For tests that switch to another user, who
/// may not reach a build directory under a private home or `mktemp -d`.
pub fn bin_for_anyone() -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_for_anyone();
    let copy = dir.path().join("retry");
    std::fs::copy(bin(), &copy).expect("copy the binary");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).expect("chmod 755");
    (dir, copy)
}

/// A fresh directory (mode 0755) under a temporary directory whose every
/// ancestor others may search.
pub fn scratch_for_anyone() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let searchable = |dir: &Path| {
        dir.ancestors().all(|d| {
            std::fs::metadata(d).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o001 != 0)
        })
    };
    let base = [
        std::env::temp_dir(),
        "/tmp".into(),
        "/var/tmp".into(),
        "/dev/shm".into(),
    ]
    .into_iter()
    .find(|d| searchable(d))
    .expect("a temporary directory that every user can search");
    let dir = tempfile::tempdir_in(base).expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod 755");
    dir
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released), for
/// a server a test starts later or for a port that refuses.
///
/// Taken below the kernel's ephemeral range, where no outgoing connection of
/// the suite (hundreds run beside each test) can take it between its choice
/// and its use, and from a counter, so that no two calls of this process get
/// the same one: a port the kernel hands out for `:0` is free now, and may
/// be handed out again the next instant.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    // Room for a few thousand servers above the well-known and registered
    // ports most hosts run; otherwise the kernel's choice.
    const FLOOR: u32 = 10_000;
    if low < FLOOR + 4_000 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        return l.local_addr().expect("addr").port();
    }
    let span = low - FLOOR;
    // Another process running the suite at once starts elsewhere.
    let start = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = u16::try_from(FLOOR + (start + n) % span).expect("below the ephemeral range");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 from {FLOOR} to {low}");
}

pub fn path_str(p: &Path) -> String {
    p.to_str().expect("utf-8 temp path").to_string()
}

/// Poll until `path` exists; fails after `within`.
#[track_caller]
pub fn wait_for_file(path: &Path, within: Duration) {
    let until = Instant::now() + within;
    while !path.exists() {
        assert!(Instant::now() < until, "{} never appeared", path.display());
        thread::sleep(Duration::from_millis(10));
    }
}

/// Poll until `ready()` holds; fails, naming `what`, after `within`.
#[track_caller]
pub fn wait_until(within: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let until = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < until, "{what}: not within {within:?}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Poll until a line of the file at `path` (a `--log-file`) contains
/// `needle`; returns that line. Fails after `within`.
#[track_caller]
pub fn wait_for_line(path: &Path, needle: &str, within: Duration) -> String {
    let mut found = None;
    wait_until(
        within,
        &format!("no line with {needle:?} in {}", path.display()),
        || {
            found = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| text.lines().find(|l| l.contains(needle)).map(String::from));
            found.is_some()
        },
    );
    found.unwrap_or_default()
}

/// The JSON log's line for a backoff wait that has begun.
pub const SLEEP_EVENT: &str = "\"event\":\"sleep\"";

/// Poll until something accepts connections on 127.0.0.1:`port`; fails,
/// naming `what`, after `within`.
#[track_caller]
pub fn wait_for_port(port: u16, within: Duration, what: &str) {
    let until = Instant::now() + within;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "{what} did not start");
        thread::sleep(Duration::from_millis(20));
    }
}

/// How many connections a listener at `addr`, which notes each peer it
/// accepts in `peers`, had been sent before this call. A listener accepts
/// in order, so once a connection of the test's own is among them, every
/// earlier one is too.
#[track_caller]
pub fn connections_before_now(
    addr: std::net::SocketAddr,
    peers: &std::sync::Mutex<Vec<std::net::SocketAddr>>,
) -> usize {
    let last = std::net::TcpStream::connect(addr).expect("connect to the listener");
    let me = last.local_addr().expect("addr");
    wait_until(
        Duration::from_secs(20),
        "the listener takes a connection",
        || peers.lock().expect("lock").contains(&me),
    );
    peers.lock().expect("lock").len() - 1
}

/// A process's state letter from /proc (R, S, T, Z...); None once it is gone.
fn state_of(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesised command name.
    stat.rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .map(String::from)
}

/// Whether a process is still running (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    !matches!(state_of(pid).as_deref(), Some("Z") | Some("X") | None)
}

/// Whether a process is stopped (SIGSTOP, SIGTSTP).
pub fn stopped(pid: i32) -> bool {
    state_of(pid).is_some_and(|s| s == "T")
}

/// Poll until the process is gone; returns whether it went within `within`.
pub fn gone_within(pid: i32, within: Duration) -> bool {
    let until = Instant::now() + within;
    while alive(pid) {
        if Instant::now() > until {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
    true
}

/// The pid a shell wrote to `path` (`echo $$ > path`): waits, within a
/// bound, for the whole line, since the file exists before the echo is in.
#[track_caller]
pub fn read_pid(path: &PathBuf) -> i32 {
    let mut line = String::new();
    wait_until(
        Duration::from_secs(20),
        &format!("a pid in {}", path.display()),
        || {
            line = std::fs::read_to_string(path).unwrap_or_default();
            line.ends_with('\n')
        },
    );
    line.trim().parse().expect("pid")
}

/// retry's peak resident size (KiB, as `/usr/bin/time` reports it) over a
/// run of `retry ARGS -- sh -c SCRIPT` with stdin and stdout on /dev/null,
/// which must exit with `code`.
pub fn peak_rss_kib(args: &[&str], script: &str, code: i32) -> u64 {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(bin())
        .args(args)
        .args(["--", "sh", "-c", script])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("/usr/bin/time (package time)");
    assert_eq!(out.status.code(), Some(code));
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {text:?}"))
}

/// Whether a test that plays a second user can run: it changes owners and
/// switches users, which needs root (as in CI). Otherwise says so.
pub fn plays_a_second_user() -> bool {
    if nix::unistd::Uid::effective().is_root() {
        true
    } else {
        eprintln!("SKIPPED: this test plays a second user and needs root");
        false
    }
}

/// The second user of the hostile tests.
pub const NOBODY: u32 = 65534;

/// `sh -c SCRIPT` as the unprivileged user `nobody`, not yet started.
/// setpriv (util-linux, installed by scripts/test.sh) also drops root's
/// supplementary groups.
pub fn as_nobody_command(script: &str) -> Command {
    let id = NOBODY.to_string();
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--reuid",
        &id,
        "--regid",
        &id,
        "--clear-groups",
        "sh",
        "-c",
        script,
    ])
    .env_clear()
    .env("PATH", "/usr/bin:/bin");
    cmd
}

/// `sh -c SCRIPT` run as `nobody`; fails the test unless it succeeds.
#[track_caller]
pub fn as_nobody(script: &str) {
    let out = as_nobody_command(script).output().expect("sh as nobody");
    assert!(
        out.status.success(),
        "as nobody: {script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A directory every user may write in and that is sticky, as `/tmp`,
/// inside a scratch directory others may search (so that `nobody` reaches
/// it wherever the checkout lives).
pub struct Sticky {
    _root: tempfile::TempDir,
    pub path: PathBuf,
}

impl Sticky {
    pub fn new() -> Sticky {
        use std::os::unix::fs::PermissionsExt;
        let root = scratch_for_anyone();
        let path = root.path().join("tmp");
        std::fs::create_dir(&path).expect("mkdir");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        Sticky { _root: root, path }
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

/// Fills the tmpfs of [`in_private_tmpfs`] (its `$M`).
pub const FILL_TMPFS: &str = "dd if=/dev/zero of=\"$M/fill\" bs=4k 2>/dev/null || true";

/// Runs `script` (sh, `set -e` until it says otherwise) in a private mount
/// namespace where `$M` is a fresh tmpfs mounted with `options` (`size=64k`,
/// `size=1m,mode=1777`), `$R` is retry and `$O` a directory for what the
/// script leaves the caller. Returns that directory (kept while the
/// `TempDir` lives); None (a counted skip) where such a namespace cannot be
/// made.
pub fn in_private_tmpfs(options: &str, script: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    if !crate::need::unshare(
        &["-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
        "a private mount namespace with a tmpfs",
    ) {
        return None;
    }
    let t = scratch();
    let m = t.path().join("m");
    let o = t.path().join("o");
    std::fs::create_dir(&m).expect("mount point");
    std::fs::create_dir(&o).expect("results");
    let full = format!(
        "set -e; M='{m}'; O='{o}'; R='{r}'
         mount -t tmpfs -o {options} tmpfs \"$M\"
         {script}",
        m = path_str(&m),
        o = path_str(&o),
        r = path_str(bin()),
    );
    let status = Command::new("unshare")
        .args(["-m", "sh", "-c", &full])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .status()
        .expect("unshare");
    assert!(status.success(), "the set-up failed");
    Some((t, o))
}
