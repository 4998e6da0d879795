//! `--simulate N`: the simulations run (once, or once per jitter kind with
//! `--compare`), the report printed on stdout (text or JSON), and the
//! picture drawn into `--plot`'s file, which is settled before the run.

use crate::exit;
use crate::log::Logger;
use crate::policy::{Config, SimOptions};
use crate::rng;
use crate::sim::report::{self, Summary};

mod json;
pub mod plot;
mod plotfile;
pub mod runs;
use runs::{frame, heading, runs};

/// The width to draw at: the terminal's when stdout is one, else `COLUMNS`,
/// else 80; kept within 40..=200 so the chart stays readable.
fn chart_width() -> usize {
    let w = terminal_size::terminal_size_of(std::io::stdout())
        .map(|(w, _)| usize::from(w.0))
        .or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .unwrap_or(80);
    w.clamp(40, 200)
}

pub fn main(config: &Config, sim: &SimOptions, seed: u64) -> u8 {
    let policy = &config.policy;
    // The picture's file is settled before the run, which can take seconds.
    let plot = match sim.plot.as_deref().map(plotfile::open).transpose() {
        Ok(p) => p,
        Err(e) => {
            Logger::stderr().error(&e);
            return exit::USAGE;
        }
    };
    let runs = runs(policy, sim, || rng::seeded(seed));
    let recovery = sim.model.recovery();
    let text = if sim.json {
        let summaries: Vec<Summary> = runs.iter().map(|(s, _)| s.clone()).collect();
        let json = json::Report::of(policy, sim, &sim.model, seed, &summaries);
        match serde_json::to_string_pretty(&json) {
            Ok(s) => s + "\n",
            Err(e) => {
                Logger::stderr().error(&format!("cannot render the report: {e}"));
                return exit::INTERNAL;
            }
        }
    } else {
        let head = heading(policy, sim, seed);
        let width = chart_width();
        if sim.compare {
            report::table(&head, &runs, width, recovery)
        } else {
            let (s, o) = &runs[0];
            report::text(&head, s, o, width, recovery)
        }
    };
    if let Some(file) = plot {
        let title = heading(policy, sim, seed);
        let path = file.path().to_path_buf();
        let written =
            plot::svg(&frame(&title, policy, sim), &runs).and_then(|svg| file.write(&svg));
        if let Err(e) = written {
            Logger::stderr().error(&format!("cannot write --plot {}: {e}", path.display()));
            return exit::INTERNAL;
        }
    }
    super::print(&text)
}
