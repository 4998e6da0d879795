//! `retry`: run a command and retry it on failure, with capped exponential
//! backoff and jitter.
//!
//! [`main_entry`] is the entry: the invocation is read (`args`: flags from
//! `cli`, validated by `policy`) and handed to its mode (`mode`); the modes
//! that run something go through one lifecycle (`drive`), whose retry loop
//! (`run`) drives attempts (`attempt`), judges them (`classify`), waits
//! (`backoff`, `wait`), logs (`log`) and ends with an exit status (`exit`).

pub mod after;
mod args;
pub mod attempt;
pub mod backoff;
pub mod bound;
pub mod classify;
pub mod cli;
mod drive;
pub mod event;
pub mod exit;
pub mod finish;
pub mod fsutil;
pub mod hint;
pub mod human;
pub mod log;
pub mod mask;
pub mod mode;
pub mod policy;
pub mod ratelimit;
pub mod retry_policy;
pub mod rng;
pub mod run;
pub mod schedule;
pub mod signals;
pub mod signame;
pub mod sim;
pub mod state;
pub mod stdio;
pub mod sys;
pub mod trace;
pub mod wait;

use std::time::Instant;

use policy::Mode;

/// Run `retry` with the process's arguments; returns the exit status.
pub fn main_entry() -> u8 {
    // A panic is a bug or a system at its limits (tokio cannot start without
    // a few spare file descriptors): one line, and retry's own status.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown failure");
        eprintln!("retry: internal error: {what}");
    }));
    match std::panic::catch_unwind(run_main) {
        Ok(code) => code,
        Err(_) => exit::INTERNAL,
    }
}

fn run_main() -> u8 {
    let started = Instant::now();
    // Before anything changes a disposition: what the parent left ignored
    // stays ignored.
    signals::prepare();
    let config = match args::config() {
        Ok(c) => c,
        Err(code) => return code,
    };
    let seed = config.policy.seed.unwrap_or_else(mode::os_seed);
    match &config.mode {
        Mode::Run { command } => mode::command::main(&config, command, started, seed),
        Mode::Http { request } => mode::http::main(&config, request, started, seed),
        Mode::Tcp { probe } => mode::tcp::main(&config, probe, started, seed),
        Mode::File { probe } => mode::file::main(&config, probe, started, seed),
        Mode::Grpc { probe } => mode::grpc::main(&config, probe, started, seed),
        Mode::DryRun { command } => mode::dry_run::main(&config, command, seed),
        Mode::Simulate { sim } => mode::simulate::main(&config, sim, seed),
        Mode::StateShow => mode::state_show::main(&config),
    }
}
