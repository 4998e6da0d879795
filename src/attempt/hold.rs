//! Output held on disk instead of passing through: `--hold-output` (cron
//! mode: both streams, written out only if the run does not succeed) and
//! `--last-stdout` (stdout only: the attempt retry exits with, whatever its
//! fate, so that stdout never carries a retried attempt's bytes).
//!
//! Each attempt's output goes to a [`Spool`], a file in `$TMPDIR` (or
//! `/tmp`) that is unnamed or unlinked as soon as it is created: nothing is
//! left behind whatever ends retry, and however much the command prints,
//! retry's memory stays flat. `--hold-max` bounds the file; what happens at
//! the bound is the spool's (see `spool`).
//!
//! [`Held`] is the run's one place for what is held: each attempt replaces
//! the spool before it (dropping it: that attempt was retried), and the
//! end-of-run output that writes the last one out takes it from there. It
//! also keeps what the run's attempts learned (a `$TMPDIR` that cannot be
//! used, stdout that stopped being held), for the lines retry logs about
//! it.

use std::io;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::classify::CodeSet;

mod spool;
pub use spool::{Appended, Count, HEADER, Part, Report, Rules, Spool, Why, WrittenOut};

/// `--hold-max`'s default: the most a spool file holds.
pub const HOLD_DEFAULT_MAX: u64 = 64 << 20;

/// The smallest `--hold-max`: a tail well beyond how far one stream may run
/// ahead of the other (a pipe's default 64 KiB and a read).
pub const HOLD_MIN_MAX: u64 = 1 << 20;

/// What is held, as validated from the flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldOptions {
    /// `--hold-output`: both streams, written out only if the run fails.
    pub output: bool,
    /// `--last-stdout`: stdout is the attempt retry exits with, only.
    pub last_stdout: bool,
    /// `--hold-max`: the most one attempt's spool file holds.
    pub max: u64,
    /// Exit codes that count as success besides 0 (`--success-on`): a
    /// success's stdout is released as soon as the attempt ends.
    pub success_on: CodeSet,
}

#[cfg(test)]
impl HoldOptions {
    /// The options of `--hold-output` (`output`) and `--last-stdout`, with
    /// the default bound.
    pub fn given(output: bool, last_stdout: bool) -> HoldOptions {
        HoldOptions {
            output,
            last_stdout,
            max: HOLD_DEFAULT_MAX,
            success_on: CodeSet::default(),
        }
    }
}

/// What an attempt holds, and where.
#[derive(Debug, Default)]
pub struct Holding {
    pub spool: Option<Arc<Spool>>,
    /// Which streams go to the spool (stdout, stderr).
    pub streams: [bool; 2],
    /// The streams must stay apart even when they go to one file: stdout
    /// comes out on its own (`--last-stdout`).
    pub apart: bool,
}

/// What the run's attempts learned about holding, for the end of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Learned {
    /// The run held nothing: the temporary directory could not be used.
    pub off: bool,
    /// `--last-stdout`: the first attempt whose stdout stopped being held
    /// (it passed through, and so did every later attempt's), and why.
    pub stdout_passed: Option<(u32, Why)>,
    /// `--hold-output`: the first attempt whose output passed through
    /// instead of being held, why, and how many attempts did.
    pub unheld: Option<(u32, Why, u32)>,
}

/// Where the run's held output waits for the end of the run. One per run,
/// shared by the attempts that fill it and the end-of-run output that
/// writes it out; clones are the same place.
#[derive(Clone)]
pub struct Held(Arc<Inner>);

struct Inner {
    options: HoldOptions,
    run: Mutex<Run>,
}

#[derive(Default)]
struct Run {
    /// The latest attempt's spool, and its number.
    spool: Option<(u32, Arc<Spool>)>,
    /// Made by [`Held::check`] before the first attempt, for it.
    ready: Option<Spool>,
    learned: Learned,
}

impl Held {
    pub fn new(options: HoldOptions) -> Held {
        Held(Arc::new(Inner {
            options,
            run: Mutex::new(Run::default()),
        }))
    }

    pub fn options(&self) -> &HoldOptions {
        &self.0.options
    }

    fn run(&self) -> std::sync::MutexGuard<'_, Run> {
        self.0.run.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Before the first attempt: make its spool. When that fails, nothing
    /// is held in this run (every attempt's output passes through), and
    /// the error says why.
    pub fn check(&self) -> Result<(), String> {
        let mut run = self.run();
        match Spool::create(self.rules(&run.learned)) {
            Ok(spool) => {
                run.ready = Some(spool);
                Ok(())
            }
            Err(e) => {
                run.learned.off = true;
                Err(e)
            }
        }
    }

    /// The spool rules for the next attempt.
    fn rules(&self, learned: &Learned) -> Rules {
        let o = &self.0.options;
        Rules {
            max: o.max,
            whole_stdout: o.last_stdout,
            may_cut: o.output,
            held: [
                if o.last_stdout {
                    learned.stdout_passed.is_none()
                } else {
                    o.output
                },
                o.output,
            ],
        }
    }

    /// Attempt `number` starts: what it holds, in place of the attempt
    /// before (dropped: that attempt is being retried).
    pub fn begin(&self, number: u32) -> Holding {
        let mut run = self.run();
        if let Some((n, old)) = run.spool.take().filter(|(_, s)| !s.abandoned()) {
            learn(&mut run.learned, &self.0.options, n, &old.report());
        }
        let rules = self.rules(&run.learned);
        if run.learned.off || !rules.held.contains(&true) {
            return Holding::default();
        }
        let made = match run.ready.take() {
            Some(spool) => Ok(spool),
            None => Spool::create(rules),
        };
        match made {
            Ok(spool) => {
                let spool = Arc::new(spool);
                run.spool = Some((number, Arc::clone(&spool)));
                Holding {
                    spool: Some(spool),
                    streams: rules.held,
                    apart: self.0.options.last_stdout,
                }
            }
            Err(e) => {
                let why = Why::Failed(e);
                let passing = [0, 1].map(|s| rules.held[s].then(|| why.clone()));
                let report = Report {
                    passing,
                    ..Report::default()
                };
                learn(&mut run.learned, &self.0.options, number, &report);
                Holding::default()
            }
        }
    }

    /// The run is over: the last attempt's spool (and its number), and
    /// what the run learned. It waits for a pump still writing to the spool
    /// (a stdout that passes through, to a reader that takes nothing): call
    /// it where that cannot hold the run. An abandoned spool is not asked.
    pub fn end(&self) -> (Option<(u32, Arc<Spool>)>, Learned) {
        let mut run = self.run();
        let last = run.spool.take();
        if let Some((n, spool)) = last.as_ref().filter(|(_, s)| !s.abandoned()) {
            learn(&mut run.learned, &self.0.options, *n, &spool.report());
        }
        (last, std::mem::take(&mut run.learned))
    }
}

/// Note what attempt `n`'s spool came to.
fn learn(learned: &mut Learned, options: &HoldOptions, n: u32, report: &Report) {
    if options.last_stdout
        && let Some(why) = &report.passing[0]
        && learned.stdout_passed.is_none()
    {
        learned.stdout_passed = Some((n, why.clone()));
    }
    // Cron mode's output that passed through: stderr, and stdout unless
    // --last-stdout has it.
    let unheld = match options.last_stdout {
        true => report.passing[1].as_ref(),
        false => report.passing[1].as_ref().or(report.passing[0].as_ref()),
    };
    if options.output
        && let Some(why) = unheld
    {
        match learned.unheld.as_mut() {
            Some((_, _, count)) => *count += 1,
            None => learned.unheld = Some((n, why.clone(), 1)),
        }
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Held").field(&self.0.options).finish()
    }
}

/// Two handles are equal when they are the same place.
impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Held {}

/// The temporary directory spools are made in, as the messages name it.
pub fn tmpdir() -> PathBuf {
    std::env::var_os("TMPDIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// Write all of `bytes` to retry's own descriptor `fd` (1 or 2): see
/// [`crate::stdio::write_all`].
pub(super) fn write_all(fd: i32, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: fds 1 and 2 are retry's own and stay open for its life (they
    // are on /dev/null when retry was started without them).
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    crate::stdio::write_all(fd, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(output: bool, last_stdout: bool) -> HoldOptions {
        HoldOptions::given(output, last_stdout)
    }

    #[test]
    fn each_attempt_replaces_the_spool_before_it_and_the_end_takes_the_last() {
        let held = Held::new(options(true, false));
        let other = held.clone();
        assert_eq!(held, other);
        assert_ne!(held, Held::new(options(true, false)));
        held.check().expect("a spool in the temporary directory");
        let first = held.begin(1).spool.expect("held");
        let second = other.begin(2);
        assert_eq!(second.streams, [true, true]);
        assert_eq!(Arc::strong_count(&first), 1, "the first spool is dropped");
        let (last, learned) = held.end();
        assert_eq!(last.map(|(n, _)| n), Some(2));
        assert_eq!(learned, Learned::default());
        assert!(other.end().0.is_none());
    }

    #[test]
    fn last_stdout_holds_stdout_only_and_both_flags_hold_both() {
        assert_eq!(
            Held::new(options(false, true)).begin(1).streams,
            [true, false]
        );
        assert_eq!(
            Held::new(options(true, true)).begin(1).streams,
            [true, true]
        );
    }

    #[test]
    fn once_stdout_passed_through_later_attempts_do_not_hold_it() {
        let held = Held::new(options(true, true));
        let mut learned = Learned::default();
        learn(
            &mut learned,
            held.options(),
            1,
            &Report {
                passing: [Some(Why::Bound(1)), None],
                ..Report::default()
            },
        );
        held.run().learned = learned;
        assert_eq!(held.begin(2).streams, [false, true]);
        let (_, learned) = held.end();
        assert_eq!(learned.stdout_passed, Some((1, Why::Bound(1))));
    }
}
