//! Entry point: run, then exit with the status `retry` decided. The only place
//! that exits.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(retry_tool::main_entry())
}
