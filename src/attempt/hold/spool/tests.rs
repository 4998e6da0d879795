use std::cell::RefCell;

use super::*;

thread_local! {
    /// What a test's spools wrote out, per stream (stdout, stderr).
    static EMITTED: RefCell<[Vec<u8>; 2]> = const { RefCell::new([Vec::new(), Vec::new()]) };
}

fn emit(fd: i32, bytes: &[u8]) -> std::io::Result<()> {
    EMITTED.with(|e| e.borrow_mut()[fd as usize - 1].extend_from_slice(bytes));
    Ok(())
}

fn emitted() -> [Vec<u8>; 2] {
    EMITTED.with(|e| std::mem::take(&mut *e.borrow_mut()))
}

fn spool(max: u64, whole_stdout: bool, may_cut: bool) -> Spool {
    let file = tempfile::tempfile().expect("a temporary file");
    let rules = Rules {
        max,
        whole_stdout,
        may_cut,
        held: [true, true],
    };
    emitted();
    Spool::with_emit(file, rules, emit)
}

/// Hold `bytes` as `stream` wrote them, in reads of at most `read` bytes.
fn feed(spool: &Spool, stream: u8, bytes: &[u8], read: usize) -> Appended {
    let mut last = Appended::Held;
    for piece in bytes.chunks(read) {
        let mut record = vec![0u8; HEADER];
        record.extend_from_slice(piece);
        last = spool.append(stream, &mut record);
        assert_eq!(&record[HEADER..], piece, "the bytes are left as they were");
    }
    last
}

/// Numbered lines, `n` of them: "line 0\nline 1\n...".
fn lines(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect()
}

#[test]
fn records_keep_their_stream_and_order_and_the_file_has_no_name() {
    let spool = Spool::create(Rules {
        max: 1 << 20,
        whole_stdout: false,
        may_cut: true,
        held: [true, true],
    })
    .expect("spool");
    feed(&spool, 1, b"one\n", 64);
    feed(&spool, 2, b"two\n", 64);
    feed(&spool, 1, b"", 64);
    feed(&spool, 1, b"three\n", 64);
    assert_eq!(spool.size(), 3 * HEADER as u64 + 14);
    assert_eq!(
        spool.read(Part::Head),
        [b"one\nthree\n".to_vec(), b"two\n".to_vec()]
    );
    assert_eq!(spool.read(Part::Tail), [Vec::<u8>::new(), Vec::new()]);
    let state = spool.lock();
    let meta = state.file.metadata().unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::nlink(&meta), 0);
}

#[test]
fn output_under_the_bound_is_all_kept_and_nothing_is_reported_cut() {
    let spool = spool(64 << 10, false, true);
    let text = lines(1000);
    feed(&spool, 2, &text, 4000);
    assert_eq!(spool.read(Part::Head)[1], text);
    let report = spool.report();
    assert_eq!(report.cut, None);
    assert_eq!(report.dropped, [Count::default(); 2]);
}

#[test]
fn output_over_the_bound_keeps_its_head_and_its_tail_and_counts_the_middle() {
    let max = 64 << 10;
    let spool = spool(max, false, true);
    let text = lines(100_000);
    feed(&spool, 2, &text, 3000);
    assert!(spool.size() <= max, "{} bytes held", spool.size());
    let head = spool.read(Part::Head)[1].clone();
    let tail = spool.read(Part::Tail)[1].clone();
    assert!(
        text.starts_with(&head) && head.len() >= 30_000,
        "{}",
        head.len()
    );
    assert!(
        text.ends_with(&tail) && tail.len() >= 24_000,
        "{}",
        tail.len()
    );
    let report = spool.report();
    assert_eq!(report.cut, Some(Why::Bound(max)));
    let dropped = report.dropped[1];
    assert_eq!(dropped.bytes, (text.len() - head.len() - tail.len()) as u64);
    let middle = &text[head.len()..text.len() - tail.len()];
    assert_eq!(
        dropped.lines,
        memchr::memchr_iter(b'\n', middle).count() as u64
    );
    assert_eq!(report.kept, (head.len() as u64, tail.len() as u64));
    assert_eq!(report.passing, [None, None]);
    assert_eq!(
        emitted(),
        [Vec::<u8>::new(), Vec::new()],
        "nothing passed through"
    );
}

#[test]
fn reads_larger_than_a_block_are_split_and_come_back_whole() {
    let spool = spool(1 << 20, false, true);
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    feed(&spool, 1, &bytes, 256 * 1024);
    assert_eq!(spool.read(Part::Head)[0], bytes);
}

#[test]
fn whole_stdout_at_the_bound_goes_out_at_once_and_passes_through_after() {
    let max = 64 << 10;
    let spool = spool(max, true, false);
    let text = lines(20_000);
    assert_eq!(feed(&spool, 1, &text, 1000), Appended::Passed);
    let [out, err] = emitted();
    // Everything, in order: what was held, then the rest of the read that
    // did not fit (the pump writes later reads itself).
    let held_then_passed = out.len();
    assert!(held_then_passed > 60_000, "{held_then_passed}");
    assert!(text.starts_with(&out));
    assert!(err.is_empty());
    assert_eq!(spool.report().passing[0], Some(Why::Bound(max)));
    assert!(!spool.holds(1), "written out: never written again");
    // Later reads go straight out too.
    assert_eq!(feed(&spool, 1, b"more\n", 64), Appended::Passed);
    assert_eq!(emitted()[0], b"more\n");
}

#[test]
fn with_both_rules_stdout_goes_out_whole_and_stderr_keeps_head_and_tail() {
    let max = 64 << 10;
    let spool = spool(max, true, true);
    let out = lines(2000);
    let err = lines(50_000);
    feed(&spool, 1, &out, 1000);
    feed(&spool, 2, &err, 1000);
    assert_eq!(emitted()[0], out, "stdout went out whole at the bound");
    let report = spool.report();
    assert_eq!(report.passing, [Some(Why::Bound(max)), None]);
    assert_eq!(report.dropped[0], Count::default(), "no stdout dropped");
    assert!(report.dropped[1].bytes > 0);
    assert!(err.ends_with(&spool.read(Part::Tail)[1]));
}

#[test]
fn release_writes_stdout_out_once() {
    let spool = spool(1 << 20, true, true);
    feed(&spool, 1, b"out\n", 64);
    feed(&spool, 2, b"err\n", 64);
    assert!(spool.holds(1));
    let written = spool.release_stdout();
    assert_eq!(written.written, 4);
    assert_eq!(emitted(), [b"out\n".to_vec(), Vec::new()]);
    assert!(!spool.holds(1));
    // The run then fails: only stderr is left to write out.
    spool.write_out(Part::Head, [true, true]);
    spool.write_out(Part::Tail, [true, true]);
    assert_eq!(emitted(), [Vec::new(), b"err\n".to_vec()]);
}

#[test]
fn blocks_scale_with_the_bound_and_never_number_more_than_the_most() {
    for max in [64 << 10, 64 << 20, 1 << 40] {
        let spool = spool(max, false, true);
        let state = spool.lock();
        assert!(state.blocks as u64 <= MAX_BLOCKS, "{max}: {}", state.blocks);
        assert!(state.blocks as u64 * state.block <= max, "{max}");
        assert!(state.blocks >= 16, "{max}: {}", state.blocks);
    }
}

/// With `--hold-output` beside `--last-stdout`, a read of stdout that
/// crosses the bound sends what was held out, and the rest of that read
/// must follow it out: held in the ring, it would never be written.
#[test]
fn stdout_crossing_the_bound_with_both_rules_loses_no_byte_of_the_read() {
    let max = 64 << 10;
    let spool = spool(max, true, true);
    let text = lines(20_000);
    assert_eq!(feed(&spool, 1, &text, 1000), Appended::Passed);
    assert_eq!(emitted()[0], text, "every byte, in order");
    assert_eq!(spool.report().passing[0], Some(Why::Bound(max)));
    assert!(!spool.holds(1));
}

/// stdout sent out whole at the bound is not counted among the bytes
/// dropped from the middle, even when the head's last record is stdout's
/// and ends mid-line: the log would say stdout lost bytes it never lost.
#[test]
fn stdout_sent_out_whole_is_not_counted_as_dropped() {
    let spool = spool(64 << 10, true, true);
    let mut text = lines(20_000);
    text.extend_from_slice(b"no newline at the end");
    feed(&spool, 1, &text, 1000);
    feed(&spool, 2, &lines(50_000), 1000);
    assert_eq!(emitted()[0], text);
    let report = spool.report();
    assert_eq!(report.dropped[0], Count::default(), "{report:?}");
    assert!(report.dropped[1].bytes > 0);
}
