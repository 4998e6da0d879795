//! End-to-end tests of the real `retry` binary: one test target, one harness.

mod core;
mod http;
mod process;
mod pty;
mod ship;
mod sim;
mod startup;
mod state;
mod supervise;
mod terminal;
mod util;
