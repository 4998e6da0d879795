//! Starting COMMAND: `clone(CLONE_VM | CLONE_VFORK)` and exec, with the
//! set-up an attempt needs done in the child in between (`crate::sys`:
//! elsewhere than Linux, `fork` and exec).
//!
//! std's `Command` can run code between fork and exec (`pre_exec`), but
//! only by giving up posix_spawn for a full fork, which copies retry's page
//! tables and takes a fault on every page either side writes before the
//! exec: about a quarter of a millisecond on every attempt. The parent-death
//! signal cannot be asked of posix_spawn, so retry starts children the way
//! posix_spawn does inside glibc: the child borrows retry's memory and runs
//! on a stack of its own while retry waits for it to exec or fail.
//!
//! Everything the child uses is prepared by the parent: the child makes
//! system calls only. It never allocates, takes a lock, or returns.
//!
//! Between the clone and the exec the child:
//! 1. has every signal blocked (the parent blocked them around the clone),
//!    so no handler of retry's can run on the shared memory; it sets every
//!    signal retry catches back to its default, and SIGPIPE to what retry's
//!    own parent gave (std resets it to the default);
//! 2. joins a new process group, unless asked not to, and publishes its id
//!    where it was asked to (for the watchdog);
//! 3. asks for SIGKILL when retry dies, and gives up if retry already has;
//! 4. takes the terminal's foreground, when given one (SIGTTOU is blocked);
//! 5. moves the descriptors it was given onto 0, 1 and 2, and closes those
//!    of 0, 1 and 2 that retry itself was given closed;
//! 6. unblocks every signal, as std does for a child;
//! 7. execs the program found on PATH as execvp(3) would: every directory in
//!    turn, a file that is not an executable format is run by /bin/sh, and
//!    EACCES is reported only when no directory had the program.
//!
//! A failure is reported through memory the parent reads once the child has
//! exited (a vfork child's writes are the parent's; a forked child's go
//! through a pipe, `crate::sys::exec_failed`).

use std::ffi::{CString, OsStr, OsString, c_char, c_int, c_void};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::libc;
use nix::unistd::Pid;

use crate::sys::ChildStack;

/// What to start, and how.
pub struct Spawn<'a> {
    pub program: &'a OsStr,
    pub args: &'a [OsString],
    /// Added to retry's own environment, replacing a variable of the same name.
    pub env: &'a [(&'a str, String)],
    /// Descriptors for the child's stdin, stdout and stderr; None inherits
    /// retry's own.
    pub stdio: [Option<RawFd>; 3],
    /// Of the inherited ones, those to close in the child: retry was given
    /// them closed (and holds /dev/null in their place).
    pub closed: [bool; 3],
    /// Start a new process group (the attempt's), led by the child.
    pub new_group: bool,
    /// Where the child writes its pid, the new group's id, before its exec
    /// (for the watchdog: no window in which the group exists unpublished).
    pub publish: Option<&'a AtomicI32>,
    /// The terminal whose foreground the child's new group takes.
    pub terminal: Option<RawFd>,
    /// Give the child SIGPIPE ignored (retry's parent ignored it), rather
    /// than at its default.
    pub sigpipe_ignored: bool,
    /// Signals retry catches, to be set back to their default in the child.
    pub caught: &'a [c_int],
}

/// The shell that runs a file that is not an executable format, as execvp(3) does.
const SHELL: &std::ffi::CStr = c"/bin/sh";

/// PATH when the environment has none: what glibc's execvp uses.
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// Everything the child reads (prepared by the parent) and the one thing it
/// writes (why it failed).
struct Plan<'a> {
    /// Full paths to try, in order.
    candidates: Vec<CString>,
    argv: Vec<*const c_char>,
    /// `/bin/sh`, the candidate, then the arguments: slot 1 is filled in by
    /// the child with the candidate that failed with ENOEXEC.
    sh_argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    stdio: [Option<RawFd>; 3],
    closed: [bool; 3],
    new_group: bool,
    publish: Option<&'a AtomicI32>,
    terminal: Option<RawFd>,
    sigpipe: libc::sighandler_t,
    caught: &'a [c_int],
    parent: libc::pid_t,
    /// errno of the step that failed; 0 while none has.
    error: AtomicI32,
}

/// Start the child; its pid once it has exec'd. When it could not, the
/// child has been reaped and the error is the errno execvp(3) would give.
pub fn spawn(s: &Spawn) -> io::Result<Pid> {
    // The strings the pointers in the plan point into: they must outlive it.
    let args = s
        .args
        .iter()
        .map(|a| c_string(a.as_bytes()))
        .collect::<io::Result<Vec<_>>>()?;
    let env = environment(s.env)?;
    let program = c_string(s.program.as_bytes())?;
    let mut plan = Plan {
        candidates: candidates(s.program.as_bytes(), std::env::var_os("PATH"))?,
        argv: null_terminated(std::iter::once(&program).chain(&args)),
        sh_argv: null_terminated([SHELL, SHELL].into_iter().chain(args.iter().map(|a| &**a))),
        envp: null_terminated(&env),
        stdio: s.stdio,
        closed: s.closed,
        new_group: s.new_group,
        publish: s.publish,
        terminal: s.terminal,
        sigpipe: if s.sigpipe_ignored {
            libc::SIG_IGN
        } else {
            libc::SIG_DFL
        },
        caught: s.caught,
        // SAFETY: getpid has no preconditions.
        parent: unsafe { libc::getpid() },
        error: AtomicI32::new(0),
    };
    if plan.candidates.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let stack = ChildStack::new()?;
    let pid = clone_child(&mut plan, &stack)?;
    match plan.error.load(Ordering::Acquire) {
        0 => Ok(Pid::from_raw(pid)),
        errno => {
            // The child exited without exec'ing: reap it here, so it is
            // never counted or reported as an attempt's process.
            let mut status = 0;
            // SAFETY: waiting for our own child, which has exited.
            while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
                && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

/// Clone the child with every signal blocked (see `clone_blocked`).
fn clone_child(plan: &mut Plan<'_>, stack: &ChildStack) -> io::Result<libc::pid_t> {
    let plan = std::ptr::from_mut(plan);
    // SAFETY: `child` only makes system calls on memory the plan owns and
    // on its own stack; CLONE_VFORK suspends this thread until the child
    // has exec'd or exited, so the plan and the stack outlive its use.
    // The error slot is an atomic, shared with the child by design.
    clone_blocked(|| unsafe {
        crate::sys::clone_vfork(child, stack.top(), plan.cast::<c_void>(), &(*plan).error)
    })
}

/// Block every signal, run `clone` (the closure), and restore the mask: the
/// new process starts with every signal blocked and no handler of retry's
/// can run in it. A negative pid is the error clone left in errno.
pub(super) fn clone_blocked(clone: impl FnOnce() -> libc::pid_t) -> io::Result<libc::pid_t> {
    // SAFETY: sigset_t is plain data, filled in by sigfillset.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `old` receives the current mask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to sigset_t values on this stack.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    let pid = clone();
    let err = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if pid < 0 { Err(err) } else { Ok(pid) }
}

/// The child, from clone to exec. System calls only: see the module doc.
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the plan clone_child passed, alive while the parent waits.
    let plan = unsafe { &mut *arg.cast::<Plan<'_>>() };
    // SAFETY: each call below is a system call (or glibc's thin wrapper of
    // one) on values the plan holds; none allocates or locks.
    unsafe {
        for &sig in plan.caught {
            libc::signal(sig, libc::SIG_DFL);
        }
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::signal(libc::SIGPIPE, plan.sigpipe);
        if plan.new_group && libc::setpgid(0, 0) < 0 {
            return fail(plan);
        }
        if let Some(slot) = plan.publish {
            slot.store(libc::getpid(), Ordering::Release);
        }
        // Die with retry, even when it is killed with SIGKILL; and if retry
        // is already gone, do not start at all.
        crate::sys::die_with_parent();
        if libc::getppid() != plan.parent {
            libc::_exit(127);
        }
        if let Some(tty) = plan.terminal {
            // Fails harmlessly when the terminal is gone; SIGTTOU is blocked.
            libc::tcsetpgrp(tty, libc::getpid());
        }
        for (to, from) in plan.stdio.iter().enumerate() {
            let Some(from) = *from else { continue };
            let to = to as c_int;
            let moved = if from == to {
                libc::fcntl(from, libc::F_SETFD, 0)
            } else {
                libc::dup2(from, to)
            };
            if moved < 0 {
                return fail(plan);
            }
        }
        for (fd, closed) in plan.closed.iter().enumerate() {
            if *closed && plan.stdio[fd].is_none() {
                libc::close(fd as c_int);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());

        // execvp(3)'s search: go on past a directory without the program;
        // report EACCES only if no directory had it.
        let mut denied = false;
        for path in &plan.candidates {
            libc::execve(path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
            match errno() {
                libc::ENOEXEC => {
                    plan.sh_argv[1] = path.as_ptr();
                    libc::execve(SHELL.as_ptr(), plan.sh_argv.as_ptr(), plan.envp.as_ptr());
                    return fail(plan);
                }
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => return fail(plan),
            }
        }
        if denied {
            report(plan, libc::EACCES);
        }
        fail(plan)
    }
}

/// Record errno for the parent and end the child.
fn fail(plan: &Plan<'_>) -> c_int {
    // 0 would read as success: an unknown failure is reported as ENOEXEC.
    let e = match errno() {
        0 => libc::ENOEXEC,
        e => e,
    };
    report(plan, e)
}

/// Tell the parent why the child could not exec, and end the child.
fn report(plan: &Plan<'_>, e: c_int) -> ! {
    plan.error.store(e, Ordering::Release);
    crate::sys::exec_failed(e);
    // SAFETY: _exit ends the child without running anything of retry's.
    unsafe { libc::_exit(127) }
}

fn errno() -> c_int {
    // Reads the calling thread's errno; the child shares the parent's,
    // which is suspended.
    nix::errno::Errno::last_raw()
}

/// The paths execvp(3) would try for `program`, in order: the program
/// itself when it names a path, else each PATH directory joined with it (an
/// empty directory is the current one).
fn candidates(program: &[u8], path: Option<OsString>) -> io::Result<Vec<CString>> {
    if program.is_empty() {
        return Ok(Vec::new());
    }
    if program.contains(&b'/') {
        return Ok(vec![c_string(program)?]);
    }
    let path = path.map_or_else(|| DEFAULT_PATH.to_vec(), OsString::into_vec);
    path.split(|&b| b == b':')
        .map(|dir| {
            let mut full = Vec::with_capacity(dir.len() + 1 + program.len());
            if !dir.is_empty() {
                full.extend_from_slice(dir);
                full.push(b'/');
            }
            full.extend_from_slice(program);
            c_string(&full)
        })
        .collect()
}

/// retry's environment with `extra` set on top, as `NAME=value` strings.
fn environment(extra: &[(&str, String)]) -> io::Result<Vec<CString>> {
    let mut out = Vec::new();
    for (name, value) in std::env::vars_os() {
        if extra.iter().any(|(n, _)| OsStr::new(n) == name) {
            continue;
        }
        let mut entry = name.into_vec();
        entry.push(b'=');
        entry.extend_from_slice(value.as_bytes());
        out.push(c_string(&entry)?);
    }
    for (name, value) in extra {
        out.push(c_string(format!("{name}={value}").as_bytes())?);
    }
    Ok(out)
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument or variable contains a NUL byte",
        )
    })
}

fn null_terminated<'a, S: AsRef<std::ffi::CStr> + 'a + ?Sized>(
    strings: impl IntoIterator<Item = &'a S>,
) -> Vec<*const c_char> {
    strings
        .into_iter()
        .map(|s| s.as_ref().as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(program: &str, path: Option<&str>) -> Vec<String> {
        candidates(program.as_bytes(), path.map(OsString::from))
            .expect("no NUL")
            .into_iter()
            .map(|c| c.into_string().expect("utf-8"))
            .collect()
    }

    #[test]
    fn a_program_is_looked_for_in_each_path_directory_in_order() {
        assert_eq!(
            paths("prog", Some("/a:/b/c:")),
            ["/a/prog", "/b/c/prog", "prog"]
        );
        assert_eq!(paths("prog", None), ["/bin/prog", "/usr/bin/prog"]);
        assert_eq!(paths("./prog", Some("/a")), ["./prog"]);
        assert_eq!(paths("d/prog", Some("/a")), ["d/prog"]);
        assert!(paths("", Some("/a")).is_empty());
    }

    #[test]
    fn extra_variables_replace_inherited_ones() {
        let path = std::env::var("PATH").expect("PATH is set");
        let env =
            environment(&[("PATH", "/x".into()), ("RETRY_TEST_NEW", "1".into())]).expect("no NUL");
        let env: Vec<_> = env.iter().map(|c| c.to_str().expect("utf-8")).collect();
        assert!(env.contains(&"PATH=/x"));
        assert!(!env.contains(&format!("PATH={path}").as_str()));
        assert!(env.contains(&"RETRY_TEST_NEW=1"));
    }

    fn run(program: &str, args: &[&str]) -> io::Result<i32> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let pid = spawn(&Spawn {
            program: OsStr::new(program),
            args: &args,
            env: &[("RETRY_TEST_SPAWN", "7".into())],
            stdio: [None; 3],
            closed: [false; 3],
            new_group: true,
            publish: None,
            terminal: None,
            sigpipe_ignored: false,
            caught: &[],
        })?;
        let status = nix::sys::wait::waitpid(pid, None).expect("waitpid");
        match status {
            nix::sys::wait::WaitStatus::Exited(_, code) => Ok(code),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn starts_a_program_from_path_with_its_arguments_and_variables() {
        assert_eq!(
            run("sh", &["-c", r#"test "$RETRY_TEST_SPAWN" = 7 && exit 3"#]).expect("spawns"),
            3
        );
    }

    #[test]
    fn reports_why_a_program_could_not_start() {
        let missing = run("retry-test-no-such-program", &[]).expect_err("fails");
        assert_eq!(missing.raw_os_error(), Some(libc::ENOENT));
        let dir = run("/", &[]).expect_err("fails");
        assert_eq!(dir.raw_os_error(), Some(libc::EACCES));
        let empty = run("", &[]).expect_err("fails");
        assert_eq!(empty.raw_os_error(), Some(libc::ENOENT));
    }
}
