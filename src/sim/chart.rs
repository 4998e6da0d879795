//! **Pure.** Arrivals over time as a plain-text bar chart of a given width
//! (the terminal's, which `cmd` reads): one column per time slice, bars of `#`.

use std::fmt::Write;
use std::time::Duration;

use crate::human::human;

/// Width of the count labels on the left, bar included.
const LABEL: usize = 8;

/// Requests per slice from 0 to `end`, in `cols` slices.
fn slices(arrivals: &[Duration], end: Duration, cols: usize) -> (Vec<u64>, Duration) {
    let cols = cols.max(1);
    // Round the slice up so the last arrival falls inside the last column.
    let slice = Duration::from_nanos(
        (u64::try_from(end.as_nanos()).unwrap_or(u64::MAX) / cols as u64).saturating_add(1),
    );
    let mut counts = vec![0u64; cols];
    for t in arrivals {
        let i = (t.as_nanos() / slice.as_nanos()) as usize;
        if let Some(c) = counts.get_mut(i.min(cols - 1)) {
            *c += 1;
        }
    }
    (counts, slice)
}

/// The chart of `arrivals` (sorted) over their own span.
pub fn render(
    arrivals: &[Duration],
    width: usize,
    height: usize,
    recovery: Option<Duration>,
) -> String {
    let end = arrivals.last().copied().unwrap_or_default();
    render_until(arrivals, end, width, height, recovery)
}

/// The chart of `arrivals` from 0 to `end`, `width` characters wide and
/// `height` rows tall, with a mark under the column where the server
/// recovered, if it did within the span.
pub fn render_until(
    arrivals: &[Duration],
    end: Duration,
    width: usize,
    height: usize,
    recovery: Option<Duration>,
) -> String {
    let cols = width.saturating_sub(LABEL).max(10);
    let (counts, slice) = slices(arrivals, end, cols);
    let top = counts.iter().copied().max().unwrap_or(0);
    let height = height.max(1) as u64;
    let mut s = String::new();
    for row in (1..=height).rev() {
        let label = if row == height {
            top.to_string()
        } else {
            String::new()
        };
        let _ = write!(s, "{label:>6} |");
        // A column reaches this row when its bar, scaled so the tallest is
        // `height` rows, covers any part of it: every nonzero slice shows.
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
    let _ = writeln!(s, "{:>6} +{}", 0, "-".repeat(cols));
    if let Some(r) = recovery.filter(|r| *r <= end) {
        let col = ((r.as_nanos() / slice.as_nanos()) as usize).min(cols - 1);
        let text = "^ server recovers";
        // The label goes left of the mark when it would not fit on the right.
        if col + text.len() <= cols {
            let _ = writeln!(s, "{:>8}{}{text}", "", " ".repeat(col));
        } else {
            let label = "server recovers ^";
            let _ = writeln!(
                s,
                "{:>8}{}{label}",
                "",
                " ".repeat((col + 1).saturating_sub(label.len()))
            );
        }
    }
    let first = "0s";
    let last = human(end);
    let gap = cols.saturating_sub(first.len() + last.len());
    let _ = writeln!(s, "{:>8}{first}{}{last}", "", " ".repeat(gap),);
    let _ = writeln!(s, "{:>8}each column: {} of virtual time", "", human(slice));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn every_arrival_lands_in_a_slice() {
        let a: Vec<Duration> = (0..=1000).map(ms).collect();
        let (counts, _) = slices(&a, ms(1000), 10);
        assert_eq!(counts.iter().sum::<u64>(), 1001);
        assert_eq!(counts.len(), 10);
    }

    #[test]
    fn the_chart_fits_the_width_and_shows_every_wave() {
        let mut a = vec![ms(0); 100];
        a.extend(vec![ms(1000); 50]);
        a.extend(vec![ms(3000); 1]);
        let c = render(&a, 60, 4, Some(ms(1500)));
        assert!(c.lines().all(|l| l.chars().count() <= 60), "{c}");
        let bars: Vec<&str> = c.lines().take(4).collect();
        assert!(bars[0].starts_with("   100 |#"), "{c}");
        // The single late request still shows as one mark on the bottom row.
        assert!(bars[3].ends_with('#'), "{c}");
        assert_eq!(bars[0].matches('#').count(), 1);
        // 52 columns over 3 s (each a nanosecond over 3 s / 52): 1.5 s falls
        // just short of column 26, in column 25.
        let mark = c.lines().nth(5).expect("mark line");
        assert_eq!(mark.find('^'), Some(8 + 25), "{c}");
    }
}
