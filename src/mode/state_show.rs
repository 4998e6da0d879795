//! `--state-show`: the group's stored pace, budget and breaker on stdout,
//! read within the store's time limit; nothing runs and nothing is created.

use crate::exit;
use crate::log::Logger;
use crate::policy::Config;
use crate::state;

pub fn main(config: &Config) -> u8 {
    let Some(features) = &config.state.shared else {
        return exit::USAGE;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            Logger::stderr().error(&format!("cannot start: {e}"));
            return exit::INTERNAL;
        }
    };
    let shown = runtime.block_on(async {
        tokio::time::timeout(state::CALL_LIMIT, state::show(features))
            .await
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the state store did not answer in time")))
    });
    // As `drive` does: a DNS lookup that hangs holds a blocking thread,
    // which dropping the runtime would wait for, long past the store's
    // time limit. The process exits next.
    std::mem::forget(runtime);
    match shown {
        Ok(text) => super::print(&text),
        Err(e) => {
            Logger::stderr().error(&format!("{e:#}"));
            exit::INTERNAL
        }
    }
}
