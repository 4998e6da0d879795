//! Renders the shell completions and the man page from the clap definition.
//!
//! Shared by the `gen-docs` example, which writes the files, and by the
//! freshness test, which compares them with what is checked in. Everything
//! that can come from the clap definition does (options, headings, the
//! configuration variables), so a new flag needs no edit here: running
//! [`REGENERATE`] is enough.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::{Generator, Shell};
use roff::{Roff, bold, italic, roman};

use retry_tool::cli::Cli;

/// The command that rewrites every generated file; named in test failures.
pub const REGENERATE: &str = "cargo run --example gen-docs";

/// Every generated file: its path relative to the repository root, and its
/// bytes.
pub fn files() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let name = "retry";
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        out.push(completion(shell, name));
    }
    out.push(completion(clap_complete_nushell::Nushell, name));
    out.push(("man/retry.1".to_string(), man_page()));
    for (path, args) in [STORM, RESET] {
        out.push((path.to_string(), chart(args)));
    }
    out
}

/// The guide's chart (docs/simulate.md): where it lives and the `retry` flags that draw it
/// (the same as `retry ARGS --plot PATH`).
pub const STORM: (&str, &[&str]) = (
    "docs/storm.svg",
    &[
        "--simulate",
        "1000",
        "--outage",
        "5s",
        "--base",
        "100ms",
        "--cap",
        "10s",
        "--max",
        "30",
        "--compare",
        "--seed",
        "1",
    ],
);

/// The guide's chart of a fleet told one reset (docs/simulate.md).
pub const RESET: (&str, &[&str]) = (
    "docs/reset.svg",
    &[
        "--simulate",
        "100",
        "--fixed-window",
        "10/1s",
        "--max",
        "30",
        "--retry-after-spread",
        "1s",
        "--compare",
        "--seed",
        "1",
    ],
);

/// One of the guide's charts, drawn by the same code as `--plot`.
fn chart(args: &[&str]) -> Vec<u8> {
    use clap::Parser;
    let cli = Cli::parse_from(std::iter::once("retry").chain(args.iter().copied()));
    let config = retry_tool::policy::Config::from_cli(cli, Default::default())
        .expect("the chart's flags are valid");
    let retry_tool::policy::Mode::Simulate { sim } = &config.mode else {
        panic!("the chart's flags ask for a simulation");
    };
    let seed = config.policy.seed.expect("the chart's flags give a seed");
    let runs = retry_tool::mode::simulate::runs::runs(&config.policy, sim, || {
        retry_tool::rng::seeded(seed)
    });
    let title = retry_tool::mode::simulate::runs::heading(&config.policy, sim, seed);
    let frame = retry_tool::mode::simulate::runs::frame(&title, &config.policy, sim);
    retry_tool::mode::simulate::plot::svg(&frame, &runs)
        .expect("drawing to memory cannot fail")
        .into_bytes()
}

fn completion(shell: impl Generator, name: &str) -> (String, Vec<u8>) {
    let path = format!("completions/{}", shell.file_name(name));
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), name, &mut buf);
    (path, buf)
}

/// The man page: clap_mangen's NAME, SYNOPSIS, DESCRIPTION and OPTIONS
/// (one subsection per help heading), then our own sections.
fn man_page() -> Vec<u8> {
    let cmd = Cli::command();
    let man = clap_mangen::Man::new(cmd.clone()).manual("User Commands");
    // Every rendered piece starts with the same preamble; keep the first only.
    let preamble = Roff::new().render();
    let mut page = String::new();
    let mut piece = |render: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| {
        let mut buf = Vec::new();
        render(&mut buf).expect("rendering to memory cannot fail");
        let text = String::from_utf8(buf).expect("clap_mangen writes UTF-8");
        let body = text.strip_prefix(&preamble).unwrap_or(&text).to_string();
        if page.is_empty() {
            page.push_str(&preamble);
        }
        page.push_str(&body);
    };
    piece(&|w| man.render_title(w));
    piece(&|w| man.render_name_section(w));
    piece(&|w| man.render_synopsis_section(w));
    piece(&|w| man.render_description_section(w));
    piece(&|w| {
        let mut buf = Vec::new();
        man.render_options_section(&mut buf)?;
        let text = String::from_utf8(buf).expect("clap_mangen writes UTF-8");
        w.write_all(headings_as_subsections(&text, &cmd).as_bytes())
    });
    piece(&|w| w.write_all(our_sections(&cmd).render().as_bytes()));
    page.into_bytes()
}

/// clap_mangen makes each help heading a top-level section; under OPTIONS,
/// as subsections, they read as the groups `--help` shows.
fn headings_as_subsections(roff_text: &str, cmd: &clap::Command) -> String {
    let headings: Vec<&str> = cmd
        .get_arguments()
        .filter_map(|a| a.get_help_heading())
        .collect();
    let mut out = String::new();
    if !roff_text.contains(".SH OPTIONS") {
        out.push_str(".SH OPTIONS\n");
    }
    for line in roff_text.lines() {
        let heading = line
            .strip_prefix(".SH ")
            .and_then(|h| headings.iter().find(|name| name.to_uppercase() == h));
        match heading {
            Some(name) => out.push_str(&format!(".SS \"{name}\"\n")),
            None => out.push_str(line),
        }
        if heading.is_none() {
            out.push('\n');
        }
    }
    out
}

fn section(r: &mut Roff, name: &str) {
    r.control("SH", [name]);
}

fn tagged(r: &mut Roff, tag: roff::Inline, body: &str) {
    r.control("TP", []);
    r.text([tag]);
    r.text([roman(body)]);
}

fn para(r: &mut Roff, text: &str) {
    r.control("PP", []);
    r.text([roman(text)]);
}

fn example(r: &mut Roff, what: &str, lines: &[&str]) {
    para(r, what);
    r.control("RS", ["4"]);
    r.control("nf", []);
    for line in lines {
        r.text([roman(*line)]);
    }
    r.control("fi", []);
    r.control("RE", []);
}

fn our_sections(cmd: &clap::Command) -> Roff {
    let mut r = Roff::new();

    section(&mut r, "DURATIONS");
    para(
        &mut r,
        "DUR is a number of seconds in any form sleep(1) and timeout(1) accept (30, 0.25, .5, 1e-3, 2.5e1), optionally followed by s, m, h or d, or a duration with units such as 250ms, 1.5s, 2m or 1h 30m (units: ns, us, ms, s, m or min, h, d, w for weeks, month, y; M is refused, as it could mean minutes or months). Any number of decimals is read exactly, and a positive value below a nanosecond counts as one nanosecond, never as zero. Negative durations are refused. For --timeout, --idle-timeout and --max-time, 0 and inf (or infinity) mean no limit.",
    );

    section(&mut r, "PROCESSES AND SIGNALS");
    for text in [
        "Each attempt runs in its own process group. On --timeout or --max-time the group gets the stop signal together with SIGCONT, then SIGKILL after --kill-after. When the attempt's main process ends, anything left in its group gets the stop signal at once and SIGKILL after --kill-after; --max-time or a second interrupt cuts that grace short, and -v says how many processes were stopped.",
        "retry is a child subreaper: what an attempt abandons is reparented to retry and reaped by it, so zombies never hold clean-up up, also when retry is PID 1 of a container. If retry dies, even by SIGKILL, the attempt's main process is killed too.",
        "SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to the attempt's group; the first four end the run (exit 128+N). A signal ignored when retry started (nohup) stays ignored, by retry and by COMMAND; so does SIGPIPE. SIGCHLD is reset to its default at start.",
        "On a terminal, when retry runs in the foreground, each attempt's group is given the terminal while it runs and retry takes it back afterwards, as a shell does with a job: programs that prompt work, Ctrl-C ends the run with 130, and Ctrl-Z stops retry's whole job for the shell's fg or bg. Started in the background, retry never takes the terminal.",
        "A command killed by SIGPIPE is not retried (its reader is gone) unless --retry-on names 141. A command that cannot start because processes, memory or descriptors are short is retried, and exits 125 if that lasts; one that is missing exits 127 and is named.",
    ] {
        para(&mut r, text);
    }

    section(&mut r, "RATE-LIMIT FIELDS");
    for text in [
        "In HTTP mode the first usable of these fields sets the earliest start of the next attempt, as Retry-After does: Retry-After (seconds or an HTTP date); the IETF RateLimit field's t (the longest among the policies with r=0), or an earlier draft's RateLimit-Reset; X-RateLimit-Reset-After (seconds, decimals allowed); X-RateLimit-Reset and X-RateLimit-Requests-Reset; x-ratelimit-reset-requests and x-ratelimit-reset-tokens (Go durations such as 6m0s). A reset is used only when its remaining count is 0, or, with no count, on a 429. A malformed value is skipped, with a -v line, and the next field read.",
        "X-RateLimit-Reset is read by magnitude against T, the time in epoch seconds (the response's Date when the local clock is off from it by more than 1.5s): below T/2, seconds to wait; below 100T, epoch seconds; above, epoch milliseconds.",
        "A 403 with a spent quota and a reset to come, or with Retry-After, is retried as a rate limit. Stripe-Should-Retry: false makes a failure final, true retryable. The jitter is added after the server's time (over --retry-after-spread when given); --retry-after-max and --max-time apply to every field, and a give-up names it.",
    ] {
        para(&mut r, text);
    }

    section(&mut r, "LOGGING");
    for text in [
        "The log goes to stderr; stdout is COMMAND's alone. With --log-file, the file receives every event whatever -q or -v say, and stderr only the final give-up line in plain text (-qq: nothing; -v: the ordinary log too).",
        "In JSON (--log-format json) each line is one object with the fields event, time (RFC 3339, UTC), elapsed_ms, run (a random id of this invocation) and pid, plus the event's own; the events are start, attempt_start, attempt, sleep, done, warning, note and error. Attempt outcomes are success, retryable, permanent, timeout, deadline and interrupted.",
        "Secrets in the logged command line are shown as ***: URL passwords, secret-looking query parameters, header-shaped arguments such as Authorization: Bearer, -u user:password, and values of options named like a password, token, secret or key.",
    ] {
        para(&mut r, text);
    }

    section(&mut r, "EXIT STATUS");
    // The one table of exit statuses, shared with --help and the README.
    for row in retry_tool::exit::TABLE {
        let mut meaning = row.meaning.to_string();
        // A sentence, unless it opens with retry's own name.
        if !meaning.starts_with("retry")
            && let Some(first) = meaning.get_mut(..1)
        {
            first.make_ascii_uppercase();
        }
        meaning.push('.');
        tagged(&mut r, bold(row.status), &meaning);
    }

    section(&mut r, "ENVIRONMENT");
    para(
        &mut r,
        "These variables set options. A flag on the command line wins over the variable; an empty variable counts as unset.",
    );
    for arg in cmd.get_arguments() {
        let Some(env) = arg.get_env() else { continue };
        let flag = arg
            .get_long()
            .map(|l| format!("--{l}"))
            .unwrap_or_else(|| arg.get_id().to_string());
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let help = sentence_case(strip_default(&help));
        tagged(
            &mut r,
            bold(env.to_string_lossy()),
            &format!("As {flag}: {help}."),
        );
    }
    para(&mut r, "Also read:");
    for (name, meaning) in [
        (
            "NO_COLOR",
            "When set and not empty, --color auto does not colour. --color always still does.",
        ),
        (
            "TERM",
            "When dumb, neither colour nor the countdown is shown.",
        ),
        (
            "GITHUB_ACTIONS",
            "When true, --ci-annotations auto writes a ::warning:: line for each failed attempt and an ::error:: line on giving up, which GitHub Actions shows as annotations, and --github-output auto appends the run's report to GITHUB_OUTPUT.",
        ),
        (
            "GITHUB_OUTPUT",
            "The file --github-output appends the run's report to, as key=value step outputs.",
        ),
        (
            "TMPDIR",
            "Where --hold-output holds output and --replay-stdin keeps a stdin over 8 MiB, instead of /tmp. Used only when it belongs to you or root and others cannot write to it, unless it is sticky as /tmp is.",
        ),
        (
            "XDG_STATE_HOME, HOME",
            "Where shared state lives without --state: $XDG_STATE_HOME/retry, else ~/.local/state/retry.",
        ),
        (
            "SSL_CERT_FILE, SSL_CERT_DIR",
            "When set, the CA certificates trusted for https:// in HTTP mode and for a rediss:// state store are read from this PEM file or these directories (colon-separated) instead of the system's. --cacert adds to them for https://.",
        ),
        (
            "HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY",
            "HTTP mode: the proxy to use, and hosts reached without one (also in lower case).",
        ),
        (
            "TRACEPARENT, TRACESTATE, BAGGAGE",
            "The W3C trace context the run is a child of. An invalid value is ignored with one warning.",
        ),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "Export the run's span and one per attempt over OTLP/HTTP (http/protobuf, or http/json) to this receiver; /v1/traces is added to the first. Also read as the OpenTelemetry SDKs read them: OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TIMEOUT (and their TRACES_ forms), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES; OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn the export off.",
        ),
    ] {
        tagged(&mut r, bold(name), meaning);
    }
    para(&mut r, "Given to COMMAND:");
    for (name, meaning) in [
        ("RETRY_ATTEMPT", "The attempt number, from 1."),
        (
            "RETRY_MAX_ATTEMPTS",
            "The attempt limit; empty with --forever.",
        ),
        (
            "RETRY_PREVIOUS_EXIT",
            "The previous attempt's exit status; empty on the first attempt.",
        ),
        (
            "RETRY_DEPTH",
            "How deeply retry invocations nest: 1 in a direct child. A retry that finds it set warns once that attempts multiply (see --nested).",
        ),
        (
            "TRACEPARENT",
            "When the run keeps a trace, the attempt's own span (TRACESTATE and BAGGAGE passed on beside it); see --trace-context.",
        ),
    ] {
        tagged(&mut r, bold(name), meaning);
    }

    section(&mut r, "EXAMPLES");
    example(
        &mut r,
        "In a shell script, wait for a database before migrating; give up after two minutes:",
        &[
            "retry --max-time 2m --cap 10s -- pg_isready -h db -q",
            "./migrate.sh",
        ],
    );
    example(
        &mut r,
        "A flaky GitHub Actions step; failed attempts show as warnings in the run summary:",
        &[
            "- name: Integration tests",
            "  run: retry --max 3 --timeout 15m -- make integration-test",
        ],
    );
    example(
        &mut r,
        "A cron job that retries for up to ten minutes and never retries a bad configuration (exit 78). It prints nothing when the job succeeds, even after failed attempts, so cron mails nothing; when it gives up, cron mails the give-up line and the output of the last attempt:",
        &[
            "*/30 * * * * /usr/local/bin/retry --hold-output -q --max-time 10m --stop-on 78 -- /usr/local/bin/sync",
        ],
    );
    example(
        &mut r,
        "Wait until a service answers its health check over HTTP:",
        &[
            "retry --max-time 5m --cap 15s --http http://localhost:8080/healthz",
            "retry --max-time 5m -- curl -fsS http://localhost:8080/healthz",
        ],
    );
    example(
        &mut r,
        "Jobs that cron starts every minute on one host share a retry budget and a circuit breaker; a fleet shares them, and a pace for its retries, through Redis:",
        &[
            "* * * * * /usr/local/bin/retry --group db-jobs --budget 20 --breaker 3:5m --max-time 50s -q -- /usr/local/bin/sync",
            "RETRY_GROUP=registry RETRY_STATE=rediss://redis.internal:6380/0 retry --pace 50/s --budget --breaker -- docker pull app",
        ],
    );
    example(
        &mut r,
        "See the delays a policy would produce, without running anything:",
        &["retry --dry-run --max 8 --base 250ms --jitter decorrelated --seed 1"],
    );

    section(&mut r, "SEE ALSO");
    r.text([
        bold("curl"),
        roman("(1), "),
        bold("timeout"),
        roman("(1), "),
        bold("sleep"),
        roman("(1), "),
        bold("crontab"),
        roman("(5). The guide in the "),
        italic("docs"),
        roman(
            " directory of the retry source distribution explains each feature with more examples.",
        ),
    ]);
    r
}

/// "Attempts in total" reads as "attempts in total" after "As --max:"; an
/// initialism such as "RNG" keeps its capitals.
fn sentence_case(help: &str) -> String {
    let mut chars = help.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if second.is_lowercase() => first
            .to_lowercase()
            .chain(help[first.len_utf8()..].chars())
            .collect(),
        _ => help.to_string(),
    }
}

/// The option's short help without its trailing "[default: ...]" note.
fn strip_default(help: &str) -> &str {
    help.split(" [default:").next().unwrap_or(help).trim_end()
}
