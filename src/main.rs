//! Entry point: run, then exit with the status `retry` decided. The only place
//! that exits.

use std::process::ExitCode;

/// Runs before the Rust runtime ignores SIGPIPE, so retry can learn whether
/// its parent had ignored it (and keep it ignored for the command).
#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_SIGPIPE: extern "C" fn() = retry_tool::signals::record_sigpipe_at_start;

fn main() -> ExitCode {
    ExitCode::from(retry_tool::main_entry())
}
