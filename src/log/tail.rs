//! The last lines of the log, kept in memory as text whatever the log's own
//! format and verbosity, for a summary sent elsewhere (`--ping-log`).

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// A bounded record of the log's last lines; clones share it.
#[derive(Clone, Debug)]
pub struct Tail {
    kept: Arc<Mutex<Vec<u8>>>,
    limit: usize,
}

impl Tail {
    /// A record of at least the last `limit` bytes (whole lines when they fit).
    pub fn new(limit: usize) -> Tail {
        Tail {
            kept: Arc::new(Mutex::new(Vec::new())),
            limit,
        }
    }

    /// The lines kept, oldest first: at most `limit` bytes, starting at
    /// the beginning of a line where one starts in them.
    pub fn text(&self) -> String {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let from = kept.len().saturating_sub(self.limit);
        let mut bytes = &kept[from..];
        // A line cut at its start is dropped whole.
        if from > 0
            && kept[from - 1] != b'\n'
            && let Some(nl) = bytes.iter().position(|&b| b == b'\n')
        {
            bytes = &bytes[nl + 1..];
        }
        String::from_utf8_lossy(bytes).into_owned()
    }
}

impl Write for Tail {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.extend_from_slice(buf);
        // Trim now and then rather than on every line.
        if kept.len() > self.limit.saturating_mul(2).max(4096) {
            let cut = kept.len() - self.limit;
            kept.drain(..cut);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_whole_lines_within_the_limit() {
        let mut tail = Tail::new(27);
        for i in 0..1000 {
            writeln!(tail, "line {i}").unwrap();
        }
        assert_eq!(tail.text(), "line 997\nline 998\nline 999\n");
        // One byte short of three lines: two, never half of one.
        let cut = Tail { limit: 26, ..tail };
        assert_eq!(cut.text(), "line 998\nline 999\n");
        let mut short = Tail::new(100);
        writeln!(short, "one").unwrap();
        assert_eq!(short.text(), "one\n");
    }
}
