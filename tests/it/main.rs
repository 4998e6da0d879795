//! End-to-end tests of the real `retry` binary: one test target, one harness.

mod architecture;
mod core;
mod descriptors;
mod docs;
mod dry_run;
mod examples;
mod forever;
mod grpc;
mod hints;
mod hold;
mod hold_limits;
mod hooks;
mod http;
mod idle;
mod last_stdout;
mod leftovers;
mod limits;
mod monitor;
mod need;
mod output;
mod peers;
mod pki;
mod probes;
mod process;
mod pty;
mod readers;
mod replay;
mod secrets;
mod ship;
mod sim;
mod skips;
mod stalled_mount;
mod startup;
mod state;
mod supervise;
mod tcp;
mod terminal;
mod trace;
mod usage;
mod util;

/// The suite checks retry's signal handling as an ordinary foreground parent
/// sets it up. A runner that started the suite with signals ignored or
/// blocked (`nohup`, `cmd &` in a script, a CI agent) would hand that on to
/// every retry it starts, and retry rightly keeps an ignored signal ignored:
/// so the test process first puts the signals it sends back to their
/// defaults. Tests of ignored signals set them up themselves.
extern "C" fn ordinary_signals() {
    use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, signal, sigprocmask};
    for sig in [
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGTERM,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGTSTP,
        Signal::SIGTTIN,
        Signal::SIGTTOU,
        Signal::SIGCHLD,
    ] {
        // SAFETY: restoring default actions installs no handler code.
        let _ = unsafe { signal(sig, SigHandler::SigDfl) };
    }
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
}

#[used]
#[unsafe(link_section = ".init_array")]
static ORDINARY_SIGNALS: extern "C" fn() = ordinary_signals;
