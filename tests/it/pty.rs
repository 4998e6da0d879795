//! A pseudo-terminal harness: a program run as the leader of a new session
//! whose controlling terminal is the pty, as a login shell would be, so
//! that job control, foreground groups and terminal signals are real.
//! The test plays the person at the keyboard through the master side.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Everything the terminal has shown so far, filled by a reader thread.
type Screen = Arc<Mutex<Vec<u8>>>;

pub struct Pty {
    child: Child,
    master: std::fs::File,
    screen: Screen,
    reader: Option<thread::JoinHandle<()>>,
}

impl Pty {
    /// Start `program args` on a new pty with the clean environment of the
    /// harness plus `env`.
    pub fn spawn<S: AsRef<OsStr>>(
        program: impl AsRef<OsStr>,
        args: &[S],
        env: &[(&str, &str)],
    ) -> Pty {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let slave = std::fs::File::from(pty.slave);
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("TERM", "xterm")
            .envs(env.iter().map(|(k, v)| (OsStr::new(k), OsStr::new(v))))
            .args(args)
            .stdin(slave.try_clone().expect("dup"))
            .stdout(slave.try_clone().expect("dup"))
            .stderr(slave);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                // Make the pty (now on fd 0) this session's controlling terminal.
                if nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn on a pty");
        // Our copies of the slave side must close, or the master never sees the end.
        drop(cmd);
        let master = std::fs::File::from(pty.master);
        let screen: Screen = Arc::default();
        let mut reading = master.try_clone().expect("dup master");
        let sink = Arc::clone(&screen);
        let reader = thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            loop {
                match reading.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => sink.lock().expect("screen").extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    // Linux reports EIO once every slave descriptor is closed.
                    Err(_) => break,
                }
            }
        });
        Pty {
            child,
            master,
            screen,
            reader: Some(reader),
        }
    }

    /// Start `retry args` on a new pty.
    pub fn retry(args: &[&str], env: &[(&str, &str)]) -> Pty {
        Pty::spawn(crate::util::bin(), args, env)
    }

    /// Type bytes at the keyboard (`\x03` is Ctrl-C, `\x1a` Ctrl-Z).
    pub fn type_keys(&mut self, keys: &[u8]) {
        self.master.write_all(keys).expect("type");
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().expect("screen")).into_owned()
    }

    /// Wait until the screen shows `text` (after `from` bytes of it); fails
    /// the test with the screen after `within`. Returns where it ends.
    #[track_caller]
    pub fn expect_after(&self, from: usize, text: &str, within: Duration) -> usize {
        let until = Instant::now() + within;
        loop {
            let screen = self.screen();
            if let Some(at) = screen.get(from..).and_then(|s| s.find(text)) {
                return from + at + text.len();
            }
            assert!(
                Instant::now() < until,
                "never saw {text:?} on the terminal; it shows:\n{screen}\n{}",
                self.session()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// The processes of the pty's session, as /proc shows them: state,
    /// groups, the terminal's foreground group and signal masks, for a test
    /// that fails waiting for job control.
    fn session(&self) -> String {
        let sid = self.child.id().to_string();
        let mut out = String::from("pid ppid pgrp tpgid state comm | SigBlk SigIgn SigCgt\n");
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let dir = entry.path();
            let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
                continue;
            };
            // After the command's name, in parentheses: state ppid pgrp session tty tpgid.
            let Some((head, rest)) = stat.rsplit_once(") ") else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.get(3) != Some(&sid.as_str()) {
                continue;
            }
            let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
            let masks: Vec<&str> = status
                .lines()
                .filter(|l| {
                    l.starts_with("SigBlk") || l.starts_with("SigIgn") || l.starts_with("SigCgt")
                })
                .filter_map(|l| l.split_whitespace().nth(1))
                .collect();
            let (pid, comm) = head.split_once(" (").unwrap_or((head, ""));
            out.push_str(&format!(
                "{pid} {} {} {} {} {comm} | {}\n",
                f[1],
                f[2],
                f.get(5).unwrap_or(&"?"),
                f[0],
                masks.join(" ")
            ));
        }
        out
    }

    #[track_caller]
    pub fn expect(&self, text: &str, within: Duration) -> usize {
        self.expect_after(0, text, within)
    }

    /// Wait for the program to exit; returns its exit code (None if killed).
    #[track_caller]
    pub fn wait(mut self, within: Duration) -> (String, Option<i32>) {
        let until = Instant::now() + within;
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                break st;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                panic!(
                    "still running after {within:?}; the terminal shows:\n{}",
                    self.screen()
                );
            }
            thread::sleep(Duration::from_millis(10));
        };
        // Let the reader drain what is left; a leftover that holds the slave
        // open must not hang the test, so the wait is bounded.
        if let Some(r) = self.reader.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while !r.is_finished() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(10));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
        (self.screen(), status.code())
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        // A failed test must not leave the session running.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = self.child.wait();
        }
    }
}

/// Run `retry args` on a pty to its end; returns what the terminal showed
/// and the exit code.
pub fn run_retry(args: &[&str], env: &[(&str, &str)]) -> (String, Option<i32>) {
    Pty::retry(args, env).wait(Duration::from_secs(60))
}
