//! End-to-end tests of the real `retry` binary: one test target, one harness.

mod core;
mod forever;
mod http;
mod output;
mod process;
mod pty;
mod ship;
mod sim;
mod startup;
mod state;
mod supervise;
mod terminal;
mod util;
