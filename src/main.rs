//! Entry point: run, then exit with the status `retry` decided. The only place
//! that exits.
//!
//! What the parent handed over (SIGPIPE's disposition, which standard
//! descriptors were closed) is recorded from an `.init_array` entry, before
//! any start-up code can change it; every libc runs that entry before `main`.
//!
//! On glibc, C's `main`, not std's: std's start-up probes the main thread's
//! stack guard (glibc reads /proc/self/maps for it) and sets up an alternate
//! signal stack, 0.1 to 0.3 ms and over ten page faults on every run, for a
//! stack-overflow message retry does not need. That is correct only where
//! the C library hands `argc`/`argv` to `.init_array` entries, as glibc does
//! and std relies on to fill `std::env::args_os` (bench/README.md measures
//! both entries). Other C libraries (musl, the static release builds) get
//! std's `main`, which stores the arguments itself.
//! (A unit-test build keeps std's `main`: the test harness needs it.)
#![cfg_attr(all(not(test), target_env = "gnu"), no_main)]

// glibc targets: take the unwinder from libgcc_eh.a (as `cc -static-libgcc`
// does) instead of loading libgcc_s.so.1 at every start. The archive comes
// with gcc; `-bundle` leaves it for the C compiler driver to find.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[link(name = "libgcc_eh.a", kind = "static", modifiers = "-bundle,+verbatim")]
unsafe extern "C" {}

/// Runs before std's start-up and before `main`, on every libc (Mach-O
/// names the same list `__mod_init_func`).
#[used]
#[cfg_attr(not(target_vendor = "apple"), unsafe(link_section = ".init_array"))]
#[cfg_attr(
    target_vendor = "apple",
    unsafe(link_section = "__DATA,__mod_init_func")
)]
static AT_START: extern "C" fn() = at_start;

extern "C" fn at_start() {
    // Whether the parent left SIGPIPE ignored (kept ignored for the command).
    retry_tool::signals::record_sigpipe_at_start();
    // A closed standard descriptor is opened on /dev/null, so no file retry
    // opens can take its number, and recorded: children get it closed again.
    // std would open it too, without saying which one was closed.
    retry_tool::stdio::protect_closed();
}

/// The run, with a bug's panic ending it with 101 (as under std's `main`).
#[cfg(not(test))]
fn run() -> u8 {
    std::panic::catch_unwind(retry_tool::main_entry).unwrap_or(101)
}

#[cfg(all(not(test), target_env = "gnu"))]
mod entry {
    use std::ffi::{c_char, c_int};
    use std::io::Write;

    use nix::libc;

    #[unsafe(no_mangle)]
    extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
        // std::env::args_os works: glibc passes argc/argv to std's own
        // .init_array entry, which stores them.
        // As std does: a closed pipe is an EPIPE error on write, not death.
        // SAFETY: setting a disposition to "ignore" installs no handler code.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        let code = super::run();
        let _ = std::io::stdout().flush();
        c_int::from(code)
    }
}

/// std's `main`: it ignores SIGPIPE, stores the arguments, and flushes
/// stdout at exit.
#[cfg(all(not(test), not(target_env = "gnu")))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run())
}
