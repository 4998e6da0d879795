//! HTTP mode (`--http URL`): from the validated request to an exit status.
//!
//! Before the first request leaves, and before the log file is opened,
//! every local input is read and checked: `-H @FILE`, `-d @FILE`,
//! `--data-binary @FILE`, `--json @FILE`, `--cacert FILE`, and that `-o
//! FILE` can be written (resolved through a symbolic link, in a directory
//! retry may write in, with its private temporary file made). A bad one is
//! a usage error, and nothing is sent or created. Then the same retry loop
//! as command mode runs, and on success the `-o` file is put in place: a
//! failed run leaves no partial file.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use rustls::pki_types::CertificateDer;

use crate::attempt::http::{Body, Data, FileSink, HttpAttempt, HttpOptions, Prepared, Sink};
use crate::drive;
use crate::event::Ending;
use crate::exit;
use crate::fsutil::{self, Destination, Rule, Target};
use crate::human::{escape_controls, io_error};
use crate::log::Logger;
use crate::policy::{Config, parse_header};

pub fn main(config: &Config, request: &HttpOptions, started: Instant, seed: u64) -> u8 {
    super::forget_reports_env();
    if let Err(code) = drive::check_outputs(config) {
        return code;
    }
    // Every local input first: a bad one is a usage error, and nothing is
    // run, sent or created (not even the --log-file).
    let usage = |message: &str| {
        Logger::stderr().error(&escape_controls(message));
        exit::USAGE
    };
    let (inputs, output) = match prepare(request) {
        Ok(p) => p,
        Err(message) => return usage(&message),
    };
    let (target, direct) = match output {
        Output::File(t) => (Some(*t), None),
        Output::Direct(f) => (None, Some(f)),
        Output::Stdout => (None, None),
    };
    let sink = match (&target, direct) {
        // The temporary file is made now: the proof that the body can be
        // written there, before anything is sent.
        (Some(t), _) => match FileSink::new(t) {
            Ok(f) => Sink::File(f),
            Err(e) => return usage(&output_error(&t.path(), &io_error(&e))),
        },
        (None, Some(f)) => Sink::direct(f),
        (None, None) => Sink::stdout(),
    };
    let mut log = drive::open_log(config, started);
    if request.insecure {
        super::warn_insecure(config, &mut log);
    }
    let prepared = Prepared {
        headers: inputs.headers,
        body: inputs.body,
        extra_roots: inputs.extra_roots,
        sink,
    };
    let expect = config.policy.rules.http.expect.clone();
    let idle = config.policy.idle_timeout;
    let shown = request.display_words();
    drive::drive(
        config,
        log,
        &shown,
        seed,
        || HttpAttempt::new(request, prepared, expect, idle, config.log.verbosity >= 1),
        deliver,
    )
}

/// Puts an accepted body in place: the exit status of the whole run.
fn deliver(ending: &Ending, attempt: HttpAttempt<'_>, log: &mut Logger) -> u8 {
    if ending.exit_code != exit::SUCCESS {
        // A `-o` temporary file goes with the attempt, leaving nothing.
        return ending.exit_code;
    }
    match attempt.into_sink().persist() {
        Ok(()) => exit::SUCCESS,
        Err(message) => {
            log.error(&message);
            exit::HTTP_WRITE
        }
    }
}

/// The local inputs of the request, read and checked.
struct Inputs {
    headers: HeaderMap,
    body: Option<Vec<u8>>,
    extra_roots: Vec<CertificateDer<'static>>,
}

/// Where `-o` sends the body, as found before anything is sent.
enum Output {
    Stdout,
    /// Not a regular file (`/dev/null`, a FIFO, `/dev/stdout`): written
    /// directly.
    Direct(std::fs::File),
    /// A file, resolved through a symbolic link to where it really is.
    File(Box<Target>),
}

/// Read and check every local input of the request. The error is the
/// usage-error line.
fn prepare(request: &HttpOptions) -> Result<(Inputs, Output), String> {
    let mut headers = HeaderMap::with_capacity(request.headers.len() + 2);
    for (name, value) in &request.headers {
        headers.append(name.clone(), value.clone());
    }
    for file in &request.header_files {
        let text = read("--header", file)?;
        let text = String::from_utf8(text).map_err(|_| {
            format!(
                "invalid --header @{}: not UTF-8 text; expected 'Name: value' lines",
                file.display()
            )
        })?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // The line itself is not repeated: it may hold a secret.
            let (name, value) = parse_header(line).ok_or_else(|| {
                format!(
                    "invalid header on line {} of --header @{}: expected 'Name: value' lines (blank lines and # comments are skipped)",
                    n + 1,
                    file.display()
                )
            })?;
            if name.as_str() == "idempotency-key" && request.idempotency_key.is_some() {
                return Err(format!(
                    "--idempotency-key and an Idempotency-Key line in --header @{} both set the key: give it once",
                    file.display()
                ));
            }
            headers.append(name, value);
        }
    }

    let body = match &request.body {
        None => None,
        Some(Body::Form(pieces)) => {
            let mut joined = Vec::new();
            for (i, piece) in pieces.iter().enumerate() {
                if i > 0 {
                    joined.push(b'&');
                }
                let flag = match piece {
                    Data::File(_) => "--data-binary",
                    _ => "--data",
                };
                joined.extend(data(flag, piece)?);
            }
            if !headers.contains_key(CONTENT_TYPE) {
                headers.insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("application/x-www-form-urlencoded"),
                );
            }
            Some(joined)
        }
        Some(Body::Json(piece)) => {
            let json = data("--json", piece)?;
            for name in [CONTENT_TYPE, ACCEPT] {
                if !headers.contains_key(&name) {
                    headers.insert(name, HeaderValue::from_static("application/json"));
                }
            }
            Some(json)
        }
    };

    let extra_roots = match &request.cacert {
        None => Vec::new(),
        Some(file) => certificates(file)?,
    };

    let output = match &request.output {
        None => Output::Stdout,
        Some(path) => output(path)?,
    };
    Ok((
        Inputs {
            headers,
            body,
            extra_roots,
        },
        output,
    ))
}

/// `-o FILE`: a device or FIFO to write directly (never waited on), or a
/// file to replace whole, in a directory retry may write in; never another
/// user's file, FIFO or device in a directory others can write to.
fn output(path: &Path) -> Result<Output, String> {
    match fsutil::open_destination(path, Rule::Output) {
        Ok(Destination::Replace(t)) => Ok(Output::File(t)),
        Ok(Destination::Direct(f)) => Ok(Output::Direct(f)),
        Err(e) => Err(output_error(path, &e.about(path))),
    }
}

/// The usage error for an `-o` that cannot be written.
fn output_error(path: &Path, why: &str) -> String {
    format!(
        "cannot write --output {}: {why}; expected a file in an existing directory that retry may write in",
        path.display()
    )
}

/// The bytes of `-d`, `--data-binary` or `--json`: the string, or the
/// file's contents (for `-d`, without CR and LF, as curl sends them).
fn data(flag: &str, piece: &Data) -> Result<Vec<u8>, String> {
    match piece {
        Data::Inline(b) => Ok(b.clone()),
        Data::File(path) => read(flag, path),
        Data::Text(path) => {
            let mut bytes = read(flag, path)?;
            bytes.retain(|b| !matches!(b, b'\r' | b'\n'));
            Ok(bytes)
        }
    }
}

/// A file named by `@FILE` (`@-`: stdin), read whole: request bodies and
/// header files are small, and are sent again with every attempt.
fn read(flag: &str, path: &Path) -> Result<Vec<u8>, String> {
    read_file(path).map_err(|e| {
        format!(
            "cannot read {flag} @{}: {}; expected @FILE naming a readable file",
            path.display(),
            io_error(&e)
        )
    })
}

fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().lock().read_to_end(&mut buf).map(|_| buf)
    } else {
        std::fs::read(path)
    }
}

/// `--cacert FILE`: every PEM certificate in it, at least one.
pub(super) fn certificates(file: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    crate::attempt::http::tls::certificates(file, "--cacert")
}
