//! One attempt's held output: records (which stream, how long, the bytes)
//! in an unnamed file, under a bound on the file's size.
//!
//! The file is cut into equal blocks, and a record never crosses a block's
//! end (a read that does not fit is split in two records). When the bound
//! is reached, or the disk fills up first, what happens depends on what is
//! held:
//!
//! - output that may be cut (`--hold-output`, a log) keeps its first half:
//!   the blocks after it become a ring, where each new block replaces the
//!   oldest, so the end of the output is always kept. The blocks dropped
//!   are counted (bytes and lines, per stream) so that retry can say what
//!   is missing. A disk that fills up first makes the ring out of the
//!   blocks already written, rewritten in place.
//! - stdout that must come out whole (`--last-stdout`) is never cut: what
//!   is held of it is written out at once, and it passes through from then
//!   on. So does everything when the disk leaves too little room for a
//!   ring.
//!
//! Memory stays flat: a few counters per block, at most [`MAX_BLOCKS`].

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, TryLockError};

use super::write_all;
use crate::human::io_error;

/// The bytes in front of each record: the stream (1 or 2) and the length
/// of the bytes that follow (u32, little-endian).
pub const HEADER: usize = 5;

/// The most blocks a spool is cut into: the bound sets their size.
pub const MAX_BLOCKS: u64 = 1024;

/// The smallest block, and the unit of every block's size.
const PAGE: u64 = 4096;

/// Blocks that must be left for a ring: fewer, and output that cannot be
/// held passes through instead.
const MIN_RING: usize = 2;

/// How a spool keeps its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// The file never grows past this many bytes, headers included.
    pub max: u64,
    /// stdout comes out whole or passes through, never cut (`--last-stdout`).
    pub whole_stdout: bool,
    /// What is held may lose its middle (`--hold-output`).
    pub may_cut: bool,
    /// The streams held (stdout, stderr): only they ever pass through.
    pub held: [bool; 2],
}

/// Why holding stopped, or the middle of the output was dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The bound (`--hold-max`) was reached.
    Bound(u64),
    /// The disk has no room left: the error, in words.
    Full(String),
    /// Holding failed for another reason, in words.
    Failed(String),
}

/// Bytes and lines of one stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    pub bytes: u64,
    /// Newlines among those bytes.
    pub lines: u64,
}

impl Count {
    fn add(&mut self, other: Count) {
        self.bytes += other.bytes;
        self.lines += other.lines;
    }
}

/// What a spool kept and lost, for the lines retry logs about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Why the middle of the output was dropped, if it was.
    pub cut: Option<Why>,
    /// The bytes of output dropped from the middle, per stream (stdout, stderr).
    pub dropped: [Count; 2],
    /// Bytes of output kept before the cut and after it.
    pub kept: (u64, u64),
    /// Bytes that could not be held and are missing, and why.
    pub lost: Option<(u64, String)>,
    /// A stream that stopped being held and passed through, and why.
    pub passing: [Option<Why>; 2],
}

/// What holding a read came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// The bytes are held.
    Held,
    /// The bytes went out to retry's own descriptor, and the stream passes
    /// through from now on (what was held of it went out first).
    Passed,
}

/// Which part of the held output to write out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Everything before the cut (all of it when nothing was cut).
    Head,
    /// Everything after the cut.
    Tail,
}

/// What writing the held output out came to.
#[derive(Debug, Default)]
pub struct WrittenOut {
    /// Bytes of output written out.
    pub written: u64,
    /// A stream that could not take its bytes, and the error.
    pub failed: Option<(u8, std::io::Error)>,
}

/// An attempt's output, held.
#[derive(Debug)]
pub struct Spool {
    state: Mutex<State>,
    /// A writer was left behind with the spool (its reader took nothing
    /// before the deadline or a signal): it may hold the state for good.
    abandoned: AtomicBool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Block {
    /// Bytes of complete records in the block.
    fill: u64,
    /// Bytes the block may hold: less than the block size only for the
    /// last block before the disk filled up.
    cap: u64,
    /// Output per stream in the block.
    count: [Count; 2],
    /// Where the block's last record starts.
    last: Option<u64>,
}

#[derive(Debug)]
struct State {
    file: File,
    rules: Rules,
    /// Every block's size.
    block: u64,
    /// Blocks the spool may use (fewer once the disk filled up).
    blocks: usize,
    /// Blocks kept from the start once the ring turns.
    head: usize,
    /// The blocks used so far.
    meta: Vec<Block>,
    /// The block being written.
    cur: usize,
    /// Once the ring has turned: its oldest block.
    oldest: Option<usize>,
    cut: Option<Why>,
    dropped: [Count; 2],
    lost: Option<(u64, String)>,
    /// A stream that passes through now, and why.
    passing: [Option<Why>; 2],
    /// A stream whose held bytes have been written out.
    out: [bool; 2],
    /// How bytes reach retry's own stdout (1) and stderr (2).
    emit: Emit,
}

/// Writes bytes to retry's stdout (1) or stderr (2).
type Emit = fn(i32, &[u8]) -> std::io::Result<()>;

impl Spool {
    /// A new, empty spool in the temporary directory: see
    /// [`crate::fsutil::scratch_in_tmpdir`].
    /// Its blocks are cut from the smaller of the bound and the room on
    /// the disk now, so that a bound far beyond the disk (`--hold-max 16T`)
    /// still leaves blocks enough for a ring when the disk fills up.
    pub fn create(rules: Rules) -> Result<Spool, String> {
        let file = crate::fsutil::scratch_in_tmpdir()?;
        let room = crate::fsutil::room_of(&file);
        Ok(Spool::sized(file, rules, write_all, room))
    }

    #[cfg(test)]
    fn with_emit(file: File, rules: Rules, emit: Emit) -> Spool {
        Spool::sized(file, rules, emit, None)
    }

    /// A spool in `file`, which must be empty, on a disk with `room` bytes
    /// free (if known).
    fn sized(file: File, rules: Rules, emit: Emit, room: Option<u64>) -> Spool {
        let reach = room.map_or(rules.max, |r| r.min(rules.max));
        let block = (reach / MAX_BLOCKS).max(PAGE).next_multiple_of(PAGE);
        // Blocks cut small for a small disk: as many as the bound allows,
        // but never more counters than a disk many times as large needs.
        let blocks = usize::try_from((rules.max / block).min(MAX_BLOCKS * 16))
            .unwrap_or(usize::MAX)
            .max(1);
        Spool {
            state: Mutex::new(State {
                file,
                rules,
                block,
                blocks,
                head: blocks / 2,
                meta: vec![Block {
                    cap: block,
                    ..Block::default()
                }],
                cur: 0,
                oldest: None,
                cut: None,
                dropped: [Count::default(); 2],
                lost: None,
                passing: [None, None],
                out: [false; 2],
                emit,
            }),
            abandoned: AtomicBool::new(false),
        }
    }

    /// A writer is left behind with the spool: nothing more is to be
    /// written from it (its reader takes nothing), nor asked of it.
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::Relaxed);
    }

    /// Abandons the spool if someone holds it now: a writer left behind
    /// in the middle of writing it out.
    pub fn abandon_if_busy(&self) {
        if matches!(self.state.try_lock(), Err(TryLockError::WouldBlock)) {
            self.abandon();
        }
    }

    /// Whether [`Spool::abandon`] was called.
    pub fn abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold one read: `record[HEADER..]` are the bytes `stream` (1 or 2)
    /// wrote; `record[..HEADER]` is room for a header, so that a record
    /// costs one write. The bytes in `record[HEADER..]` are left as they
    /// were.
    pub fn append(&self, stream: u8, record: &mut [u8]) -> Appended {
        let s = usize::from(stream.clamp(1, 2)) - 1;
        let mut state = self.lock();
        let n = record.len().saturating_sub(HEADER);
        if state.passing[s].is_some() {
            let _ = (state.emit)(fd(s), &record[HEADER..]);
            return Appended::Passed;
        }
        let mut at = 0;
        while at < n {
            // Making room may have sent this stream out (stdout that must
            // come whole, at the bound or on a full disk): the rest of the
            // read follows it out, or it would be held where nothing writes
            // it out again.
            if state.passing[s].is_some() {
                return state.pass_rest(s, &record[HEADER + at..]);
            }
            if state.lost.is_some() {
                if let Some((lost, _)) = state.lost.as_mut() {
                    *lost += (n - at) as u64;
                }
                return Appended::Held;
            }
            let cur = state.cur;
            let room = state.meta[cur].cap - state.meta[cur].fill;
            if room <= HEADER as u64 {
                if state.advance() {
                    continue;
                }
                return state.pass_rest(s, &record[HEADER + at..]);
            }
            let take = (room - HEADER as u64).min((n - at) as u64) as usize;
            // The header goes in front of the bytes: at `at`, over bytes
            // already held (or the header room), put back afterwards.
            let mut saved = [0u8; HEADER];
            saved.copy_from_slice(&record[at..at + HEADER]);
            record[at] = stream;
            record[at + 1..at + HEADER].copy_from_slice(&(take as u32).to_le_bytes());
            let offset = cur as u64 * state.block + state.meta[cur].fill;
            let wrote = state
                .file
                .write_all_at(&record[at..at + HEADER + take], offset);
            record[at..at + HEADER].copy_from_slice(&saved);
            match wrote {
                Ok(()) => {
                    let bytes = &record[HEADER + at..HEADER + at + take];
                    let block = &mut state.meta[cur];
                    block.last = Some(block.fill);
                    block.fill += (HEADER + take) as u64;
                    block.count[s].add(Count {
                        bytes: take as u64,
                        lines: memchr::memchr_iter(b'\n', bytes).count() as u64,
                    });
                    at += take;
                }
                // Written on, passed through or lost: the loop's first
                // steps tell which.
                Err(e) => {
                    state.failed(&e);
                }
            }
        }
        Appended::Held
    }

    /// Write out `part` of the held output of the chosen `streams`
    /// (stdout, stderr) to retry's own stdout and stderr, each record to its
    /// stream, in order; a stream written out in full is not written again.
    /// A stream that cannot take its bytes is skipped from then on.
    pub fn write_out(&self, part: Part, streams: [bool; 2]) -> WrittenOut {
        let mut state = self.lock();
        let want = [0, 1].map(|s| streams[s] && !state.out[s]);
        let mut out = WrittenOut::default();
        state.write_blocks(&state.part(part), want, &mut out);
        if part == Part::Tail || state.oldest.is_none() {
            for (out, wanted) in state.out.iter_mut().zip(want) {
                *out |= wanted;
            }
        }
        out
    }

    /// Write out the whole held stdout now (`--last-stdout`'s success). It
    /// counts as written out from the start: an interrupted release is not
    /// begun again.
    pub fn release_stdout(&self) -> WrittenOut {
        let mut state = self.lock();
        let want = [!state.out[0], false];
        state.out[0] = true;
        let mut out = WrittenOut::default();
        for part in [Part::Head, Part::Tail] {
            state.write_blocks(&state.part(part), want, &mut out);
        }
        out
    }

    /// What was kept and lost.
    pub fn report(&self) -> Report {
        let state = self.lock();
        let kept = |blocks: &[usize]| -> u64 {
            blocks
                .iter()
                .map(|&b| state.meta[b].count.iter().map(|c| c.bytes).sum::<u64>())
                .sum()
        };
        Report {
            cut: state.cut.clone().filter(|_| state.oldest.is_some()),
            dropped: state.dropped,
            kept: (kept(&state.part(Part::Head)), kept(&state.part(Part::Tail))),
            lost: state.lost.clone(),
            passing: state.passing.clone(),
        }
    }

    /// Whether `stream` (1 or 2) holds output not yet written out.
    pub fn holds(&self, stream: u8) -> bool {
        let s = usize::from(stream.clamp(1, 2)) - 1;
        let state = self.lock();
        !state.out[s] && state.meta.iter().any(|b| b.count[s].bytes > 0)
    }

    /// Bytes in the file: records and their headers.
    #[cfg(test)]
    fn size(&self) -> u64 {
        let state = self.lock();
        state.meta.iter().map(|b| b.fill).sum()
    }

    /// The bytes of `part`, per stream, as writing it out would give them.
    #[cfg(test)]
    fn read(&self, part: Part) -> [Vec<u8>; 2] {
        let state = self.lock();
        let mut got = [Vec::new(), Vec::new()];
        let mut out = WrittenOut::default();
        state.each_record(&state.part(part), [true, true], &mut out, &mut |s, b| {
            got[s].extend_from_slice(b);
            Ok(())
        });
        got
    }
}

/// retry's own descriptor for stream index `s` (0: stdout, 1: stderr).
fn fd(s: usize) -> i32 {
    s as i32 + 1
}

impl State {
    /// Move on to a new block: the next one while there is room, else the
    /// ring's oldest (its bytes dropped). False when holding must stop:
    /// then the streams that cannot be cut pass through.
    fn advance(&mut self) -> bool {
        if self.oldest.is_none() && self.cur + 1 < self.blocks {
            self.cur += 1;
            if self.meta.len() <= self.cur {
                self.meta.push(Block::default());
            }
            self.meta[self.cur] = Block {
                cap: self.block,
                ..Block::default()
            };
            return true;
        }
        if self.cut.is_none() {
            let reach = self.blocks as u64 * self.block;
            self.cut = Some(if reach >= self.rules.max {
                Why::Bound(self.rules.max)
            } else {
                // The counters ran out before the bound: the disk, as it
                // was when holding began, was the limit.
                Why::Full(format!(
                    "{} free when it began",
                    crate::human::human_size(reach)
                ))
            });
        }
        self.turn()
    }

    /// Make room by dropping the ring's oldest block. stdout that must come
    /// out whole goes out first; when nothing may be cut, or there is no
    /// ring to speak of, everything still held goes out and passes through.
    fn turn(&mut self) -> bool {
        let why = self.cut.clone().unwrap_or(Why::Bound(self.rules.max));
        if self.rules.whole_stdout && self.passing[0].is_none() {
            self.spill([true, false], &why);
        }
        if !self.rules.may_cut || self.blocks - self.head < MIN_RING {
            self.spill([true, true], &why);
            return false;
        }
        if self.oldest.is_none() {
            self.end_head_on_a_line();
        }
        let next = self.oldest.unwrap_or(self.head);
        let old = self.meta[next];
        for s in 0..2 {
            if self.passing[s].is_none() {
                self.dropped[s].add(old.count[s]);
            }
        }
        self.meta[next] = Block {
            cap: old.cap,
            ..Block::default()
        };
        self.cur = next;
        self.oldest = Some(if next + 1 < self.blocks {
            next + 1
        } else {
            self.head
        });
        true
    }

    /// The ring turns for the first time: the head is final. A line it
    /// ends in the middle of is dropped with the middle, so that what is
    /// kept ends on a whole line (when its last read has a newline).
    fn end_head_on_a_line(&mut self) {
        let Some(b) = self.head.checked_sub(1) else {
            return;
        };
        let Some(last) = self.meta[b].last else {
            return;
        };
        let at = b as u64 * self.block + last;
        let mut head = [0u8; HEADER];
        if self.file.read_exact_at(&mut head, at).is_err() {
            return;
        }
        let s = usize::from(head[0].clamp(1, 2)) - 1;
        // A stream already sent out whole (stdout that must come whole)
        // is never written from here: nothing of it is dropped.
        if self.passing[s].is_some() {
            return;
        }
        let len = u64::from(u32::from_le_bytes([head[1], head[2], head[3], head[4]]));
        // The record's last newline, searched from its end.
        let mut buf = vec![0u8; 64 * 1024];
        let mut end = len;
        let keep = loop {
            if end == 0 {
                return;
            }
            let start = end.saturating_sub(buf.len() as u64);
            let piece = &mut buf[..(end - start) as usize];
            if self
                .file
                .read_exact_at(piece, at + HEADER as u64 + start)
                .is_err()
            {
                return;
            }
            if let Some(i) = memchr::memrchr(b'\n', piece) {
                break start + i as u64 + 1;
            }
            end = start;
        };
        if keep == len {
            return;
        }
        head[1..].copy_from_slice(&(keep as u32).to_le_bytes());
        if self.file.write_all_at(&head, at).is_err() {
            return;
        }
        let cut = len - keep;
        let block = &mut self.meta[b];
        block.fill = last + HEADER as u64 + keep;
        block.count[s].bytes -= cut;
        self.dropped[s].bytes += cut;
    }

    /// A write failed. A full disk turns the blocks written so far into the
    /// spool's whole room (or, with no room for a ring, sends everything
    /// out); any other failure loses what cannot be held, or passes stdout
    /// through when it must come whole.
    fn failed(&mut self, e: &std::io::Error) {
        let full = matches!(
            e.raw_os_error(),
            Some(nix::libc::ENOSPC | nix::libc::EDQUOT | nix::libc::EFBIG)
        );
        if full && self.oldest.is_none() {
            let cur = self.cur;
            self.meta[cur].cap = self.meta[cur].fill;
            // A block the disk left no room in is no block at all.
            self.blocks = if self.meta[cur].fill == 0 && cur > 0 {
                cur
            } else {
                cur + 1
            };
            self.head = self.head.min(self.blocks / 2);
            self.cut = Some(Why::Full(io_error(e)));
            self.turn();
            return;
        }
        let why = Why::Failed(io_error(e));
        if self.rules.whole_stdout && self.passing[0].is_none() {
            self.spill([true, false], &why);
        }
        if self.rules.may_cut {
            self.lost = Some((0, io_error(e)));
        } else {
            self.spill([true, true], &why);
        }
    }

    /// Write out what is held of `streams` now, and let them pass through
    /// from now on.
    fn spill(&mut self, streams: [bool; 2], why: &Why) {
        let streams = [0, 1].map(|s| streams[s] && self.rules.held[s]);
        let want = [0, 1].map(|s| streams[s] && self.passing[s].is_none() && !self.out[s]);
        let mut out = WrittenOut::default();
        for part in [Part::Head, Part::Tail] {
            self.write_blocks(&self.part(part), want, &mut out);
        }
        for (s, spilled) in streams.into_iter().enumerate() {
            if spilled && self.passing[s].is_none() {
                self.passing[s] = Some(why.clone());
                self.out[s] = true;
            }
        }
    }

    /// The rest of a read of stream index `s` that could not be held: it
    /// goes straight out.
    fn pass_rest(&mut self, s: usize, rest: &[u8]) -> Appended {
        if self.passing[s].is_none() {
            // Nothing may be lost: a stream that must be cut has a ring.
            self.spill([s == 0, s == 1], &Why::Bound(self.rules.max));
        }
        let _ = (self.emit)(fd(s), rest);
        Appended::Passed
    }

    /// The blocks of `part`, in order.
    fn part(&self, part: Part) -> Vec<usize> {
        let used = self.cur + 1;
        match (part, self.oldest) {
            (Part::Head, None) => (0..used).collect(),
            (Part::Tail, None) => Vec::new(),
            (Part::Head, Some(_)) => (0..self.head).collect(),
            (Part::Tail, Some(oldest)) => (oldest..self.blocks).chain(self.head..oldest).collect(),
        }
    }

    /// Write the records of `blocks` whose stream is wanted to retry's own
    /// descriptors.
    fn write_blocks(&self, blocks: &[usize], want: [bool; 2], out: &mut WrittenOut) {
        let emit = self.emit;
        self.each_record(blocks, want, out, &mut |s, bytes| emit(fd(s), bytes));
    }

    /// Hand the bytes of each record of `blocks` whose stream is wanted to
    /// `sink`, in pieces of at most 64 KiB; a stream whose sink fails is
    /// not wanted from then on.
    fn each_record(
        &self,
        blocks: &[usize],
        mut want: [bool; 2],
        out: &mut WrittenOut,
        sink: &mut dyn FnMut(usize, &[u8]) -> std::io::Result<()>,
    ) {
        if !want.contains(&true) {
            return;
        }
        let mut buf = vec![0u8; 64 * 1024];
        for &b in blocks {
            let block = self.meta[b];
            let base = b as u64 * self.block;
            let mut at = 0u64;
            while at + HEADER as u64 <= block.fill {
                let mut head = [0u8; HEADER];
                if let Err(e) = self.file.read_exact_at(&mut head, base + at) {
                    out.failed = Some((0, e));
                    return;
                }
                let s = usize::from(head[0].clamp(1, 2)) - 1;
                let len = u64::from(u32::from_le_bytes([head[1], head[2], head[3], head[4]]));
                at += HEADER as u64;
                let end = at + len;
                while want[s] && at < end {
                    let take = (end - at).min(buf.len() as u64) as usize;
                    if let Err(e) = self.file.read_exact_at(&mut buf[..take], base + at) {
                        out.failed = Some((0, e));
                        return;
                    }
                    at += take as u64;
                    match sink(s, &buf[..take]) {
                        Ok(()) => out.written += take as u64,
                        Err(e) => {
                            want[s] = false;
                            out.failed = Some((fd(s) as u8, e));
                        }
                    }
                }
                at = end;
            }
        }
    }
}

#[cfg(test)]
mod tests;
