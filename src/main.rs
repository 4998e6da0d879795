//! Entry point: run, then exit with the status `retry` decided. The only place
//! that exits.
//!
//! C's `main`, not std's: std's start-up probes the main thread's stack guard
//! (reading /proc/self/maps) and sets up an alternate signal stack, 0.1 to
//! 0.3 ms and over ten page faults on every run, for a stack-overflow message
//! retry does not need. The rest of what std's start-up does is done here.
//! (A unit-test build keeps std's `main`: the test harness needs it.)
#![cfg_attr(not(test), no_main)]

// glibc targets: take the unwinder from libgcc_eh.a (as `cc -static-libgcc`
// does) instead of loading libgcc_s.so.1 at every start. The archive comes
// with gcc; `-bundle` leaves it for the C compiler driver to find.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[link(name = "libgcc_eh.a", kind = "static", modifiers = "-bundle,+verbatim")]
unsafe extern "C" {}

/// Runs before anything changes SIGPIPE, so retry can learn whether its
/// parent had ignored it (and keep it ignored for the command).
#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_SIGPIPE: extern "C" fn() = retry_tool::signals::record_sigpipe_at_start;

#[cfg(not(test))]
mod entry {
    use std::ffi::{c_char, c_int};
    use std::io::Write;

    use nix::libc;

    #[unsafe(no_mangle)]
    extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
        // std::env::args_os still works: on glibc std reads the arguments from
        // its own .init_array entry.
        // A closed standard descriptor is opened on /dev/null (as std does),
        // so no file retry opens can take its number; children get it closed.
        retry_tool::stdio::protect_closed();
        // As std does: a closed pipe is an EPIPE error on write, not death.
        // SAFETY: setting a disposition to "ignore" installs no handler code.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        // A bug's panic ends retry with 101 and its message, as under std's main.
        let code = std::panic::catch_unwind(retry_tool::main_entry).unwrap_or(101);
        let _ = std::io::stdout().flush();
        c_int::from(code)
    }
}
