//! The log: events from the retry loop rendered as text or JSON lines.
//!
//! This is the only module that writes to stderr. Each event becomes exactly
//! one `write_all` per destination, so lines from concurrent writers to the
//! same file never interleave mid-line. stdout is never touched: it belongs
//! to the child.
//!
//! With `--log-file`, the file gets the full record (every event, whatever
//! `-q` or `-v` say) and stderr only what a person must see: the give-up line
//! (`-qq`: nothing; `-v`: the ordinary log as well).
//!
//! Three extras depend on where the log is going, decided once when it opens
//! ([`Surroundings`]): colour on the `retry:` prefix and outcome words, GitHub
//! Actions annotations, and a countdown on a terminal during long waits.

mod annotations;
mod countdown;
mod json;
mod tail;
mod text;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use countdown::Countdown;
pub use json::outcome;
pub use tail::Tail;

use crate::classify::Verdict;
use crate::event::{End, Event, Sink};

/// The format of log lines (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// `auto|always|never` for a feature whose `auto` depends on the surroundings
/// (terminal, environment), which `log` inspects when it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum When {
    #[default]
    Auto,
    Always,
    Never,
}

/// How the log is asked to look and where it goes, as validated from the
/// flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    pub format: LogFormat,
    /// -2 (-qq: nothing), -1 (-q: final give-up only), 0 (default), 1+ (-v).
    pub verbosity: i8,
    pub file: Option<PathBuf>,
    /// `--color`.
    pub color: When,
    /// `--ci-annotations`.
    pub annotations: When,
}

/// What the log can see of where it runs, read once when it opens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Surroundings {
    pub stderr_is_terminal: bool,
    /// NO_COLOR is set to something other than the empty string.
    pub no_color: bool,
    /// TERM=dumb: no colour, no cursor movement.
    pub dumb_terminal: bool,
    /// GITHUB_ACTIONS=true.
    pub github_actions: bool,
}

impl Surroundings {
    pub fn detect() -> Surroundings {
        let var = |name| std::env::var_os(name);
        Surroundings {
            stderr_is_terminal: std::io::stderr().is_terminal(),
            no_color: var("NO_COLOR").is_some_and(|v| !v.is_empty()),
            dumb_terminal: var("TERM").is_some_and(|v| v == "dumb"),
            github_actions: var("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
        }
    }
}

/// The extras a run gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extras {
    pub color: bool,
    pub annotations: bool,
    pub countdown: bool,
}

impl Extras {
    /// Decide the extras from the options and the surroundings. `auto` colours
    /// only a text log on a terminal that is not dumb, without NO_COLOR; an
    /// explicit `--color always` wins over NO_COLOR, as no-color.org asks.
    pub fn decide(opts: &LogOptions, s: &Surroundings) -> Extras {
        let to_stderr = opts.file.is_none();
        let stderr = stderr_channel(opts);
        let text = stderr.0 == LogFormat::Text;
        let terminal = s.stderr_is_terminal && !s.dumb_terminal;
        Extras {
            // Never in JSON: escapes would corrupt the strings.
            color: text
                && match opts.color {
                    When::Always => true,
                    When::Never => false,
                    When::Auto => terminal && !s.no_color,
                },
            // A JSON stream on stderr stays pure JSON unless annotations are
            // asked for explicitly.
            annotations: match opts.annotations {
                When::Always => true,
                When::Never => false,
                When::Auto => s.github_actions && (opts.format == LogFormat::Text || !to_stderr),
            },
            // A person is watching the ordinary text log on a real terminal.
            countdown: terminal && text && stderr.1 >= 0,
        }
    }
}

/// The format and verbosity of what goes to stderr.
fn stderr_channel(opts: &LogOptions) -> (LogFormat, i8) {
    match opts.file {
        None => (opts.format, opts.verbosity),
        // The file keeps the record; stderr is for a person (or cron's mail):
        // plain text, one level quieter, so by default only a give-up shows.
        Some(_) => (
            LogFormat::Text,
            if opts.verbosity <= -2 {
                -2
            } else {
                (opts.verbosity - 1).max(-1)
            },
        ),
    }
}

/// One destination of the log.
struct Channel {
    format: LogFormat,
    /// -2 (nothing), -1 (give-up only), 0 (ordinary), 1+ (more); `i8::MAX`
    /// for a log file's full record.
    verbosity: i8,
    color: bool,
    sink: Box<dyn Write + Send>,
}

impl Channel {
    fn wants(&self, event: &Event<'_>) -> bool {
        let v = self.verbosity;
        let json = self.format == LogFormat::Json;
        match event {
            Event::Start { .. } => v >= 1 || (json && v >= 0),
            Event::AttemptStart { .. } | Event::Note { .. } => v >= 1,
            Event::Attempt { verdict, next, .. } => match verdict {
                // A success that is followed by a restart is news.
                Verdict::Success => v >= 1 || (json || next.is_some()) && v >= 0,
                _ => v >= 0,
            },
            Event::Done { ending, .. } => match ending.end {
                End::Success => v >= 1 || (v >= 0 && (ending.attempts > 1 || json)),
                _ => v >= -1,
            },
            Event::Warning { .. } | Event::Reset { .. } => v >= 0,
            Event::Stagger { .. } => v >= 1,
            Event::Error { .. } => v >= -1,
        }
    }

    fn render(&self, event: &Event<'_>, elapsed: Duration, origin: &json::Origin) -> String {
        match self.format {
            LogFormat::Text => {
                // Whatever a peer or COMMAND put in a message (a sentinel's
                // host, a store's error, a reply body, a program's name)
                // neither breaks the line nor drives the terminal.
                let line = text::line(event, elapsed);
                let line = crate::human::escape_controls(&line).into_owned();
                let mut out = if self.color {
                    text::paint(&line, event)
                } else {
                    line
                };
                out.push('\n');
                out
            }
            LogFormat::Json => json::lines(event, elapsed, origin),
        }
    }
}

/// Renders events and writes them to stderr and the log file.
pub struct Logger {
    channels: Vec<Channel>,
    started: Instant,
    extras: Extras,
    origin: json::Origin,
}

impl Logger {
    /// Open the log as configured. Fails only when `--log-file` cannot be
    /// opened (the error is the message, naming the flag): it is opened as
    /// every file retry writes where others may be (`fsutil::open_append`:
    /// no planted link followed, no other user's file written into, no wait
    /// for a FIFO's reader).
    pub fn open(opts: &LogOptions, started: Instant) -> Result<Logger, String> {
        use crate::fsutil::{Rule, open_append};
        let extras = Extras::decide(opts, &Surroundings::detect());
        let (format, verbosity) = stderr_channel(opts);
        let mut channels = Vec::with_capacity(2);
        if let Some(path) = &opts.file {
            let file = open_append(path, Rule::Output).map_err(|e| {
                format!(
                    "cannot open --log-file {}: {}",
                    path.display(),
                    e.about(path)
                )
            })?;
            channels.push(Channel {
                format: opts.format,
                verbosity: i8::MAX,
                color: false,
                sink: Box::new(file),
            });
        }
        channels.push(Channel {
            format,
            verbosity,
            color: extras.color,
            sink: Box::new(std::io::stderr()),
        });
        Ok(Logger {
            channels,
            started,
            extras,
            origin: json::Origin {
                run: run_id(),
                pid: std::process::id(),
            },
        })
    }

    /// A logger writing text to stderr, for errors before the configuration
    /// is known.
    pub fn stderr() -> Logger {
        Logger {
            channels: vec![Channel {
                format: LogFormat::Text,
                verbosity: 0,
                color: false,
                sink: Box::new(std::io::stderr()),
            }],
            started: Instant::now(),
            extras: Extras::default(),
            origin: json::Origin {
                run: String::new(),
                pid: std::process::id(),
            },
        }
    }

    /// This invocation's run id, as the JSON log's `run` field has it
    /// (empty for the bare stderr logger).
    pub fn run_id(&self) -> &str {
        &self.origin.run
    }

    pub fn emit(&mut self, event: &Event<'_>) {
        let elapsed = self.started.elapsed();
        for ch in &mut self.channels {
            if ch.wants(event) {
                let out = ch.render(event, elapsed, &self.origin);
                // A log that cannot be written must not change the run's outcome.
                let _ = ch.sink.write_all(out.as_bytes());
            }
        }
        if self.extras.annotations
            && self.channels.last().is_some_and(|ch| ch.wants(event))
            && let Some(line) = annotations::annotation(event, elapsed)
        {
            // The runner reads workflow commands from stderr as well as stdout
            // (both streams go through the same command parser), so they need
            // not touch stdout, which is the child's.
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }

    /// Show a countdown to the next attempt while waiting `wait`, on a
    /// terminal only and only for waits over a second. Call it only while no
    /// child runs, and drop the result before the next line is logged.
    pub fn countdown(&self, wait: Duration, next_attempt: u32, max: Option<u32>) -> Countdown {
        if !self.extras.countdown {
            return Countdown::none();
        }
        Countdown::start(wait, next_attempt, max, self.extras.color)
    }

    /// Keeps the log's last `limit` bytes from now on, as text with every
    /// event, whatever the log's own format and verbosity (`--ping-log`).
    pub fn keep_tail(&mut self, limit: usize) -> Tail {
        let tail = Tail::new(limit);
        // First: the last channel is stderr's, which annotations follow.
        self.channels.insert(
            0,
            Channel {
                format: LogFormat::Text,
                verbosity: i8::MAX,
                color: false,
                sink: Box::new(tail.clone()),
            },
        );
        tail
    }

    /// A warning that `-q` shows too (only `-qq` hides it): the command's
    /// output that follows, or went before, is not what was asked for
    /// (held output cut short, or not held at all). Rendered as any
    /// warning.
    pub fn output_warning(&mut self, message: &str) {
        let event = Event::Warning { message };
        let elapsed = self.started.elapsed();
        for ch in &mut self.channels {
            if ch.verbosity >= -1 {
                let out = ch.render(&event, elapsed, &self.origin);
                let _ = ch.sink.write_all(out.as_bytes());
            }
        }
    }

    /// retry's own failure, in the log's format: `retry: MESSAGE` or an
    /// `error` event.
    pub fn error(&mut self, message: &str) {
        self.emit(&Event::Error { message });
    }
}

impl Sink for Logger {
    type Countdown = Countdown;
    fn emit(&mut self, event: &Event<'_>) {
        Logger::emit(self, event);
    }
    fn countdown(&self, wait: Duration, next_attempt: u32, max: Option<u32>) -> Countdown {
        Logger::countdown(self, wait, next_attempt, max)
    }
}

/// A short random id for this invocation, so that runs sharing a log file
/// can be told apart (pids are reused; this is not).
fn run_id() -> String {
    use rand::TryRng;
    let n = rand::rngs::SysRng
        .try_next_u32()
        .unwrap_or_else(|_| std::process::id().rotate_left(16));
    format!("{n:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(
        format: LogFormat,
        verbosity: i8,
        file: bool,
        color: When,
        annotations: When,
    ) -> LogOptions {
        LogOptions {
            format,
            verbosity,
            file: file.then(|| "log.txt".into()),
            color,
            annotations,
        }
    }

    #[test]
    fn extras_follow_the_surroundings() {
        let tty = Surroundings {
            stderr_is_terminal: true,
            ..Surroundings::default()
        };
        let auto = opts(LogFormat::Text, 0, false, When::Auto, When::Auto);
        let e = Extras::decide(&auto, &tty);
        assert!(e.color && e.countdown && !e.annotations);
        // Not a terminal: nothing.
        assert_eq!(
            Extras::decide(&auto, &Surroundings::default()),
            Extras::default()
        );
        // NO_COLOR keeps the countdown, drops colour; --color always beats it.
        let no_color = Surroundings {
            no_color: true,
            ..tty
        };
        let e = Extras::decide(&auto, &no_color);
        assert!(!e.color && e.countdown);
        let always = opts(LogFormat::Text, 0, false, When::Always, When::Auto);
        assert!(Extras::decide(&always, &no_color).color);
        // TERM=dumb: neither colour nor countdown.
        let dumb = Surroundings {
            dumb_terminal: true,
            ..tty
        };
        assert_eq!(Extras::decide(&auto, &dumb), Extras::default());
        // -q, or a log file that leaves stderr only the give-up line: no countdown.
        let quiet = opts(LogFormat::Text, -1, false, When::Auto, When::Auto);
        assert!(!Extras::decide(&quiet, &tty).countdown);
        let to_file = opts(LogFormat::Text, 0, true, When::Auto, When::Auto);
        assert!(!Extras::decide(&to_file, &tty).countdown);
        // JSON on stderr never colours and has no countdown.
        let json = opts(LogFormat::Json, 0, false, When::Always, When::Auto);
        let e = Extras::decide(&json, &tty);
        assert!(!e.color && !e.countdown);
    }

    #[test]
    fn annotations_when_asked_or_in_github_actions() {
        let gha = Surroundings {
            github_actions: true,
            ..Surroundings::default()
        };
        let text_auto = opts(LogFormat::Text, 0, false, When::Never, When::Auto);
        assert!(Extras::decide(&text_auto, &gha).annotations);
        assert!(!Extras::decide(&text_auto, &Surroundings::default()).annotations);
        // A JSON stream on stderr stays pure unless asked; to a file it is fine.
        let json_stderr = opts(LogFormat::Json, 0, false, When::Never, When::Auto);
        assert!(!Extras::decide(&json_stderr, &gha).annotations);
        let json_file = opts(LogFormat::Json, 0, true, When::Never, When::Auto);
        assert!(Extras::decide(&json_file, &gha).annotations);
        let asked = opts(LogFormat::Json, 0, false, When::Never, When::Always);
        assert!(Extras::decide(&asked, &gha).annotations);
        let never = opts(LogFormat::Text, 0, false, When::Never, When::Never);
        assert!(!Extras::decide(&never, &gha).annotations);
    }

    #[test]
    fn a_log_file_keeps_everything_and_stderr_only_the_give_up() {
        let text =
            |v, file| stderr_channel(&opts(LogFormat::Json, v, file, When::Auto, When::Auto));
        assert_eq!(text(0, true), (LogFormat::Text, -1));
        assert_eq!(text(-1, true), (LogFormat::Text, -1));
        assert_eq!(text(-2, true), (LogFormat::Text, -2));
        assert_eq!(text(1, true), (LogFormat::Text, 0));
        assert_eq!(text(0, false), (LogFormat::Json, 0));
    }
}
