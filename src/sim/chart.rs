//! **Pure.** Requests over time as a plain-text bar chart of a given width
//! (the terminal's, which `mode::simulate` reads). The height of a column is in
//! requests per 100 ms whatever the width: each column shows the busiest
//! 100 ms window that ends in it, so the tallest column is the report's
//! "busiest 100ms window", at 40 columns as at 200.

use std::fmt::Write;
use std::time::Duration;

use super::tally::{Timeline, WINDOW_NS, nanos};
use crate::human::human;

/// Width of the count labels on the left, at least (a count with more
/// digits widens them).
const LABEL: usize = 6;

/// The heading line of a chart.
pub const TITLE: &str = "requests per 100ms (each column: its busiest 100ms):";

/// How many timeline bins make one column, for at most `cols` columns from 0
/// to `end`: a column spans at least 100 ms, and a whole number of bins.
fn bins_per_column(timeline: &Timeline, end: Duration, cols: usize) -> usize {
    let step = nanos(timeline.step()).max(1);
    let need = (nanos(end) / cols.max(1) as u64 + 1).max(WINDOW_NS);
    need.div_ceil(step).max(1) as usize
}

/// The height of each column (the busiest 100 ms ending in it) from 0 to
/// `end`, in at most `cols` columns, and the time a column spans.
fn heights(timeline: &Timeline, end: Duration, cols: usize) -> (Vec<u64>, Duration) {
    let k = bins_per_column(timeline, end, cols);
    let columns = timeline.grouped(k, end + Duration::from_nanos(1));
    let slice = Duration::from_nanos(nanos(timeline.step()).saturating_mul(k as u64));
    (columns.iter().map(|(_, b)| b.peak).collect(), slice)
}

/// The chart of `timeline` from 0 to `end`, `width` characters wide and
/// `height` rows tall, with a mark under the column where the server
/// recovered, if it did within the span.
pub fn render(
    timeline: &Timeline,
    end: Duration,
    width: usize,
    height: usize,
    recovery: Option<Duration>,
) -> String {
    // The tallest column is the busiest 100 ms of all: its digits set the
    // labels' width, and so the room left for columns.
    let most = timeline.bins().iter().map(|b| b.peak).max().unwrap_or(0);
    let lw = most.to_string().len().max(LABEL);
    // The labels, then " |" or " +".
    let pad = lw + 2;
    let cols = width.saturating_sub(pad).max(10);
    let (counts, slice) = heights(timeline, end, cols);
    let drawn = counts.len();
    let top = counts.iter().copied().max().unwrap_or(0);
    let height = height.max(1) as u64;
    let mut s = String::new();
    for row in (1..=height).rev() {
        let label = if row == height {
            top.to_string()
        } else {
            String::new()
        };
        let _ = write!(s, "{label:>lw$} |");
        // A column reaches this row when its bar, scaled so the tallest is
        // `height` rows, covers any part of it: every nonzero column shows.
        let line: String = counts
            .iter()
            .map(|&c| {
                if c > 0 && c * height > (row - 1) * top {
                    '#'
                } else {
                    ' '
                }
            })
            .collect();
        let _ = writeln!(s, "{}", line.trim_end());
    }
    let _ = writeln!(s, "{:>lw$} +{}", 0, "-".repeat(drawn));
    if let Some(r) = recovery.filter(|r| *r <= end) {
        let col = ((nanos(r) / nanos(slice).max(1)) as usize).min(drawn.saturating_sub(1));
        let text = "^ server recovers";
        // The label goes left of the mark when it would not fit on the right.
        if col + text.len() <= cols {
            let _ = writeln!(s, "{:>pad$}{}{text}", "", " ".repeat(col));
        } else {
            let label = "server recovers ^";
            let _ = writeln!(
                s,
                "{:>pad$}{}{label}",
                "",
                " ".repeat((col + 1).saturating_sub(label.len()))
            );
        }
    }
    let first = "0s";
    let last = human(end);
    let gap = drawn.saturating_sub(first.len() + last.len());
    let _ = writeln!(s, "{:>pad$}{first}{}{last}", "", " ".repeat(gap));
    let mut footer = format!("each column: {} of virtual time", human(slice));
    if pad + footer.len() > width {
        footer.truncate(footer.len() - " of virtual time".len());
    }
    let _ = writeln!(s, "{:>pad$}{footer}", "");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Tally;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn timeline(times: &[Duration]) -> Timeline {
        let mut t = Tally::new(1, None, false);
        times.iter().for_each(|a| t.request(*a));
        t.timeline
    }

    #[test]
    fn the_chart_fits_the_width_and_shows_every_wave() {
        let mut a = vec![ms(0); 100];
        a.extend(vec![ms(1000); 50]);
        a.extend(vec![ms(3000); 1]);
        let c = render(&timeline(&a), ms(3000), 60, 4, Some(ms(1500)));
        assert!(c.lines().all(|l| l.chars().count() <= 60), "{c}");
        let bars: Vec<&str> = c.lines().take(4).collect();
        assert!(bars[0].starts_with("   100 |#"), "{c}");
        // The single late request still shows as one mark on the bottom row.
        assert!(bars[3].ends_with('#'), "{c}");
        assert_eq!(bars[0].matches('#').count(), 1);
        // 52 columns over 3 s would be 58 ms each: a column is at least
        // 100 ms, so 31 columns; 1.5 s is in column 15.
        let mark = c.lines().nth(5).expect("mark line");
        assert_eq!(mark.find('^'), Some(8 + 15), "{c}");
        assert!(c.contains("each column: 100ms"), "{c}");
    }

    #[test]
    fn long_counts_widen_the_labels() {
        let c = render(&timeline(&vec![ms(0); 1_234_567]), ms(0), 40, 3, None);
        assert!(c.lines().all(|l| l.chars().count() <= 40), "{c}");
        assert!(c.starts_with("1234567 |#"), "{c}");
        assert!(c.contains("\n      0 +"), "{c}");
    }

    #[test]
    fn the_height_is_per_100ms_whatever_the_width() {
        // A wave of 1000 at 0, then 30 requests 10 ms apart from 5 s: the
        // busiest 100 ms is 1000, and 10 after the wave.
        let mut a = vec![ms(0); 1000];
        a.extend((0..30).map(|i| ms(5000 + 10 * i)));
        let t = timeline(&a);
        for width in [40, 80, 200] {
            let c = render(&t, ms(5290), width, 10, None);
            assert!(c.starts_with("  1000 |#"), "{width}: {c}");
        }
        // 100 ms columns over the later requests: each shows 10 (once 100
        // ms of them have come), not the requests that fall in it.
        let (h, slice) = heights(&t, ms(5290), 192);
        assert_eq!(slice, ms(100));
        assert_eq!(&h[50..53], &[10, 10, 10], "{h:?}");
        // Wider columns show the same heights, not more per column.
        let (h, slice) = heights(&t, ms(5290), 32);
        assert!(slice > ms(150), "{slice:?}");
        assert_eq!(h.iter().skip(1).max(), Some(&10), "{h:?}");
    }
}
