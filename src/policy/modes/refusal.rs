//! Why a mode does not take a flag, in the words of the flag's home and of
//! the mode's row: the refusals `check` gives.

use super::{Flag, Home, Kind, Runs};

pub(super) fn simulate_real(flag: &str) -> String {
    format!("--simulate runs nothing real: it cannot be combined with {flag}")
}

/// A flag that acts only while something runs, given where nothing does.
pub(super) fn runs_nothing(flag: &Flag, by: &str) -> String {
    let what = match flag.home {
        Home::Report => "reports on a run",
        _ => "acts on a run",
    };
    format!("{} {what}, and {by} runs nothing: leave it out", flag.name)
}

/// Why `kind` does not take `flag`, in the words of the flag's home and
/// of the mode's row.
pub(super) fn refusal(flag: &Flag, kind: Kind) -> String {
    let name = flag.name;
    let mode = kind.flag();
    match (flag.home, kind.row().runs) {
        (_, Runs::Simulated) if flag.id == "restart_on_success" => {
            "--restart-on-success has no effect in --simulate: a simulated client stops at its first success; leave it out".to_string()
        }
        (Home::Grpc, Runs::Yes) => format!("{name} applies only to --grpc HOST:PORT: add --grpc HOST:PORT"),
        (Home::Grpc, Runs::Simulated) => simulate_real(name),
        (Home::Grpc, Runs::Prints(_)) => runs_nothing(flag, mode),
        (Home::File, Runs::Yes) => format!("{name} applies only to --file PATH: add --file PATH"),
        (Home::File, Runs::Simulated) => simulate_real(name),
        (Home::File, Runs::Prints(_)) => runs_nothing(flag, mode),
        (Home::Simulation, _) => {
            format!("{name} applies only to --simulate N: add --simulate with a number of clients")
        }
        // Where --http would be refused too, "add --http URL" is no fix.
        (
            Home::Http | Home::Connect | Home::Report | Home::Hook | Home::Process,
            Runs::Prints(_),
        ) => runs_nothing(flag, mode),
        (Home::Connect, Runs::Simulated) => simulate_real(name),
        (Home::Connect, _) => format!(
            "{name} applies only to HTTP, TCP and gRPC modes: add --http URL, --tcp HOST:PORT or --grpc HOST:PORT"
        ),
        (Home::Http, Runs::Simulated) => simulate_real(name),
        (Home::Http, Runs::Yes) if kind != Kind::Command => {
            format!("{name} applies only to HTTP mode, not to {mode}")
        }
        (Home::Http, _) => format!("{name} applies only to HTTP mode: add --http URL"),
        (Home::Report, Runs::Simulated) => runs_nothing(flag, mode),
        (Home::Breaker, Runs::Simulated) => "--breaker has no effect in --simulate: every simulated client starts at once, before any run can fail; use --budget or --pace".to_string(),
        (Home::Store, Runs::Simulated) => format!(
            "{} (the simulated clients share their state in memory)",
            simulate_real(name)
        ),
        (_, Runs::Simulated) => simulate_real(name),
        (Home::ExitCodes, _) if kind == Kind::Http => format!(
            "{name} applies to exit codes of a COMMAND: with --http use --expect or --retry-status"
        ),
        (Home::ExitCodes, _) => format!("{name} applies to exit codes of a COMMAND, not to {mode}"),
        (_, _) => format!("{name} applies to a COMMAND's processes, not to {mode}"),
    }
}
