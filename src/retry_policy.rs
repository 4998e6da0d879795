//! **Pure.** The retry policy: what the loop follows, whether it runs
//! real attempts, a dry run or a simulated fleet.
//!
//! Plain validated data, built by `policy` from the flags; the loop (`run`),
//! the simulator and the dry-run schedule read it, and none of them needs to
//! know how it was given.

use std::time::Duration;

use crate::backoff::{DelayPolicy, Growth, Jitter};
use crate::classify::Rules;

/// The retry loop's policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Attempts in total; None with `--forever`.
    pub max_attempts: Option<u32>,
    pub delay: DelayPolicy,
    pub max_time: Option<Duration>,
    pub timeout: Option<Duration>,
    /// `--idle-timeout`: an attempt without progress for this long is
    /// stopped (in HTTP mode 30s unless given; 0 or inf: none).
    pub idle_timeout: Option<Duration>,
    pub reset_after: Option<Duration>,
    /// `--restart-on-success`: a success is followed by another attempt.
    pub restart_on_success: bool,
    /// `--stagger`: the first attempt waits U(0, this).
    pub stagger: Option<Duration>,
    pub seed: Option<u64>,
    pub rules: Rules,
}

impl Default for Policy {
    /// The documented defaults: 5 attempts, exponential x2 from 1s to 30s, full jitter.
    fn default() -> Self {
        Policy {
            max_attempts: Some(5),
            delay: DelayPolicy {
                growth: Growth::Exponential { multiplier: 2.0 },
                jitter: Jitter::Full,
                base: Duration::from_secs(1),
                cap: Duration::from_secs(30),
            },
            max_time: None,
            timeout: None,
            idle_timeout: None,
            reset_after: None,
            restart_on_success: false,
            stagger: None,
            seed: None,
            rules: Rules::default(),
        }
    }
}
