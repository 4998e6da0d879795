//! HTTP mode's wiring: from the validated `--http` request to an exit status.
//!
//! Before the first request leaves, every local input is read and checked:
//! `-H @FILE`, `-d @FILE`, `--json @FILE`, `--cacert FILE`, and that `-o FILE`
//! can be created (a temporary file is made beside it). A bad one is a usage
//! error and nothing is sent. Then the same retry loop as command mode runs,
//! and on success the `-o` file is renamed into place: a failed run leaves
//! no partial file.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::attempt::http::{Body, Data, HttpAttempt, HttpOptions, Prepared, Sink};
use crate::event::Event;
use crate::exit;
use crate::log::{LogFormat, Logger};
use crate::policy::{Config, parse_header};
use crate::run::Finish;

pub fn main(
    config: &Config,
    request: &HttpOptions,
    started: Instant,
    seed: u64,
    rng: &mut crate::rng::JitterRng,
) -> u8 {
    let mut log = match crate::open_log(config, started) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let prepared = match prepare(request) {
        Ok(p) => p,
        Err(message) => {
            log.error(&message);
            return exit::USAGE;
        }
    };
    if request.insecure {
        let message = "--insecure: the server's certificate is not verified; \
                       anyone on the path can read and change this exchange";
        log.emit(&Event::Warning { message });
        if config.log.file.is_some() && config.log.format == LogFormat::Text {
            // With --log-file, stderr carries only the give-up line; this
            // must reach a person too.
            crate::log::Logger::stderr().emit(&Event::Warning { message });
        }
    }
    let expect = config.policy.rules.http.expect.clone();
    let shown = request.display_words();
    crate::drive(
        config,
        &mut log,
        &shown,
        seed,
        rng,
        || HttpAttempt::new(request, prepared, expect, config.log.verbosity >= 1),
        deliver,
    )
}

/// Puts an accepted body in place: the exit status of the whole run.
fn deliver(finish: &Finish, attempt: HttpAttempt, log: &mut Logger) -> u8 {
    if finish.exit_code != exit::SUCCESS {
        // A `-o` temporary file is removed as the attempt is dropped.
        return finish.exit_code;
    }
    match attempt.into_sink() {
        Sink::Stdout | Sink::Direct(_) => exit::SUCCESS,
        Sink::File { target, temp } => match temp.persist(&target) {
            Ok(_) => exit::SUCCESS,
            Err(e) => {
                log.error(&format!(
                    "cannot move the response body into {}: {}",
                    target.display(),
                    e.error
                ));
                exit::HTTP_WRITE
            }
        },
    }
}

/// Read and check every local input of the request. The error is the
/// usage-error line.
fn prepare(request: &HttpOptions) -> Result<Prepared, String> {
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
                joined.extend(data("--data", piece)?);
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

    let sink = match &request.output {
        None => Sink::Stdout,
        // `/dev/null`, a FIFO: nothing to rename over, and no partial file
        // to leave behind.
        Some(target) if target.exists() && !target.is_file() && !target.is_dir() => {
            Sink::Direct(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(target)
                    .map_err(|e| {
                        format!(
                            "cannot write --output {}: {e}; expected a file in an existing, writable directory",
                            target.display()
                        )
                    })?,
            )
        }
        Some(target) => Sink::File {
            temp: temp_beside(target)?,
            target: target.clone(),
        },
    };
    Ok(Prepared {
        headers,
        body,
        extra_roots,
        sink,
    })
}

/// The bytes of `-d` or `--json`: the string, or the file's contents.
fn data(flag: &str, piece: &Data) -> Result<Vec<u8>, String> {
    match piece {
        Data::Inline(b) => Ok(b.clone()),
        Data::File(path) => read(flag, path),
    }
}

/// A file named by `@FILE` (`@-`: stdin), read whole: request bodies and
/// header files are small, and are sent again with every attempt.
fn read(flag: &str, path: &Path) -> Result<Vec<u8>, String> {
    let read = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().lock().read_to_end(&mut buf).map(|_| buf)
    } else {
        std::fs::read(path)
    };
    read.map_err(|e| {
        format!(
            "cannot read {flag} @{}: {e}; expected @FILE naming a readable file",
            path.display()
        )
    })
}

/// `--cacert FILE`: every PEM certificate in it, at least one.
fn certificates(file: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read("--cacert", file)?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| {
            format!(
                "invalid --cacert {}: {e}; expected a file of PEM certificates",
                file.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "invalid --cacert {}: no certificate in it; expected a file of PEM certificates (-----BEGIN CERTIFICATE-----)",
            file.display()
        ));
    }
    Ok(certs)
}

/// A temporary file in `-o FILE`'s directory: proof that FILE can be
/// created there, and where the body is written until the run succeeds (a
/// rename within one directory is atomic).
fn temp_beside(target: &Path) -> Result<tempfile::NamedTempFile, String> {
    let bad = |why: String| {
        format!(
            "cannot write --output {}: {why}; expected a file in an existing, writable directory",
            target.display()
        )
    };
    if target.is_dir() {
        return Err(bad("it is a directory".to_string()));
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".part")
        // As any new file: 0666 less the umask, not tempfile's private 0600.
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(&dir)
        .map_err(|e| bad(format!("{}: {}", dir.display(), plain(&e))))
}

/// An I/O error without tempfile's added path (which we name ourselves).
fn plain(e: &std::io::Error) -> String {
    e.raw_os_error().map_or_else(
        || e.to_string(),
        |code| std::io::Error::from_raw_os_error(code).to_string(),
    )
}
