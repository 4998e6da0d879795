//! `--simulate`: the storm lab, run through the real binary.

use crate::util::{retry, scratch};

fn json(out: &crate::util::Outcome) -> serde_json::Value {
    serde_json::from_str(&out.stdout_text()).expect("one JSON report")
}

#[test]
fn a_seeded_simulation_is_reproducible() {
    let run = |seed: &str, format: &str| {
        let out = retry([
            "--simulate",
            "500",
            "--capacity",
            "100/s",
            "--outage",
            "2s",
            "--seed",
            seed,
            "--format",
            format,
        ])
        .run();
        out.expect_code(0);
        assert!(out.stderr.is_empty(), "{}", out.stderr_text());
        out.stdout_text()
    };
    assert_eq!(run("4", "text"), run("4", "text"));
    assert_eq!(run("4", "json"), run("4", "json"));
    assert_ne!(run("4", "json"), run("5", "json"));
}

#[test]
fn the_report_counts_requests_waves_and_give_ups() {
    // No jitter, 100ms doubling: waves at 0, 0.1, 0.3, 0.7, 1.5s; the outage
    // ends at 1s, so all 200 clients succeed on their fifth attempt.
    let out = retry([
        "--simulate",
        "200",
        "--outage",
        "1s",
        "--jitter",
        "none",
        "--base",
        "100ms",
        "--max",
        "10",
        "--format",
        "json",
    ])
    .run();
    out.expect_code(0);
    let v = json(&out);
    let run = &v["runs"][0];
    assert_eq!(run["requests"], 1000);
    assert_eq!(run["busiest_100ms"], 200);
    assert_eq!(run["busiest_100ms_after_recovery"], 200);
    assert_eq!(run["last_success_ms"], 1500.0);
    assert_eq!(run["gave_up"], 0);
    assert_eq!(v["clients"], 200);
}

#[test]
fn compare_runs_every_jitter_kind_in_one_table() {
    let out = retry([
        "--simulate",
        "100",
        "--outage",
        "3s",
        "--compare",
        "--seed",
        "1",
    ])
    .env("COLUMNS", "70")
    .run();
    out.expect_code(0);
    let text = out.stdout_text();
    for kind in ["none", "full", "equal", "decorrelated", "additive"] {
        assert!(
            text.lines().any(|l| l.starts_with(kind)),
            "no row for {kind}: {text}"
        );
    }
    // The charts fit the terminal's width.
    assert!(
        text.lines()
            .filter(|l| l.contains('|') || l.contains('+'))
            .all(|l| l.chars().count() <= 70),
        "{text}"
    );
}

#[test]
fn one_simulated_client_waits_exactly_as_a_real_run() {
    for jitter in ["full", "decorrelated", "equal"] {
        let policy = [
            "--max", "5", "--base", "10ms", "--cap", "80ms", "--seed", "77", "--jitter", jitter,
        ];
        let mut real_args = vec!["-v", "--log-format", "json"];
        real_args.extend(policy);
        real_args.extend(["--", "false"]);
        let real = retry(real_args).run();
        real.expect_code(1);
        let real_waits: Vec<f64> = real
            .json()
            .iter()
            .filter(|e| e["event"] == "sleep")
            .map(|e| e["delay_ms"].as_f64().expect("delay_ms"))
            .collect();
        let attempts = real
            .json()
            .iter()
            .filter(|e| e["event"] == "attempt")
            .count();

        let mut sim_args = vec!["--simulate", "1", "--outage", "1h", "--format", "json"];
        sim_args.extend(policy);
        let sim = retry(sim_args).run();
        sim.expect_code(0);
        let v = json(&sim);
        let sim_waits: Vec<f64> = v["runs"][0]["waits_ms"]
            .as_array()
            .expect("waits_ms")
            .iter()
            .map(|w| w.as_f64().expect("number"))
            .collect();
        assert_eq!(attempts, 5);
        assert_eq!(v["runs"][0]["requests"], 5);
        assert_eq!(real_waits.len(), 4);
        assert_eq!(sim_waits, real_waits, "{jitter}");
    }
}

#[test]
fn simulation_flags_without_simulate_are_usage_errors() {
    for args in [
        vec!["--outage", "1s", "--", "true"],
        vec!["--compare", "--dry-run"],
        vec!["--model", "occ", "--", "true"],
        vec!["--format", "json", "--", "true"],
    ] {
        let out = retry(&args).run();
        out.expect_usage_line("applies only to --simulate");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn bad_simulations_are_usage_errors_naming_the_flag() {
    for (args, flag) in [
        (vec!["--simulate", "0", "--outage", "1s"], "--simulate"),
        (vec!["--simulate", "x", "--outage", "1s"], "--simulate"),
        (vec!["--simulate", "10"], "--outage"),
        (vec!["--simulate", "10", "--capacity", "0/s"], "--capacity"),
        (vec!["--simulate", "10", "--outage", "soon"], "--outage"),
        (
            vec!["--simulate", "10", "--outage", "1s", "--model", "occ"],
            "--model occ",
        ),
        (
            vec!["--simulate", "10", "--outage", "1s", "--", "true"],
            "COMMAND",
        ),
        (
            vec!["--simulate", "10", "--outage", "1s", "--dry-run"],
            "--dry-run",
        ),
        (
            vec!["--simulate", "10", "--outage", "1s", "--retry-on", "1"],
            "--retry-on",
        ),
        (
            vec!["--simulate", "10", "--outage", "1s", "--breaker"],
            "--breaker",
        ),
        (
            vec!["--simulate", "10", "--outage", "1s", "--pace", "fast"],
            "--pace",
        ),
        (
            vec!["--simulate", "10", "--outage", "1s", "--budget", "0"],
            "--budget",
        ),
        (
            vec!["--simulate", "10", "--outage", "1s", "--state", "/tmp"],
            "--state",
        ),
        (
            vec!["--simulate", "10", "--outage", "1s", "--state-required"],
            "--state-required",
        ),
    ] {
        retry(&args).run().expect_usage_line(flag);
    }
}

#[test]
fn a_simulated_fleet_shares_its_pace_and_budget() {
    let dir = scratch();
    let home = dir.path().join("home");
    let sim = |extra: &[&str]| {
        let mut args = vec![
            "--simulate",
            "300",
            "--capacity",
            "100/s",
            "--outage",
            "3s",
            "--seed",
            "2",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        // A group and a store from the environment change nothing.
        let out = retry(&args)
            .env("HOME", home.to_str().expect("utf-8 path"))
            .env("RETRY_GROUP", "fleet")
            .env(
                "RETRY_STATE",
                dir.path().join("state").to_str().expect("utf-8"),
            )
            .run();
        out.expect_code(0);
        assert!(out.stderr.is_empty(), "{}", out.stderr_text());
        json(&out)
    };
    let alone = sim(&[]);
    let paced = sim(&["--pace", "20/s"]);
    let (a, p) = (&alone["runs"][0], &paced["runs"][0]);
    // 20/s is at most 2 starts in any 100 ms window once the server is back,
    // and at most 3 s x 20/s (plus the first attempts) while it is down.
    assert_eq!(p["busiest_100ms_after_recovery"], 2, "{p}");
    assert!(
        p["requests_before_recovery"].as_u64() <= Some(300 + 60),
        "{p}"
    );
    assert!(a["busiest_100ms_after_recovery"].as_u64() > Some(10), "{a}");
    // Unpaced, some clients run out of attempts against the capacity.
    assert_eq!(p["gave_up"], 0, "{p}");
    assert!(a["gave_up"].as_u64() > Some(0), "{a}");
    // A budget of 10 lets 4 retries through, then refuses the rest.
    let b = &sim(&["--budget", "10"])["runs"][0];
    assert_eq!(b["refused_by_budget"], 300, "{b}");
    assert_eq!(b["requests"], 304, "{b}");
    // --compare paces every jitter kind alike.
    let c = sim(&["--pace", "20/s", "--compare"]);
    let runs = c["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 5);
    for r in runs {
        assert!(r["busiest_100ms_after_recovery"].as_u64() <= Some(2), "{r}");
    }
    // Nothing was written: the fleet's state lives in memory.
    assert!(!home.exists() && !dir.path().join("state").exists());
    let text = retry([
        "--simulate",
        "30",
        "--outage",
        "1s",
        "--pace",
        "20/s",
        "--pace-burst",
        "3",
        "--budget",
    ])
    .run();
    text.expect_code(0);
    let head = text.stdout_text();
    assert!(
        head.contains("shared pace 20/s, burst 3; shared budget 100:0.1"),
        "{head}"
    );
}

#[test]
fn a_timeout_from_the_environment_does_not_stop_a_simulation() {
    let out = retry(["--simulate", "5", "--outage", "1s"])
        .env("RETRY_TIMEOUT", "10s")
        .run();
    out.expect_code(0);
    let out = retry(["--simulate", "5", "--outage", "1s", "--timeout", "10s"]).run();
    out.expect_code(2);
    assert!(out.stderr_text().contains("--timeout"));
}

#[test]
fn ten_thousand_clients_finish() {
    let out = retry([
        "--simulate",
        "10000",
        "--outage",
        "5s",
        "--max",
        "30",
        "--format",
        "json",
    ])
    .run();
    out.expect_code(0);
    let v = json(&out);
    assert_eq!(v["runs"][0]["succeeded"], 10000);
    let out = retry([
        "--simulate",
        "1000",
        "--model",
        "occ",
        "--base",
        "10ms",
        "--cap",
        "2s",
        "--forever",
        "--format",
        "json",
    ])
    .run();
    out.expect_code(0);
    let v = json(&out);
    assert_eq!(v["runs"][0]["succeeded"], 1000);
    assert_eq!(v["runs"][0]["gave_up"], 0);
}

/// `retry --simulate CLIENTS ARGS... --plot DIR/plot.svg`, which must
/// succeed: the scratch directory and the picture it wrote.
fn plot(clients: &str, args: &[&str]) -> (tempfile::TempDir, String) {
    let dir = scratch();
    let svg = dir.path().join("plot.svg");
    let mut all = vec!["--simulate", clients];
    all.extend_from_slice(args);
    all.extend(["--plot", svg.to_str().expect("utf-8 path")]);
    retry(&all).run().expect_code(0);
    let text = std::fs::read_to_string(&svg).expect("svg written");
    (dir, text)
}

/// A small simulation plotted to `path`, which must be refused (exit 2).
fn plot_refused(path: &std::path::Path) -> crate::util::Outcome {
    let path = path.to_str().expect("utf-8 path");
    let out = retry(["--simulate", "10", "--outage", "1s", "--plot", path]).run();
    out.expect_code(2);
    out
}

#[test]
fn plot_writes_an_svg() {
    let (_dir, text) = plot("100", &["--outage", "2s", "--compare"]);
    assert!(text.contains("<svg"), "{text}");
    for kind in ["none", "full", "decorrelated"] {
        assert!(text.contains(kind), "no row for {kind}");
    }
}

#[path = "../../examples/herd/herd.rs"]
mod herd;

fn small_herd(jitter: &str) -> (herd::Figures, (u64, u64, f64, u64)) {
    let dir = scratch();
    let p = herd::Params {
        retry: crate::util::bin().to_path_buf(),
        clients: 50,
        outage: std::time::Duration::from_millis(1400),
        policy: [
            "--base", "100ms", "--cap", "2s", "--max", "30", "--jitter", jitter,
        ]
        .map(str::to_string)
        .to_vec(),
        shared: Vec::new(),
        capacity: None,
        seed: 1,
        logs: dir.path().to_path_buf(),
    };
    let h = herd::run(&p).expect("herd ran");
    (
        h.figures(50, p.outage),
        herd::simulate(&p).expect("simulation ran"),
    )
}

#[test]
fn a_small_real_herd_without_jitter_matches_its_simulation_exactly() {
    // No jitter: waves at 0.1, 0.3 and 0.7 s fail, the one at 1.5 s
    // succeeds. The outage ends at 1.4 s: the third wave may come 0.7 s
    // late (waits only ever run long) and still fail, as simulated, so the
    // counts are exact whatever the machine's load. How tightly the waves
    // bunch, and what jitter does to them, are timings: the herd bench
    // measures them (bench/README.md, "A real herd next to its simulation").
    let (f, (sim_requests, _, _, sim_before)) = small_herd("none");
    assert_eq!((f.succeeded, f.gave_up), (50, 0));
    assert_eq!((f.requests as u64, sim_requests), (250, 250));
    assert_eq!((f.during_outage as u64, sim_before), (200, 200));
}

#[test]
fn the_plot_never_lands_on_the_reports_stream() {
    // stdout is a pipe here: /dev/stdout names it.
    for format in ["text", "json"] {
        let out = retry([
            "--simulate",
            "100",
            "--outage",
            "1s",
            "--format",
            format,
            "--plot",
            "/dev/stdout",
        ])
        .run();
        out.expect_usage_line("--plot /dev/stdout is standard output");
        assert!(out.stdout.is_empty(), "{}", out.stdout_text());
    }
    // The report redirected to a file: the same file by any name.
    let dir = scratch();
    let report = dir.path().join("report.txt");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#""$0" --simulate 100 --outage 1s --plot "$1" > "$1" 2>/dev/null"#)
        .arg(crate::util::bin())
        .arg(&report)
        .status()
        .expect("sh");
    assert_eq!(status.code(), Some(2));
    assert_eq!(std::fs::read(&report).expect("report file"), b"");
}

#[test]
fn a_bad_plot_path_is_refused_before_the_simulation_runs() {
    // This simulation would run into its request limit five times over:
    // far past the harness's minute if the path were checked afterwards.
    let dir = scratch();
    let missing = dir.path().join("no-such-dir").join("storm.svg");
    let out = retry([
        "--simulate",
        "1000000",
        "--capacity",
        "1/s",
        "--forever",
        "--compare",
        "--plot",
        missing.to_str().expect("utf-8 path"),
    ])
    .run();
    let err = out.expect_usage_line("cannot write --plot");
    assert!(out.stdout.is_empty());
    assert!(err.contains("no such file or directory"), "{err}");
    // A directory is no picture file either.
    let out = plot_refused(dir.path());
    assert!(out.stderr_text().contains("is a directory"));
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    // A directory anyone may write to (and not sticky): someone else could
    // swap the picture, so it is refused too.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).expect("mkdir");
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .expect("chmod");
    let out = plot_refused(&open.join("p.svg"));
    assert!(
        out.stderr_text().contains("writable by every user"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_plot_fifo_nobody_reads_or_another_user_planted_is_refused_at_once() {
    let dir = scratch();
    let fifo = dir.path().join("plot.svg");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let out = plot_refused(&fifo);
    assert!(
        out.stderr_text().contains("is a FIFO that nobody reads"),
        "{}",
        out.stderr_text()
    );
    use crate::util::{NOBODY, Sticky, as_nobody, plays_a_second_user};
    if !plays_a_second_user() {
        return;
    }
    let tmp = Sticky::new();
    let theirs = tmp.join("storm.svg");
    as_nobody(&format!("touch '{0}' && chmod 666 '{0}'", theirs.display()));
    let out = plot_refused(&theirs);
    assert!(
        out.stderr_text()
            .contains(&format!("is another user's file (uid {NOBODY})")),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn compare_refuses_a_jitter_kind_and_jitter_max_stays_within_the_cap() {
    for (args, needle) in [
        (
            vec![
                "--simulate",
                "10",
                "--outage",
                "1s",
                "--compare",
                "-j",
                "full",
            ],
            "--jitter has no effect with --compare",
        ),
        (
            vec![
                "--simulate",
                "10",
                "--outage",
                "1s",
                "--compare",
                "--jitter-max",
                "2s",
                "--cap",
                "1s",
            ],
            "--jitter-max (2s) is above --cap (1s)",
        ),
        (
            vec!["-j", "additive", "--jitter-max", "40s", "--", "true"],
            "--jitter-max (40s) is above --cap (30s, the default)",
        ),
    ] {
        retry(&args).run().expect_usage_line(needle);
    }
    // A jitter kind from the environment is for real runs: no error.
    retry(["--simulate", "10", "--outage", "1s", "--compare"])
        .env("RETRY_JITTER", "none")
        .run()
        .expect_code(0);
    retry([
        "-j",
        "additive",
        "--jitter-max",
        "1s",
        "--cap",
        "1s",
        "--",
        "true",
    ])
    .run()
    .expect_code(0);
}

#[test]
fn the_text_chart_is_in_requests_per_100ms_at_any_width() {
    let report = |columns: &str| {
        let out = retry(["--simulate", "1000", "--outage", "5s", "--seed", "1"])
            .env("COLUMNS", columns)
            .run();
        out.expect_code(0);
        out.stdout_text()
    };
    for columns in ["40", "80", "200"] {
        let text = report(columns);
        let busiest = text
            .lines()
            .find_map(|l| l.strip_prefix("busiest 100ms window:"))
            .expect("busiest line")
            .trim()
            .to_string();
        let chart = text
            .split("requests per 100ms (each column: its busiest 100ms):\n")
            .nth(1)
            .expect("chart");
        let top = chart.lines().next().expect("top row");
        assert_eq!(
            top.split('|').next().map(str::trim),
            Some(busiest.as_str()),
            "COLUMNS={columns}: {text}"
        );
        let width: usize = columns.parse().expect("number");
        assert!(chart.lines().all(|l| l.chars().count() <= width), "{text}");
    }
}

#[test]
fn the_json_report_records_the_policy_and_the_server() {
    let out = retry([
        "--simulate",
        "300",
        "--outage",
        "2s",
        "--capacity",
        "50/s",
        "--capacity-burst",
        "3",
        "--max",
        "7",
        "--base",
        "100ms",
        "--cap",
        "2s",
        "-j",
        "equal",
        "--stagger",
        "1s",
        "--pace",
        "40/s",
        "--budget",
        "--seed",
        "3",
        "--format",
        "json",
    ])
    .run();
    out.expect_code(0);
    let v = json(&out);
    let p = &v["policy"];
    assert_eq!(p["max_attempts"], 7);
    assert_eq!(p["max_time_ms"], serde_json::Value::Null);
    assert_eq!(p["backoff"], "exponential");
    assert_eq!(p["multiplier"], 2.0);
    assert_eq!(
        (p["base_ms"].as_f64(), p["cap_ms"].as_f64()),
        (Some(100.0), Some(2000.0))
    );
    assert_eq!(p["jitter"], "equal");
    assert_eq!(p["jitter_max_ms"], serde_json::Value::Null);
    assert_eq!(p["reset_after_ms"], serde_json::Value::Null);
    assert_eq!(p["stagger_ms"], 1000.0);
    assert_eq!(p["pace"]["per_s"], 40.0);
    assert_eq!(p["pace"]["burst"], 1);
    assert_eq!(
        (
            p["budget"]["tokens"].as_f64(),
            p["budget"]["ratio"].as_f64()
        ),
        (Some(100.0), Some(0.1))
    );
    let s = &v["server"];
    assert_eq!(s["kind"], "capacity");
    assert_eq!(s["outage_ms"], 2000.0);
    assert_eq!(s["capacity_per_s"], 50.0);
    assert_eq!(s["capacity_burst"], 3.0);
    assert_eq!(v["request_limit"], 10_000_000);
    let run = &v["runs"][0];
    assert_eq!(run["clients"], 300);
    assert_eq!(run["still_retrying"], 0);
    assert_eq!(run["truncated"], false);
    // --compare: the kind is each run's own; additive's part is recorded.
    let out = retry([
        "--simulate",
        "10",
        "--model",
        "occ",
        "--compare",
        "--format",
        "json",
    ])
    .run();
    out.expect_code(0);
    let v = json(&out);
    assert_eq!(v["policy"]["jitter"], serde_json::Value::Null);
    assert_eq!(v["policy"]["jitter_max_ms"], 1000.0);
    assert_eq!(v["server"]["kind"], "occ");
    assert_eq!(v["server"]["outage_ms"], serde_json::Value::Null);
    assert_eq!(v["server"]["capacity_per_s"], serde_json::Value::Null);
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(5));
}

#[test]
fn a_capacity_burst_of_one_admits_one_request_at_a_time() {
    // No jitter: waves of 100 at 0, 1 s and 3 s. A bucket of depth 1 admits
    // one request per wave; the default (100 ms of 20/s) admits two.
    let succeeded = |extra: &[&str]| {
        let mut args = vec![
            "--simulate",
            "100",
            "--capacity",
            "20/s",
            "-j",
            "none",
            "--max",
            "3",
            "--format",
            "json",
        ];
        args.extend(extra);
        let out = retry(&args).run();
        out.expect_code(0);
        json(&out)["runs"][0]["succeeded"].clone()
    };
    assert_eq!(succeeded(&[]), 6);
    assert_eq!(succeeded(&["--capacity-burst", "1"]), 3);
    assert_eq!(succeeded(&["--capacity-burst", "10"]), 30);
    let out = retry([
        "--simulate",
        "10",
        "--outage",
        "1s",
        "--capacity-burst",
        "1",
    ])
    .run();
    out.expect_code(2);
    assert!(
        out.stderr_text()
            .contains("--capacity-burst applies only to --capacity")
    );
}

#[test]
fn the_plot_wraps_its_title_and_names_staggered_starts() {
    let (dir, text) = plot(
        "50",
        &[
            "--model",
            "occ",
            "--compare",
            "--stagger",
            "1s",
            "--seed",
            "7",
        ],
    );
    // Every <text> element's content, as drawn.
    let texts: Vec<&str> = text
        .split("<text")
        .skip(1)
        .filter_map(|t| {
            t.split_once('>')
                .and_then(|(_, rest)| rest.split_once("</text>"))
        })
        .map(|(content, _)| content.trim())
        .collect();
    // The facts that reproduce it are in the picture, on lines that fit.
    assert!(
        texts.iter().any(|t| t.starts_with("50 clients")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t.ends_with("seed 7")), "{texts:?}");
    assert!(texts.iter().all(|t| t.chars().count() <= 160), "{texts:?}");
    assert!(
        texts
            .iter()
            .any(|t| t.contains("first attempts staggered over 1s")),
        "{texts:?}"
    );
    // Nothing left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
}

#[test]
fn a_fixed_window_shows_the_wave_at_its_reset_and_the_spread_that_breaks_it() {
    let run = |spread: &str| {
        let out = retry([
            "--simulate",
            "100",
            "--fixed-window",
            "10/1s",
            "--max",
            "30",
            "--retry-after-spread",
            spread,
            "--seed",
            "1",
            "--format",
            "json",
        ])
        .run();
        out.expect_code(0);
        json(&out)
    };
    let exact = run("0");
    assert_eq!(exact["server"]["kind"], "fixed-window");
    assert_eq!(exact["server"]["window_limit"], 10);
    assert_eq!(exact["policy"]["retry_after_spread_ms"], 0.0);
    let r = &exact["runs"][0];
    // All 90 refused come back at the reset together; ten are served per
    // window, and the tenth client through was refused nine times.
    assert_eq!(r["busiest_100ms_after_reset"], 90);
    assert_eq!(r["rejected_per_served"], 4.5);
    assert_eq!(r["succeeded"], 100);
    let spread = run("1s");
    let wave = spread["runs"][0]["busiest_100ms_after_reset"].as_u64();
    assert!(wave.is_some_and(|w| w < 30), "{spread}");
    // Not a window model: none of these fields.
    let out = retry(["--simulate", "10", "--outage", "1s", "--format", "json"]).run();
    assert!(json(&out)["runs"][0].get("rejected_per_served").is_none());
    let out = retry([
        "--simulate",
        "10",
        "--fixed-window",
        "10/1s",
        "--capacity",
        "5/s",
    ])
    .run();
    out.expect_usage_line("--fixed-window is a server of its own");
}
