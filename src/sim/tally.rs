//! The figures of a simulation, counted as it runs: every request and
//! success is seen once, in time order, and nothing per request is kept,
//! so a million clients making thirty million requests cost the same
//! memory as a thousand.
//!
//! The busiest 100 ms is a sliding window over the exact request times (the
//! same figure as sorting them all and sliding over them). The timeline
//! keeps, per time bin, the requests, successes and give-ups, and the
//! busiest 100 ms that ends in the bin; its bins start at 1 ms and double
//! in width whenever the run outgrows them, so it stays small however long
//! the run. Charts and plots are drawn from it. Pure.

use std::collections::VecDeque;
use std::time::Duration;

/// The width of the busiest-window figures, in nanoseconds.
pub const WINDOW_NS: u64 = 100_000_000;

/// The first width of a timeline bin.
const FIRST_STEP: u64 = 1_000_000;

/// Most bins a timeline holds before it doubles their width.
const MAX_BINS: usize = 1 << 14;

/// Nanoseconds since the start, held at u64::MAX (584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One bin of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bin {
    /// The most requests in any 100 ms window ending in this bin.
    pub peak: u64,
    pub requests: u64,
    pub successes: u64,
    pub gave_up: u64,
}

impl Bin {
    fn merge(self, other: Bin) -> Bin {
        Bin {
            peak: self.peak.max(other.peak),
            requests: self.requests + other.requests,
            successes: self.successes + other.successes,
            gave_up: self.gave_up + other.gave_up,
        }
    }
}

/// What happened over time, in bins of `step` nanoseconds from 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    step: u64,
    bins: Vec<Bin>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            step: FIRST_STEP,
            bins: Vec::new(),
        }
    }
}

impl Timeline {
    /// The bin width.
    pub fn step(&self) -> Duration {
        Duration::from_nanos(self.step)
    }

    pub fn bins(&self) -> &[Bin] {
        &self.bins
    }

    /// The end of the last bin holding anything.
    pub fn end(&self) -> Duration {
        Duration::from_nanos(self.step.saturating_mul(self.bins.len() as u64))
    }

    /// The bin for time `t`, widening the bins when `t` lies past the last
    /// one a timeline may hold.
    fn bin(&mut self, t: u64) -> &mut Bin {
        let mut i = t / self.step;
        while i >= MAX_BINS as u64 {
            self.step = self.step.saturating_mul(2);
            let merged: Vec<Bin> = self
                .bins
                .chunks(2)
                .map(|p| p.iter().copied().fold(Bin::default(), Bin::merge))
                .collect();
            self.bins = merged;
            i = t / self.step;
        }
        let i = i as usize;
        if i >= self.bins.len() {
            self.bins.resize(i + 1, Bin::default());
        }
        &mut self.bins[i]
    }

    /// The bins merged `k` at a time from 0 to `end` (whole groups), each
    /// covering `k` bin widths: (start of the group, merged bin).
    pub fn grouped(&self, k: usize, end: Duration) -> Vec<(Duration, Bin)> {
        let k = k.max(1);
        let width = self.step.saturating_mul(k as u64);
        let groups = nanos(end).div_ceil(width).max(1) as usize;
        (0..groups)
            .map(|g| {
                let from = (g * k).min(self.bins.len());
                let to = ((g + 1) * k).min(self.bins.len());
                let bin = self.bins[from..to]
                    .iter()
                    .copied()
                    .fold(Bin::default(), Bin::merge);
                (Duration::from_nanos(width.saturating_mul(g as u64)), bin)
            })
            .collect()
    }
}

/// Every request and success time, for tests that check a run exactly.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trace {
    pub arrivals: Vec<Duration>,
    pub successes: Vec<Duration>,
}

/// The running count of a simulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    recovery: Option<u64>,
    /// The success that is the median one (1-based): half the clients,
    /// rounded up.
    half: u64,
    pub requests: u64,
    pub last_request: Option<Duration>,
    /// Requests before the server recovered (0 when it never was down).
    pub before_recovery: u64,
    pub busiest: u64,
    /// The busiest window counting only requests once the server is back.
    pub busiest_after: u64,
    /// The requests of the last 100 ms: (time, how many at that time).
    window: VecDeque<(u64, u64)>,
    in_window: u64,
    /// Of those, the ones before the server recovered.
    early_in_window: u64,
    pub succeeded: u64,
    pub median_success: Option<Duration>,
    pub last_success: Option<Duration>,
    pub gave_up: u64,
    pub timeline: Timeline,
    pub trace: Option<Trace>,
}

impl Tally {
    /// An empty count for `clients` clients against a server that recovers
    /// at `recovery`, keeping every time too with `trace`.
    pub fn new(clients: u32, recovery: Option<Duration>, trace: bool) -> Tally {
        Tally {
            recovery: recovery.map(nanos),
            half: u64::from(clients).div_ceil(2),
            requests: 0,
            last_request: None,
            before_recovery: 0,
            busiest: 0,
            busiest_after: 0,
            window: VecDeque::new(),
            in_window: 0,
            early_in_window: 0,
            succeeded: 0,
            median_success: None,
            last_success: None,
            gave_up: 0,
            timeline: Timeline::default(),
            trace: trace.then(Trace::default),
        }
    }

    /// A request at `t`, no earlier than the last one.
    pub fn request(&mut self, t: Duration) {
        let ns = nanos(t);
        self.requests += 1;
        self.last_request = Some(t);
        let early = self.recovery.is_some_and(|r| ns < r);
        if early {
            self.before_recovery += 1;
        }
        // Slide: a request at `a` stays in the window while a + 100 ms > t.
        while let Some(&(a, n)) = self.window.front() {
            if a.saturating_add(WINDOW_NS) > ns {
                break;
            }
            self.window.pop_front();
            self.in_window -= n;
            if self.recovery.is_some_and(|r| a < r) {
                self.early_in_window -= n;
            }
        }
        match self.window.back_mut() {
            Some((a, n)) if *a == ns => *n += 1,
            _ => self.window.push_back((ns, 1)),
        }
        self.in_window += 1;
        if early {
            self.early_in_window += 1;
        }
        self.busiest = self.busiest.max(self.in_window);
        if self.recovery.is_some() && !early {
            self.busiest_after = self
                .busiest_after
                .max(self.in_window - self.early_in_window);
        }
        let in_window = self.in_window;
        let bin = self.timeline.bin(ns);
        bin.requests += 1;
        bin.peak = bin.peak.max(in_window);
        if let Some(trace) = &mut self.trace {
            trace.arrivals.push(t);
        }
    }

    /// A client succeeded at `t`, no earlier than the last one.
    pub fn success(&mut self, t: Duration) {
        self.succeeded += 1;
        if self.succeeded == self.half {
            self.median_success = Some(t);
        }
        self.last_success = Some(t);
        self.timeline.bin(nanos(t)).successes += 1;
        if let Some(trace) = &mut self.trace {
            trace.successes.push(t);
        }
    }

    /// A client gave up at `t`.
    pub fn give_up(&mut self, t: Duration) {
        self.gave_up += 1;
        self.timeline.bin(nanos(t)).gave_up += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The busiest window by brute force over sorted times.
    fn busiest(arrivals: &[Duration]) -> u64 {
        let w = Duration::from_nanos(WINDOW_NS);
        arrivals
            .iter()
            .map(|t| {
                arrivals
                    .iter()
                    .filter(|a| **a <= *t && **a + w > *t)
                    .count() as u64
            })
            .max()
            .unwrap_or(0)
    }

    fn tally(times: &[Duration], recovery: Option<Duration>) -> Tally {
        let mut t = Tally::new(4, recovery, false);
        for a in times {
            t.request(*a);
        }
        t
    }

    #[test]
    fn busiest_window_slides() {
        let a = [ms(0), ms(50), ms(99), ms(100), ms(150), ms(160), ms(199)];
        // [100, 200) holds 100, 150, 160 and 199.
        let t = tally(&a, Some(ms(100)));
        assert_eq!((t.busiest, t.busiest_after, t.before_recovery), (4, 4, 3));
        let t = tally(&a, Some(ms(150)));
        assert_eq!((t.busiest, t.busiest_after, t.before_recovery), (4, 3, 4));
        assert_eq!(tally(&[], None).busiest, 0);
        assert_eq!(tally(&[ms(5); 4], None).busiest, 4);
    }

    #[test]
    fn the_median_is_the_success_of_half_the_clients() {
        let mut t = Tally::new(5, None, false);
        for s in [10, 20, 30, 40] {
            t.success(ms(s));
        }
        assert_eq!(t.median_success, Some(ms(30)));
        assert_eq!(t.last_success, Some(ms(40)));
        let mut t = Tally::new(5, None, false);
        t.success(ms(1));
        assert_eq!(t.median_success, None);
    }

    #[test]
    fn the_timeline_widens_and_keeps_its_totals() {
        let mut t = Tally::new(1, None, false);
        t.request(ms(0));
        t.request(ms(0));
        t.request(ms(20_000));
        // 20 s in 1 ms bins would be 20,001 bins: widened to 2 ms.
        assert_eq!(t.timeline.step(), ms(2));
        assert_eq!(t.timeline.bins()[0].requests, 2);
        assert_eq!(t.timeline.bins()[0].peak, 2);
        assert_eq!(t.timeline.bins()[10_000].requests, 1);
        t.success(ms(1_000_000));
        let total: u64 = t.timeline.bins().iter().map(|b| b.requests).sum();
        assert_eq!(total, 3);
        assert_eq!(t.timeline.bins().iter().map(|b| b.peak).max(), Some(2));
        assert!(t.timeline.bins().len() <= MAX_BINS);
    }

    proptest! {
        #[test]
        fn the_running_figures_are_those_of_the_sorted_times(
            mut times in prop::collection::vec(0u64..3_000_000_000, 0..300),
            recovery in 0u64..3_000_000_000,
        ) {
            times.sort_unstable();
            let times: Vec<Duration> = times.into_iter().map(Duration::from_nanos).collect();
            let r = Duration::from_nanos(recovery);
            let t = tally(&times, Some(r));
            let from = times.partition_point(|a| *a < r);
            prop_assert_eq!(t.busiest, busiest(&times));
            prop_assert_eq!(t.busiest_after, busiest(&times[from..]));
            prop_assert_eq!(t.before_recovery, from as u64);
            // The timeline's peaks are the busiest window ending in each bin.
            let peak = t.timeline.bins().iter().map(|b| b.peak).max().unwrap_or(0);
            prop_assert_eq!(peak, t.busiest);
        }
    }
}
