//! Validation of simulation mode's flags (`--simulate N` and its server
//! model). Flags of this mode given without `--simulate` are usage errors.

use std::path::PathBuf;
use std::time::Duration;

use super::values::{DUR_FORM, UsageError, invalid, parse_duration, path_arg};
use crate::cli::{FormatArg, ModelArg, SimArgs};
use crate::sim::Model;
use crate::state::rules::{Budget, Pace};

/// Most clients a simulation takes: far past any fleet worth modelling on
/// one machine, small enough that the report comes back in seconds.
pub const MAX_CLIENTS: u32 = 1_000_000;

/// The validated simulation request.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    pub clients: u32,
    /// The server the flags describe (never `AlwaysFail`, the dry run's).
    pub model: Model,
    /// Every jitter kind side by side.
    pub compare: bool,
    pub json: bool,
    pub plot: Option<PathBuf>,
    /// `--jitter-max` for the additive run of `--compare`.
    pub additive_max: Duration,
    /// `--pace` and `--budget`: the clients share them as one group.
    pub pace: Option<Pace>,
    pub budget: Option<Budget>,
}

/// Validate the simulation flags. `Ok(None)` when `--simulate` was not given.
pub fn from_args(args: &SimArgs) -> Result<Option<SimOptions>, UsageError> {
    let Some(n) = args.simulate.as_deref() else {
        // Its flags without it are refused by `modes`.
        return Ok(None);
    };
    let clients = match n.trim().parse::<u32>() {
        Ok(c) if (1..=MAX_CLIENTS).contains(&c) => c,
        _ => {
            return Err(invalid(
                "--simulate",
                n,
                &format!("a whole number of clients from 1 to {MAX_CLIENTS}"),
            ));
        }
    };
    let outage = args
        .outage
        .as_deref()
        .map(|s| parse_duration(s).ok_or_else(|| invalid("--outage", s, DUR_FORM)))
        .transpose()?;
    let capacity = args
        .capacity
        .as_deref()
        .map(|s| {
            parse_rate(s).ok_or_else(|| {
                invalid(
                    "--capacity",
                    s,
                    "requests per second or minute above zero, such as 200/s, 0.5/s or 600/m",
                )
            })
        })
        .transpose()?;
    let burst = args
        .capacity_burst
        .as_deref()
        .map(|s| match s.trim().parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(invalid(
                "--capacity-burst",
                s,
                "a whole number of requests of at least 1",
            )),
        })
        .transpose()?;
    if burst.is_some() && capacity.is_none() {
        return Err(UsageError(
            "--capacity-burst applies only to --capacity RATE/s: add --capacity".to_string(),
        ));
    }
    if let Some(plot) = &args.plot {
        path_arg("--plot", plot, "an SVG file name such as herd.svg")?;
    }
    let window = args
        .fixed_window
        .as_deref()
        .map(|s| {
            parse_window(s).ok_or_else(|| {
                invalid(
                    "--fixed-window",
                    s,
                    "requests per window, such as 100/1s or 5000/1h",
                )
            })
        })
        .transpose()?;
    if let Some((limit, every)) = window {
        if args.model.is_some() || outage.is_some() || capacity.is_some() {
            return Err(UsageError(
                "--fixed-window is a server of its own: it cannot be combined with --outage, --capacity or --model"
                    .to_string(),
            ));
        }
        return Ok(Some(options(args, clients, Model::Window { limit, every })));
    }
    let model = match (args.model, outage, capacity) {
        (Some(ModelArg::Occ), None, None) => Model::Occ,
        (Some(ModelArg::Occ), _, _) => {
            return Err(UsageError(
                "--model occ is a server of its own: it cannot be combined with --outage or --capacity"
                    .to_string(),
            ));
        }
        (None, outage, Some(rate)) => Model::Capacity {
            rate,
            burst,
            outage,
        },
        (None, Some(until), None) => Model::Outage { until },
        (None, None, None) => {
            return Err(UsageError(
                "--simulate needs a server model: --outage DUR, --capacity RATE/s, --fixed-window LIMIT/DUR or --model occ"
                    .to_string(),
            ));
        }
    };
    Ok(Some(options(args, clients, model)))
}

fn options(args: &SimArgs, clients: u32, model: Model) -> SimOptions {
    SimOptions {
        clients,
        model,
        compare: args.compare,
        json: args.format == Some(FormatArg::Json),
        plot: args.plot.clone(),
        additive_max: Duration::from_secs(1),
        pace: None,
        budget: None,
    }
}

/// `100/1s`: a whole number of requests above zero per a duration above zero.
fn parse_window(s: &str) -> Option<(u32, Duration)> {
    let (n, every) = s.trim().split_once('/')?;
    let limit = n.trim().parse::<u32>().ok().filter(|n| *n >= 1)?;
    let every = parse_duration(every).filter(|d| !d.is_zero())?;
    Some((limit, every))
}

/// `200/s`, `600/m`, or a bare number per second.
fn parse_rate(s: &str) -> Option<f64> {
    let t = s.trim();
    let (num, per) = match t.split_once('/') {
        Some((n, "s")) => (n, 1.0),
        Some((n, "m")) => (n, 60.0),
        Some(_) => return None,
        None => (t, 1.0),
    };
    let n: f64 = num.trim().parse().ok()?;
    let rate = n / per;
    (rate.is_finite() && rate > 0.0).then_some(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("200/s"), Some(200.0));
        assert_eq!(parse_rate("600/m"), Some(10.0));
        assert_eq!(parse_rate("0.5"), Some(0.5));
        assert_eq!(parse_rate("0/s"), None);
        assert_eq!(parse_rate("-1/s"), None);
        assert_eq!(parse_rate("5/h"), None);
        assert_eq!(parse_rate("inf"), None);
    }

    fn args(simulate: Option<&str>) -> SimArgs {
        SimArgs {
            simulate: simulate.map(str::to_string),
            outage: None,
            capacity: None,
            capacity_burst: None,
            fixed_window: None,
            model: None,
            compare: false,
            format: None,
            plot: None,
        }
    }

    #[test]
    fn a_fixed_window_is_a_server_of_its_own() {
        let mut a = args(Some("10"));
        a.fixed_window = Some("100/1m".into());
        let o = from_args(&a).expect("valid").expect("some");
        assert_eq!(
            o.model,
            Model::Window {
                limit: 100,
                every: Duration::from_secs(60)
            }
        );
        for bad in ["0/1s", "10/0s", "10", "10/soon", "-1/1s", "1.5/1s"] {
            a.fixed_window = Some(bad.into());
            let e = from_args(&a).expect_err(bad).0;
            assert!(e.contains("--fixed-window") && e.contains("100/1s"), "{e}");
        }
        a.fixed_window = Some("10/1s".into());
        a.capacity = Some("20/s".into());
        let e = from_args(&a).expect_err("two servers").0;
        assert!(e.contains("cannot be combined"), "{e}");
    }

    #[test]
    fn models() {
        let mut a = args(Some("10"));
        a.outage = Some("5s".into());
        let o = from_args(&a).expect("valid").expect("some");
        assert_eq!(
            o.model,
            Model::Outage {
                until: Duration::from_secs(5)
            }
        );
        let mut a = args(Some("10"));
        a.outage = Some("5s".into());
        a.capacity = Some("20/s".into());
        let o = from_args(&a).expect("valid").expect("some");
        assert_eq!(
            o.model,
            Model::Capacity {
                rate: 20.0,
                burst: None,
                outage: Some(Duration::from_secs(5))
            }
        );
        let mut a = args(Some("10"));
        a.capacity = Some("20/s".into());
        a.capacity_burst = Some("1".into());
        let o = from_args(&a).expect("valid").expect("some");
        assert_eq!(
            o.model,
            Model::Capacity {
                rate: 20.0,
                burst: Some(1),
                outage: None
            }
        );
        let mut a = args(Some("10"));
        a.capacity_burst = Some("1".into());
        a.outage = Some("1s".into());
        assert!(
            from_args(&a)
                .expect_err("no capacity")
                .0
                .contains("--capacity-burst")
        );
        let mut a = args(Some("10"));
        a.capacity = Some("20/s".into());
        a.capacity_burst = Some("0".into());
        assert!(
            from_args(&a)
                .expect_err("zero")
                .0
                .contains("--capacity-burst")
        );
        let mut a = args(Some("10"));
        a.model = Some(ModelArg::Occ);
        a.outage = Some("1s".into());
        assert!(
            from_args(&a)
                .expect_err("occ alone")
                .0
                .contains("--model occ")
        );
        assert!(
            from_args(&args(Some("10")))
                .expect_err("no model")
                .0
                .contains("server model")
        );
        assert!(
            from_args(&args(Some("0")))
                .expect_err("zero")
                .0
                .contains("--simulate")
        );
    }
}
