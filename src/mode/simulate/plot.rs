//! `--plot FILE.svg`: the picture for choosing a policy, drawn with
//! plotters' SVG backend.
//!
//! One row per run (per jitter kind with `--compare`), all on shared axes:
//! on the left the load on the server, in requests per 100 ms on a log
//! scale (the t = 0 burst, waves of a thousand and a trickle of thirty all
//! legible at once); on the right the share of clients through so far,
//! this run's curve in black over the others' in grey. Each row is named
//! above its panels with its figures, so no legend covers the data; the
//! colours read in greyscale. A run that goes on far longer than the
//! others is cut at the common end, and says so, rather than squeezing
//! every other run into a corner.

use std::time::Duration;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::human::human;
use crate::sim::Outcome;
use crate::sim::report::{Summary, WINDOW};
use crate::sim::tally::nanos;

/// What the picture shows besides the runs.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// The simulation's heading; wrapped to the picture's width.
    pub title: &'a str,
    /// When the server recovered, if it was down.
    pub recovery: Option<Duration>,
    /// `--stagger`'s spread, if the first attempts were spread out.
    pub stagger: Option<Duration>,
}

const WIDTH: u32 = 1000;
/// The load panel's share of the width.
const LOAD_SHARE: f64 = 0.62;
const TITLE_SIZE: u32 = 15;
const TITLE_LINE: u32 = 20;
/// Characters of the title a line holds (about 0.55 em each).
const TITLE_CHARS: usize = 112;
const HEADER: u32 = 22;
const AXIS: u32 = 44;
/// The load's colour (a blue that reads dark in greyscale).
const LOAD: RGBColor = RGBColor(0x00, 0x5A, 0x9C);
const OTHERS: RGBColor = RGBColor(0xBB, 0xBB, 0xBB);
const MARK: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// The picture of every run, as SVG text.
pub fn svg(frame: &Frame<'_>, runs: &[(Summary, Outcome)]) -> std::io::Result<String> {
    let mut text = String::new();
    draw(&mut text, frame, runs).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(text)
}

/// The title in lines of at most `width` characters, broken after "; "
/// (or at spaces in a part longer than a line).
pub fn wrap(title: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let parts: Vec<&str> = title.split("; ").collect();
    for (i, part) in parts.iter().enumerate() {
        let piece = if i + 1 < parts.len() {
            format!("{part};")
        } else {
            (*part).to_string()
        };
        for word in piece.split(' ') {
            let need = if line.is_empty() {
                word.len()
            } else {
                line.len() + 1 + word.len()
            };
            if need > width && !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        // Prefer breaking between parts: start a new line when the next
        // part would not fit on this one.
        if let Some(next) = parts.get(i + 1)
            && line.len() + 1 + next.len() + 1 > width
            && next.len() < width
        {
            lines.push(std::mem::take(&mut line));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The time axis's end: the end of the longest run, unless it lasts more
/// than four times as long as the median run; then the longest run within
/// that, and the runs past it are cut (and say so).
pub fn time_axis_end(ends: &[Duration], recovery: Option<Duration>) -> Duration {
    let mut sorted: Vec<Duration> = ends.to_vec();
    sorted.sort();
    let Some(&longest) = sorted.last() else {
        return Duration::from_secs(1);
    };
    let median = sorted[(sorted.len() - 1) / 2];
    let limit = median
        .saturating_mul(4)
        .max(recovery.unwrap_or_default() * 2);
    let end = sorted
        .iter()
        .copied()
        .filter(|e| *e <= limit)
        .max()
        .unwrap_or(longest);
    end.max(WINDOW)
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn draw(
    out: &mut String,
    frame: &Frame<'_>,
    runs: &[(Summary, Outcome)],
) -> Result<(), Box<dyn std::error::Error>> {
    let ends: Vec<Duration> = runs
        .iter()
        .map(|(_, o)| {
            o.tally
                .last_request
                .unwrap_or_default()
                .max(o.tally.last_success.unwrap_or_default())
        })
        .collect();
    let end = time_axis_end(&ends, frame.recovery);
    let title = wrap(frame.title, TITLE_CHARS);
    let title_h = 10 + TITLE_LINE * title.len() as u32;
    let row_h: u32 = if runs.len() == 1 { 320 } else { 150 };
    let height = title_h + row_h * runs.len() as u32 + AXIS;
    let root = SVGBackend::with_string(out, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let title_style = ("sans-serif", TITLE_SIZE).into_font().color(&BLACK);
    for (i, line) in title.iter().enumerate() {
        root.draw_text(line, &title_style, (16, 8 + TITLE_LINE as i32 * i as i32))?;
    }
    let (_, body) = root.split_vertically(title_h);
    // The load axis: up to the busiest 100 ms of any run, on a log scale.
    let top = runs
        .iter()
        .map(|(s, _)| s.busiest_100ms)
        .max()
        .unwrap_or(1)
        .max(100) as f64;
    let clients = runs.first().map_or(1, |(s, _)| s.clients.max(1));
    let mut rest = body;
    for (i, (s, o)) in runs.iter().enumerate() {
        let last = i + 1 == runs.len();
        let h = if last { row_h + AXIS } else { row_h };
        let (row, below) = rest.split_vertically(h);
        rest = below;
        let (header, panels) = row.split_vertically(HEADER);
        let cut = (ends[i] > end).then_some(ends[i]);
        header.draw_text(
            &row_title(s, frame.recovery, cut),
            &("sans-serif", 12).into_font().color(&BLACK),
            (16, 6),
        )?;
        let (left, right) = panels.split_horizontally((f64::from(WIDTH) * LOAD_SHARE) as u32);
        load_panel(&left, o, end, top, frame, last)?;
        through_panel(&right, runs, i, end, clients, frame, last)?;
    }
    root.present()?;
    Ok(())
}

/// The line above a row: the run's name and the figures to choose by;
/// `cut`: the run goes on past the time axis, until then.
fn row_title(s: &Summary, recovery: Option<Duration>, cut: Option<Duration>) -> String {
    let at = |ms: Option<f64>| {
        ms.map_or_else(
            || "-".to_string(),
            |m| human(Duration::from_secs_f64(m / 1000.0)),
        )
    };
    let load = match (recovery, s.busiest_100ms_after_recovery) {
        (Some(_), Some(after)) => format!("busiest 100ms after recovery {after}"),
        _ => format!("busiest 100ms {}", s.busiest_100ms),
    };
    let mut t = format!(
        "{} jitter — {load} · {:.2} requests per client · half through at {}, last at {}",
        s.jitter,
        s.requests_per_client,
        at(s.median_success_ms),
        at(s.last_success_ms)
    );
    if s.gave_up > 0 {
        t.push_str(&format!(" · {} of {} gave up", s.gave_up, s.clients));
    }
    if s.still_retrying > 0 {
        t.push_str(&format!(" · {} still retrying", s.still_retrying));
    }
    if let Some(until) = cut {
        t.push_str(&format!(" · goes on past the axis, to {}", human(until)));
    }
    t
}

/// What the time axis counts from, and what the dashed line marks.
fn time_desc(frame: &Frame<'_>) -> String {
    let from = match frame.stagger {
        None => "seconds since every client failed at once".to_string(),
        Some(s) => format!(
            "seconds since the clients failed (first attempts staggered over {})",
            human(s)
        ),
    };
    match frame.recovery {
        Some(r) => format!("{from}; dashed: the server recovers ({})", human(r)),
        None => from,
    }
}

/// Time-axis labels: whole seconds as `5s`, else as many decimals as needed.
fn secs_label(v: &f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}s")
}

fn load_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    o: &Outcome,
    end: Duration,
    top: f64,
    frame: &Frame<'_>,
    last: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let x_end = seconds(end);
    let floor = 0.7;
    let mut chart = ChartBuilder::on(area)
        .margin_left(8)
        .margin_right(12)
        .margin_top(2)
        .margin_bottom(6)
        .x_label_area_size(if last { AXIS } else { 0 })
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_end, (floor..top * 1.6).log_scale())?;
    let desc = time_desc(frame);
    let mut mesh = chart.configure_mesh();
    mesh.max_light_lines(0)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .y_desc("requests per 100ms (log)")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_label_formatter(&secs_label)
        .label_style(("sans-serif", 11))
        .axis_desc_style(("sans-serif", 12));
    if last {
        mesh.x_desc(desc.as_str()).x_labels(8);
    }
    mesh.draw()?;
    // One column per pixel or per 100 ms, whichever is wider; each shows
    // the busiest 100 ms that ends in it.
    let t = &o.tally.timeline;
    let px = area.dim_in_pixel().0.saturating_sub(84).max(50);
    let want = (nanos(end) / u64::from(px)).max(nanos(WINDOW));
    let k = want.div_ceil(nanos(t.step()).max(1)).max(1) as usize;
    let columns = t.grouped(k, end);
    let width = seconds(t.step()) * k as f64;
    let mut points = vec![(0.0, floor)];
    for (at, bin) in &columns {
        let x0 = seconds(*at).min(x_end);
        let x1 = (seconds(*at) + width).min(x_end);
        let v = (bin.peak as f64).max(floor);
        points.push((x0, v));
        points.push((x1, v));
    }
    points.push((x_end, floor));
    chart.draw_series(std::iter::once(Polygon::new(points, LOAD.filled())))?;
    if let Some(r) = frame.recovery.filter(|r| *r <= end) {
        let x = seconds(r);
        chart.draw_series(DashedLineSeries::new(
            vec![(x, floor), (x, top * 1.6)],
            5,
            4,
            MARK.stroke_width(1),
        ))?;
    }
    Ok(())
}

/// The right panel: the share of clients through over time, row `own`'s
/// run in black over the others in grey.
fn through_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    runs: &[(Summary, Outcome)],
    own: usize,
    end: Duration,
    clients: u32,
    frame: &Frame<'_>,
    last: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let x_end = seconds(end);
    let mut chart = ChartBuilder::on(area)
        .margin_left(4)
        .margin_right(16)
        .margin_top(2)
        .margin_bottom(6)
        .x_label_area_size(if last { AXIS } else { 0 })
        .y_label_area_size(52)
        .build_cartesian_2d(0f64..x_end, 0f64..100.0)?;
    let mut mesh = chart.configure_mesh();
    mesh.max_light_lines(0)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .y_desc("% of clients through")
        .y_labels(3)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_label_formatter(&secs_label)
        .label_style(("sans-serif", 11))
        .axis_desc_style(("sans-serif", 12));
    if last {
        mesh.x_desc("seconds (the same axis)").x_labels(5);
    }
    mesh.draw()?;
    // A point per pixel at most, where the share changes.
    let px = area.dim_in_pixel().0.saturating_sub(72).max(50);
    let curve = |o: &Outcome| -> Vec<(f64, f64)> {
        let t = &o.tally.timeline;
        let k = (nanos(end) / u64::from(px))
            .div_ceil(nanos(t.step()).max(1))
            .max(1) as usize;
        let mut through = 0u64;
        let mut points = vec![(0.0, 0.0)];
        for (at, bin) in t.grouped(k, end) {
            if bin.successes == 0 {
                continue;
            }
            let x = seconds(at).min(x_end);
            points.push((x, 100.0 * through as f64 / f64::from(clients)));
            through += bin.successes;
            points.push((x, 100.0 * through as f64 / f64::from(clients)));
        }
        let y = 100.0 * through as f64 / f64::from(clients);
        points.push((x_end, y));
        points
    };
    for (i, (_, o)) in runs.iter().enumerate() {
        if i != own {
            chart.draw_series(LineSeries::new(curve(o), OTHERS.stroke_width(1)))?;
        }
    }
    chart.draw_series(LineSeries::new(curve(&runs[own].1), BLACK.stroke_width(2)))?;
    if let Some(r) = frame.recovery.filter(|r| *r <= end) {
        let x = seconds(r);
        chart.draw_series(DashedLineSeries::new(
            vec![(x, 0.0), (x, 100.0)],
            5,
            4,
            MARK.stroke_width(1),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_wrap_between_parts() {
        let t = "1000 clients failing at once against optimistic concurrency (read, then conditional write); up to 5 attempts; exponential x2 backoff from 1s to 30s; each jitter kind; seed 1";
        let lines = wrap(t, 80);
        assert!(lines.iter().all(|l| l.len() <= 80), "{lines:?}");
        assert_eq!(lines.join(" "), t);
        assert!(lines[1].ends_with(';'), "{lines:?}");
        assert!(lines.last().expect("lines").ends_with("seed 1"));
        assert_eq!(wrap("short", 80), vec!["short"]);
    }

    #[test]
    fn a_run_far_longer_than_the_rest_is_cut() {
        let s = Duration::from_secs;
        assert_eq!(
            time_axis_end(&[s(750), s(35), s(30), s(40), s(33)], None),
            s(40)
        );
        assert_eq!(
            time_axis_end(&[s(15), s(7), s(12), s(14), s(10)], None),
            s(15)
        );
        // Never before the recovery's double.
        assert_eq!(time_axis_end(&[s(750), s(2), s(3)], Some(s(5))), s(3));
        assert_eq!(time_axis_end(&[s(9)], None), s(9));
    }
}
