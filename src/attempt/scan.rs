//! Matching `--retry-if-output` and `--stop-if-output` patterns against a
//! stream of output, line by line, whatever the chunks it arrives in.
//!
//! Pure: bytes in, "what matched" out. Memory is bounded: a line is held
//! up to [`WINDOW`] bytes; a longer line is searched in windows of that
//! size, each keeping the last [`OVERLAP`] bytes of the one before, so a
//! match up to that long is found wherever it lies in the line. `^`, `$`
//! and `\b` see the bytes around a window's edges, so a window edge is
//! never mistaken for the start or end of a line.
//!
//! Patterns are compiled in multi-line, CRLF mode: `^` and `$` match at the
//! ends of a line and around a carriage return (a progress display that
//! redraws itself with `\r` reads as lines), and `.` matches neither `\r`
//! nor `\n`. That is also what lets a whole chunk of complete lines be
//! searched at once: a chunk without a match (the usual case) costs one
//! search, not one per line.

use regex_automata::meta::Regex;
use regex_automata::util::syntax;
use regex_automata::{Input, PatternID};

use crate::classify::OutputMatch;

/// The most of one line held for matching at a time.
pub const WINDOW: usize = 64 * 1024;
/// How much of a long line's previous window the next one repeats.
pub const OVERLAP: usize = 4 * 1024;

/// The compiled patterns of a run.
#[derive(Debug, Clone)]
pub struct Patterns {
    stop: Option<Set>,
    retry: Option<Set>,
}

#[derive(Debug, Clone)]
struct Set {
    regex: Regex,
    sources: Vec<String>,
    /// Whether a chunk of many lines may be searched at once: false when a
    /// pattern's own flags could make a line match where the chunk does
    /// not (`\A`, `\z`, or turning multi-line or CRLF mode off).
    whole_chunks: bool,
}

impl Set {
    fn new(sources: &[String]) -> Result<Option<Set>, (String, String)> {
        if sources.is_empty() {
            return Ok(None);
        }
        // Check one by one, so an error names the pattern at fault.
        for s in sources {
            build(std::slice::from_ref(s)).map_err(|e| (s.clone(), e))?;
        }
        let regex = build(sources).map_err(|e| (sources.join(" "), e))?;
        Ok(Some(Set {
            regex,
            sources: sources.to_vec(),
            whole_chunks: sources.iter().all(|s| !changes_line_rules(s)),
        }))
    }

    fn find(&self, hay: &[u8], from: usize, to: usize) -> Option<PatternID> {
        let input = Input::new(hay).range(from..to);
        self.regex.search(&input).map(|m| m.pattern())
    }
}

fn build(sources: &[String]) -> Result<Regex, String> {
    Regex::builder()
        .syntax(
            syntax::Config::new()
                .multi_line(true)
                .crlf(true)
                // Output is bytes, not always UTF-8: as regex::bytes does.
                .utf8(false),
        )
        .configure(Regex::config().utf8_empty(false))
        .build_many(sources)
        .map_err(|e| {
            // The syntax error's own text, first line only.
            let text = match e.syntax_error() {
                Some(s) => s.to_string(),
                None => e.to_string(),
            };
            text.lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("invalid pattern")
                .trim()
                .trim_start_matches("error: ")
                .to_string()
        })
}

/// Whether a pattern may use anchors or flags under which a line can match
/// on its own but not inside a chunk of lines. Errs on the side of yes.
fn changes_line_rules(pattern: &str) -> bool {
    if pattern.contains("\\A") || pattern.contains("\\z") {
        return true;
    }
    pattern.match_indices("(?").any(|(at, _)| {
        pattern[at + 2..]
            .chars()
            .take_while(|c| *c != ':' && *c != ')')
            .any(|c| c == 'm' || c == 'R')
    })
}

/// An invalid pattern: the pattern and the compiler's one-line reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    pub flag: &'static str,
    pub pattern: String,
    pub reason: String,
}

impl Patterns {
    /// Compile both lists; an error names the list and the pattern.
    pub fn new(retry: &[String], stop: &[String]) -> Result<Patterns, PatternError> {
        let err = |flag| {
            move |(pattern, reason)| PatternError {
                flag,
                pattern,
                reason,
            }
        };
        Ok(Patterns {
            stop: Set::new(stop).map_err(err("--stop-if-output"))?,
            retry: Set::new(retry).map_err(err("--retry-if-output"))?,
        })
    }

    /// The pattern sources (retry, stop), for comparison and display.
    pub fn sources(&self) -> (&[String], &[String]) {
        fn list(s: &Option<Set>) -> &[String] {
            s.as_ref().map_or(&[], |s| s.sources.as_slice())
        }
        (list(&self.retry), list(&self.stop))
    }
}

impl PartialEq for Patterns {
    fn eq(&self, other: &Patterns) -> bool {
        self.sources() == other.sources()
    }
}

impl Eq for Patterns {}

/// The first pattern of each kind that matched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found {
    pub stop: Option<PatternID>,
    pub retry: Option<PatternID>,
}

impl Found {
    /// Both streams' findings together.
    pub fn merge(self, other: Found) -> Found {
        Found {
            stop: self.stop.or(other.stop),
            retry: self.retry.or(other.retry),
        }
    }

    /// As the classifier takes it: a stop match wins.
    pub fn to_output(self, patterns: &Patterns) -> OutputMatch {
        let source = |set: &Option<Set>, id: PatternID| {
            set.as_ref()
                .and_then(|s| s.sources.get(id.as_usize()))
                .cloned()
                .unwrap_or_default()
        };
        match (self.stop, self.retry) {
            (Some(id), _) => OutputMatch::Stop(source(&patterns.stop, id)),
            (None, Some(id)) => OutputMatch::Retry(source(&patterns.retry, id)),
            (None, None) => OutputMatch::None,
        }
    }
}

/// Matches one stream, fed in chunks as they arrive.
#[derive(Debug)]
pub struct Scanner {
    patterns: Patterns,
    /// The current line, or its latest window.
    line: Vec<u8>,
    /// `line` starts inside a long line: its first byte is context only.
    continued: bool,
    found: Found,
}

impl Scanner {
    pub fn new(patterns: Patterns) -> Scanner {
        Scanner {
            patterns,
            line: Vec::new(),
            continued: false,
            found: Found::default(),
        }
    }

    /// Nothing more could change the result: a stop pattern matched, or a
    /// retry pattern did and there are no stop patterns.
    pub fn settled(&self) -> bool {
        self.found.stop.is_some() || (self.found.retry.is_some() && self.patterns.stop.is_none())
    }

    /// What matched so far.
    pub fn finding(&self) -> Found {
        self.found
    }

    /// Take the next bytes of the stream.
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.settled() {
            return;
        }
        let Some(first) = memchr::memchr(b'\n', chunk) else {
            self.push(chunk);
            return;
        };
        self.push(&chunk[..first]);
        self.end_line();
        let rest = &chunk[first + 1..];
        let Some(last) = memchr::memrchr(b'\n', rest) else {
            self.push(rest);
            return;
        };
        let lines = &rest[..last];
        if self.may_match(lines) {
            for line in lines.split(|&b| b == b'\n') {
                if self.settled() {
                    return;
                }
                self.push(line);
                self.end_line();
            }
        }
        self.push(&rest[last + 1..]);
    }

    /// The stream ended: its last line may lack a newline.
    pub fn finish(&mut self) -> Found {
        if !self.line.is_empty() && !self.settled() {
            self.end_line();
        }
        self.found
    }

    /// Whether any pattern still wanted could match somewhere in these
    /// complete lines; true when that cannot be told from one search.
    fn may_match(&self, lines: &[u8]) -> bool {
        self.wanted()
            .any(|set| !set.whole_chunks || set.regex.is_match(Input::new(lines).earliest(true)))
    }

    /// The sets whose result is still open.
    fn wanted(&self) -> impl Iterator<Item = &Set> {
        let stop = self.patterns.stop.as_ref();
        let retry = self
            .patterns
            .retry
            .as_ref()
            .filter(|_| self.found.retry.is_none());
        stop.into_iter().chain(retry)
    }

    /// Add bytes of the current line, searching each window as it fills.
    fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = (WINDOW - self.line.len()).min(bytes.len());
            self.line.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.line.len() == WINDOW && !bytes.is_empty() {
                // The byte after the window is known to exist, so the last
                // byte is searched in the next window, where what follows it
                // is seen.
                self.search(WINDOW - 1);
                let keep_from = WINDOW - OVERLAP;
                self.line.drain(..keep_from);
                self.continued = true;
            }
        }
    }

    /// The current line is complete.
    fn end_line(&mut self) {
        if !self.settled() {
            self.search(self.line.len());
        }
        self.line.clear();
        self.continued = false;
    }

    /// Search the current line's bytes up to `to`; the first byte of a
    /// continued window is there only as context for `^` and `\b`.
    fn search(&mut self, to: usize) {
        let from = usize::from(self.continued);
        if from > to {
            return;
        }
        if let Some(set) = &self.patterns.stop
            && let Some(id) = set.find(&self.line, from, to)
        {
            self.found.stop = Some(id);
            return;
        }
        if self.found.retry.is_none()
            && let Some(set) = &self.patterns.retry
            && let Some(id) = set.find(&self.line, from, to)
        {
            self.found.retry = Some(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(retry: &[&str], stop: &[&str]) -> Patterns {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Patterns::new(&own(retry), &own(stop)).expect("valid patterns")
    }

    /// Feed `chunks` and report what matched.
    fn scan(p: &Patterns, chunks: &[&[u8]]) -> OutputMatch {
        let mut s = Scanner::new(p.clone());
        for c in chunks {
            s.feed(c);
        }
        s.finish().to_output(p)
    }

    fn stop(p: &str) -> OutputMatch {
        OutputMatch::Stop(p.to_string())
    }

    fn again(p: &str) -> OutputMatch {
        OutputMatch::Retry(p.to_string())
    }

    #[test]
    fn a_line_split_across_chunks_still_matches() {
        let p = patterns(&["connection refused"], &[]);
        let want = again("connection refused");
        assert_eq!(scan(&p, &[b"error: connec", b"tion ref", b"used\n"]), want);
        // Every split point of the same output.
        let text = b"ok\nerror: connection refused\nmore\n";
        for cut in 0..=text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(scan(&p, &[a, b]), want, "cut at {cut}");
        }
        // One byte at a time.
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(scan(&p, &bytes), want);
    }

    #[test]
    fn lines_are_the_unit_of_matching() {
        let p = patterns(&["^ready$"], &[]);
        assert_eq!(scan(&p, &[b"not ready\nready\n"]), again("^ready$"));
        assert_eq!(scan(&p, &[b"not ready\nready now\n"]), OutputMatch::None);
        // A pattern never spans two lines.
        let p = patterns(&["a.b", "a\\sb"], &[]);
        assert_eq!(scan(&p, &[b"xa\nby\n"]), OutputMatch::None);
        // The last line needs no newline.
        let p = patterns(&["done$"], &[]);
        assert_eq!(scan(&p, &[b"all done"]), again("done$"));
    }

    #[test]
    fn carriage_returns_end_lines_for_anchors() {
        let p = patterns(&["^ERROR$"], &[]);
        assert_eq!(scan(&p, &[b"ERROR\r\n"]), again("^ERROR$"));
        assert_eq!(scan(&p, &[b"10%\rERROR\r\n"]), again("^ERROR$"));
    }

    #[test]
    fn a_stop_match_wins() {
        let p = patterns(&["busy"], &["denied"]);
        assert_eq!(scan(&p, &[b"busy\naccess denied\n"]), stop("denied"));
        assert_eq!(scan(&p, &[b"access denied\nbusy\n"]), stop("denied"));
        assert_eq!(scan(&p, &[b"busy\n"]), again("busy"));
        // Both on one line.
        assert_eq!(scan(&p, &[b"busy, denied\n"]), stop("denied"));
    }

    #[test]
    fn names_the_pattern_that_matched() {
        let p = patterns(&["one", "two", "three"], &[]);
        assert_eq!(scan(&p, &[b"...two...\n"]), again("two"));
    }

    #[test]
    fn a_line_longer_than_the_window_is_searched_throughout() {
        let p = patterns(&["NEEDLE"], &[]);
        for len in [WINDOW - 3, WINDOW, WINDOW + 1, 3 * WINDOW + 17, 10 * WINDOW] {
            for at in [0, len / 2, len.saturating_sub(6), WINDOW - 3] {
                if at + 6 > len {
                    continue;
                }
                let mut line = vec![b'x'; len];
                line[at..at + 6].copy_from_slice(b"NEEDLE");
                line.push(b'\n');
                assert_eq!(scan(&p, &[&line]), again("NEEDLE"), "len {len} at {at}");
                let pieces: Vec<&[u8]> = line.chunks(4093).collect();
                assert_eq!(scan(&p, &pieces), again("NEEDLE"), "len {len} at {at}");
            }
            let line = vec![b'x'; len];
            assert_eq!(scan(&p, &[&line, b"\n"]), OutputMatch::None);
        }
        // A match up to OVERLAP long across a window edge.
        let long = format!("<{}>", "y".repeat(OVERLAP - 2));
        let p = patterns(&[&format!("<y{{{}}}>", OVERLAP - 2)], &[]);
        let mut line = vec![b'x'; WINDOW - 100];
        line.extend_from_slice(long.as_bytes());
        line.push(b'\n');
        assert!(matches!(scan(&p, &[&line]), OutputMatch::Retry(_)));
    }

    #[test]
    fn window_edges_are_not_line_edges() {
        // A window that ends right after "end" is not the end of the line,
        // and the next window does not start a line.
        let p = patterns(&["end$", "^start", "\\bword\\b"], &[]);
        let mut line = vec![b'x'; WINDOW - 3];
        line.extend_from_slice(b"end");
        line.extend_from_slice(b"start");
        line.extend_from_slice(&vec![b'x'; WINDOW]);
        line.extend_from_slice(b"words\n");
        assert_eq!(scan(&p, &[&line]), OutputMatch::None);
        // Anchors past a window edge still work where they are true.
        let mut line = vec![b'x'; 2 * WINDOW];
        line.extend_from_slice(b" end\n");
        assert_eq!(scan(&p, &[&line]), again("end$"));
    }

    #[test]
    fn binary_output_is_matched_as_bytes() {
        let p = patterns(&["(?-u:\\xff)fail"], &[]);
        assert_eq!(
            scan(&p, &[b"\x00\x01\xfe\n\xfffail\n"]),
            again("(?-u:\\xff)fail")
        );
        let p = patterns(&["fail"], &[]);
        assert_eq!(scan(&p, &[b"\xc3\x28 fail \x00\n"]), again("fail"));
    }

    #[test]
    fn anchors_to_the_whole_stream_still_work_per_line() {
        // \A is the start of each line; such patterns skip the chunk search.
        let p = patterns(&["\\Aok"], &[]);
        assert_eq!(scan(&p, &[b"x\ny\nok\nz\n"]), again("\\Aok"));
        let p = patterns(&["(?-m)^ok$"], &[]);
        assert_eq!(scan(&p, &[b"x\ny\nok\nz\n"]), again("(?-m)^ok$"));
    }

    #[test]
    fn bad_patterns_name_their_flag() {
        let e = Patterns::new(&["ok".into()], &["(unclosed".into()]).unwrap_err();
        assert_eq!(e.flag, "--stop-if-output");
        assert_eq!(e.pattern, "(unclosed");
        assert!(!e.reason.is_empty() && !e.reason.contains('\n'));
    }
}
