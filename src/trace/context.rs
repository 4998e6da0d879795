//! W3C Trace Context as OpenTelemetry's environment carrier hands it over:
//! `TRACEPARENT` parsed and checked, `TRACESTATE` and `BAGGAGE` checked and
//! passed on unchanged, and new trace and span ids.
//!
//! Pure: the values come in as strings, ids are drawn from the generator
//! passed in (never the jitter generator of `--seed`: two runs with one
//! seed must not share ids).
//!
//! The rules are Trace Context Level 1's: version 00 is exactly 55
//! characters; `ff` is no version; a later version is read by its first 55
//! characters, which must be followed by the end or a `-`; hex is lower
//! case only; an all-zero trace id or parent id is invalid. Surrounding
//! spaces and tabs are ignored, as a header's are.

use rand::Rng;

/// The longest `tracestate` passed on. The specification asks every
/// vendor to pass on at least 512 characters; longer lists may be cut,
/// and retry, which adds no entry of its own, does not pass one on at all
/// rather than choose which entries to drop.
pub const TRACESTATE_MAX: usize = 512;
/// The most entries a `tracestate` may have.
const TRACESTATE_ENTRIES: usize = 32;
/// The longest `baggage` passed on: the W3C Baggage limit.
pub const BAGGAGE_MAX: usize = 8192;

/// The `sampled` flag.
pub const SAMPLED: u8 = 0x01;

/// A trace: 16 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span: 8 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

/// A span's place in a trace: what a `traceparent` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub flags: u8,
}

impl SpanContext {
    /// Its `traceparent`, always version 00.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace_id.0),
            hex(&self.span_id.0),
            self.flags
        )
    }

    /// A child of this span: the same trace and flags, a new span id.
    pub fn child<R: Rng + ?Sized>(&self, rng: &mut R) -> SpanContext {
        SpanContext {
            trace_id: self.trace_id,
            span_id: SpanId::new(rng),
            flags: self.flags,
        }
    }

    /// The first span of a new trace, sampled.
    pub fn root<R: Rng + ?Sized>(rng: &mut R) -> SpanContext {
        SpanContext {
            trace_id: TraceId::new(rng),
            span_id: SpanId::new(rng),
            flags: SAMPLED,
        }
    }
}

impl TraceId {
    /// A random trace id (drawn again in the 2^-128 case of all zeros).
    pub fn new<R: Rng + ?Sized>(rng: &mut R) -> TraceId {
        loop {
            let mut id = [0u8; 16];
            rng.fill_bytes(&mut id);
            if id != [0; 16] {
                return TraceId(id);
            }
        }
    }

    pub fn hex(&self) -> String {
        hex(&self.0)
    }
}

impl SpanId {
    /// A random span id, never all zeros.
    pub fn new<R: Rng + ?Sized>(rng: &mut R) -> SpanId {
        loop {
            let mut id = [0u8; 8];
            rng.fill_bytes(&mut id);
            if id != [0; 8] {
                return SpanId(id);
            }
        }
    }

    pub fn hex(&self) -> String {
        hex(&self.0)
    }
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Why a `traceparent` is not one; the words follow "is not a W3C
/// traceparent: ".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// Not `VERSION-TRACEID-PARENTID-FLAGS` with the right lengths.
    Shape,
    /// Upper-case hex (or another character) where lower-case hex belongs.
    NotLowerHex,
    /// Version `ff`, which the specification forbids.
    ForbiddenVersion,
    /// Version 00 with something after the flags.
    TrailingData,
    TraceIdZero,
    SpanIdZero,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Invalid::Shape => "expected 00-<32 hex digits>-<16 hex digits>-<2 hex digits>",
            Invalid::NotLowerHex => "hex digits must be lower case (0-9, a-f)",
            Invalid::ForbiddenVersion => "version ff is invalid",
            Invalid::TrailingData => "version 00 is exactly 55 characters",
            Invalid::TraceIdZero => "the trace id is all zeros",
            Invalid::SpanIdZero => "the parent id is all zeros",
        })
    }
}

/// Parses a `traceparent`.
pub fn parse_traceparent(value: &str) -> Result<SpanContext, Invalid> {
    let v = value.trim_matches([' ', '\t']).as_bytes();
    if v.len() < 55 {
        return Err(Invalid::Shape);
    }
    let version = lower_hex(&v[0..2])?;
    if v[2] != b'-' {
        return Err(Invalid::Shape);
    }
    match version[0] {
        0xff => return Err(Invalid::ForbiddenVersion),
        0x00 if v.len() != 55 => return Err(Invalid::TrailingData),
        // A later version: its first 55 characters read as version 00's,
        // and whatever follows is set off by a dash.
        _ if v.len() > 55 && v[55] != b'-' => return Err(Invalid::Shape),
        _ => {}
    }
    if v[35] != b'-' || v[52] != b'-' {
        return Err(Invalid::Shape);
    }
    let trace: [u8; 16] = lower_hex(&v[3..35])?
        .try_into()
        .map_err(|_| Invalid::Shape)?;
    let span: [u8; 8] = lower_hex(&v[36..52])?
        .try_into()
        .map_err(|_| Invalid::Shape)?;
    let flags = lower_hex(&v[53..55])?[0];
    if trace == [0; 16] {
        return Err(Invalid::TraceIdZero);
    }
    if span == [0; 8] {
        return Err(Invalid::SpanIdZero);
    }
    // A later version's flags may mean more than version 00 knows: only
    // `sampled` is kept.
    let flags = if version[0] == 0 {
        flags
    } else {
        flags & SAMPLED
    };
    Ok(SpanContext {
        trace_id: TraceId(trace),
        span_id: SpanId(span),
        flags,
    })
}

/// Lower-case hex digits (an even number of them) as bytes.
fn lower_hex(digits: &[u8]) -> Result<Vec<u8>, Invalid> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'-' => Err(Invalid::Shape),
        _ => Err(Invalid::NotLowerHex),
    };
    digits
        .chunks(2)
        .map(|pair| Ok(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// Checks a `tracestate`: the value to pass on (unchanged, surrounding
/// whitespace aside), `None` when it is empty, or why it is not passed on.
pub fn check_tracestate(value: &str) -> Result<Option<&str>, &'static str> {
    let v = value.trim_matches([' ', '\t']);
    if v.len() > TRACESTATE_MAX {
        return Err("longer than 512 characters");
    }
    let mut keys: Vec<&str> = Vec::new();
    for member in v.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        let Some((key, val)) = member.split_once('=') else {
            return Err("an entry is not key=value");
        };
        if !valid_key(key) {
            return Err("an entry's key is not a valid tracestate key");
        }
        if !valid_value(val) {
            return Err("an entry's value is not a valid tracestate value");
        }
        if keys.contains(&key) {
            return Err("a key appears twice");
        }
        keys.push(key);
    }
    if keys.len() > TRACESTATE_ENTRIES {
        return Err("more than 32 entries");
    }
    Ok((!keys.is_empty()).then_some(v))
}

/// `simple-key` or `tenant@system`.
fn valid_key(key: &str) -> bool {
    let rest = |c: u8| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/');
    match key.split_once('@') {
        None => {
            let k = key.as_bytes();
            (1..=256).contains(&k.len()) && k[0].is_ascii_lowercase() && k.iter().all(|&c| rest(c))
        }
        Some((tenant, system)) => {
            let (t, s) = (tenant.as_bytes(), system.as_bytes());
            (1..=241).contains(&t.len())
                && (t[0].is_ascii_lowercase() || t[0].is_ascii_digit())
                && t.iter().all(|&c| rest(c))
                && (1..=14).contains(&s.len())
                && s[0].is_ascii_lowercase()
                && s.iter().all(|&c| rest(c))
        }
    }
}

/// Up to 256 printable characters but `,` and `=`, not ending in a space.
fn valid_value(value: &str) -> bool {
    let v = value.as_bytes();
    v.len() <= 256
        && v.iter()
            .all(|&c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
        && v.last() != Some(&b' ')
}

/// Checks a `baggage`, opaque to retry: passed on unchanged when it fits
/// a header (printable ASCII) and the W3C limit of 8192 bytes.
pub fn check_baggage(value: &str) -> Result<Option<&str>, &'static str> {
    let v = value.trim_matches([' ', '\t']);
    if v.len() > BAGGAGE_MAX {
        return Err("longer than 8192 bytes");
    }
    if !v.bytes().all(|c| (0x20..=0x7e).contains(&c)) {
        return Err("holds characters a header cannot carry");
    }
    Ok((!v.is_empty()).then_some(v))
}

/// The context retry was handed, as checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Incoming {
    /// The parent of retry's run.
    pub parent: Option<SpanContext>,
    /// Passed on only beside a valid parent (the specification: a
    /// tracestate belongs to its traceparent).
    pub tracestate: Option<String>,
    pub baggage: Option<String>,
    /// One line for each value ignored.
    pub warnings: Vec<String>,
}

/// A value that is set and not blank.
fn given(v: Option<&str>) -> Option<&str> {
    v.filter(|v| !v.trim_matches([' ', '\t']).is_empty())
}

/// Reads the carrier's three values (an empty one counts as unset).
pub fn incoming(
    traceparent: Option<&str>,
    tracestate: Option<&str>,
    baggage: Option<&str>,
) -> Incoming {
    let mut out = Incoming::default();
    if let Some(tp) = given(traceparent) {
        match parse_traceparent(tp) {
            Ok(parent) => out.parent = Some(parent),
            Err(why) => out.warnings.push(format!(
                "TRACEPARENT is not a W3C traceparent ({why}): ignored{}",
                if given(tracestate).is_some() {
                    ", and TRACESTATE with it"
                } else {
                    ""
                }
            )),
        }
    }
    if out.parent.is_some()
        && let Some(ts) = given(tracestate)
    {
        match check_tracestate(ts) {
            Ok(v) => out.tracestate = v.map(str::to_string),
            Err(why) => out
                .warnings
                .push(format!("TRACESTATE is not passed on: {why}")),
        }
    }
    if let Some(b) = given(baggage) {
        match check_baggage(b) {
            Ok(v) => out.baggage = v.map(str::to_string),
            Err(why) => out
                .warnings
                .push(format!("BAGGAGE is not passed on: {why}")),
        }
    }
    out
}

#[cfg(test)]
#[path = "context/tests.rs"]
mod tests;
