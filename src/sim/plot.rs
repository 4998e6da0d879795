//! `--plot FILE.svg`: requests per 100 ms over time, one line per jitter
//! kind, drawn with plotters' SVG backend.

use std::path::Path;
use std::time::Duration;

use plotters::prelude::*;

use super::Outcome;
use super::report::{Summary, WINDOW};

/// Requests per [`WINDOW`] from 0 to `end`, as (seconds, count) points.
fn series(arrivals: &[Duration], end: Duration) -> Vec<(f64, u64)> {
    let bins = (end.as_nanos() / WINDOW.as_nanos()) as usize + 1;
    let mut counts = vec![0u64; bins];
    for t in arrivals {
        let i = (t.as_nanos() / WINDOW.as_nanos()) as usize;
        if let Some(c) = counts.get_mut(i) {
            *c += 1;
        }
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| (i as f64 * WINDOW.as_secs_f64(), c))
        .collect()
}

/// Draw every run into one SVG at `path`, with a mark where the server
/// recovered, if it did.
pub fn write(
    path: &Path,
    title: &str,
    runs: &[(Summary, Outcome)],
    recovery: Option<Duration>,
) -> std::io::Result<()> {
    let text = svg(title, runs, recovery)?;
    std::fs::write(path, text)
}

/// The picture of every run, as SVG text.
pub fn svg(
    title: &str,
    runs: &[(Summary, Outcome)],
    recovery: Option<Duration>,
) -> std::io::Result<String> {
    let mut text = String::new();
    draw(&mut text, title, runs, recovery).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(text)
}

fn draw<'a>(
    out: &'a mut String,
    title: &str,
    runs: &[(Summary, Outcome)],
    recovery: Option<Duration>,
) -> Result<(), Box<dyn std::error::Error + 'a>> {
    let end = runs
        .iter()
        .filter_map(|(_, o)| o.arrivals.last().copied())
        .max()
        .unwrap_or_default();
    let lines: Vec<(&str, Vec<(f64, u64)>)> = runs
        .iter()
        .map(|(s, o)| (s.jitter.as_str(), series(&o.arrivals, end)))
        .collect();
    let top = lines
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
        .max()
        .unwrap_or(0)
        .max(1);
    let root = SVGBackend::with_string(out, (960, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 14))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..end.as_secs_f64().max(0.1), 0u64..top + top / 20 + 1)?;
    chart
        .configure_mesh()
        .x_desc("seconds since every client failed at once")
        .y_desc("requests per 100 ms")
        .draw()?;
    if let Some(r) = recovery.filter(|r| *r <= end) {
        let x = r.as_secs_f64();
        let grey = BLACK.mix(0.45);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x, 0), (x, top)],
                6,
                4,
                grey.stroke_width(1),
            ))?
            .label("server recovers")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
    }
    for (i, (name, pts)) in lines.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_counts_each_window() {
        let ms = Duration::from_millis;
        let s = series(&[ms(0), ms(99), ms(100), ms(350)], ms(350));
        let counts: Vec<u64> = s.iter().map(|p| p.1).collect();
        assert_eq!(counts, vec![2, 1, 0, 1]);
    }
}
