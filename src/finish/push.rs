//! `--metrics-push`: the run's metrics sent to a Prometheus Pushgateway.
//!
//! POST to `URL/metrics/job/JOB{/LABEL/VALUE}`: POST replaces only the
//! metrics it carries, so the time of the last success, left out of a
//! failed run's push, stays as the gateway has it (and the other way
//! round). The job and labels travel in the path only, as the gateway asks;
//! a value that is not plain path text goes base64url-encoded with the
//! `@base64` suffix the gateway reads. One try, at most two seconds and
//! never more than a third of the time the reports have left (the
//! heartbeat, whose silence raises an alarm, keeps the most): a gateway
//! that is down costs one warning, never the run's status.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE;
use reqwest::Url;
use reqwest::header::CONTENT_TYPE;

use super::metrics::{self, Kept};
use super::{Ctx, Output, ReportClock, RunSummary, Work, client};
use crate::event::Event;
use crate::mask;

/// The whole exchange with the gateway, connection included.
pub const LIMIT: Duration = Duration::from_secs(2);

/// The text format's media type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

pub struct Push {
    gateway: Url,
    job: String,
    labels: Vec<(String, String)>,
    clock: ReportClock,
}

impl Push {
    /// `labels` are `--metrics-label`'s, without the job.
    pub fn new(gateway: Url, job: String, labels: Vec<(String, String)>) -> Push {
        Push {
            gateway,
            job,
            labels,
            clock: ReportClock::default(),
        }
    }

    /// The push under the reports' shared bound.
    pub fn with_clock(self, clock: ReportClock) -> Push {
        Push { clock, ..self }
    }

    /// The limit of the exchange: [`LIMIT`], within a third of what is left.
    fn limit(&self) -> Duration {
        self.clock.left().map_or(LIMIT, |left| LIMIT.min(left / 3))
    }
}

/// Whether a label value can go in the path as it is: the URL's unreserved
/// characters only (and not empty, which the gateway cannot read).
fn plain(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Where the metrics of `job` with `labels` go on `gateway`.
pub fn push_url(gateway: &Url, job: &str, labels: &[(String, String)]) -> Url {
    let mut url = gateway.clone();
    url.set_query(None);
    url.set_fragment(None);
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().push("metrics");
        for (name, value) in std::iter::once(("job", job)).chain(
            labels
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        ) {
            if plain(value) {
                path.push(name).push(value);
            } else {
                // The gateway reads an empty value as `=`: an empty path
                // segment would not survive.
                let encoded = match URL_SAFE.encode(value.as_bytes()) {
                    e if e.is_empty() => "=".to_string(),
                    e => e,
                };
                path.push(&format!("{name}@base64")).push(&encoded);
            }
        }
    }
    url
}

impl Output for Push {
    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            let shown = mask::url(self.gateway.as_str());
            let url = push_url(&self.gateway, &self.job, &self.labels);
            // No labels in the body (the gateway refuses a grouping label
            // there) and no kept times: what is not pushed stays.
            let body = metrics::render(summary, &[], Kept::default());
            let outcome = match client::build() {
                Ok(http) => {
                    let request = http.post(url).header(CONTENT_TYPE, TEXT_FORMAT).body(body);
                    match client::unless_cut(client::exchange(request, self.limit()), ctx).await {
                        Some(r) => r.map_err(|f| f.to_string()),
                        None => Err(client::cut_short(ctx)),
                    }
                }
                Err(why) => Err(why),
            };
            let problem = match outcome {
                Ok(answer) if (200..300).contains(&answer.status) => {
                    let message = format!("metrics pushed to {shown}");
                    ctx.log.emit(&Event::Note { message: &message });
                    return;
                }
                Ok(answer) => {
                    let said = answer.body_start.split_whitespace().collect::<Vec<_>>();
                    if said.is_empty() {
                        format!("HTTP {}", answer.status)
                    } else {
                        format!("HTTP {}: {}", answer.status, mask::text(&said.join(" ")))
                    }
                }
                Err(why) => why,
            };
            let message =
                format!("cannot push metrics to {shown}: {problem}; the exit status is unchanged");
            ctx.log.emit(&Event::Warning { message: &message });
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_grouping_key_is_the_path() {
        let gw = Url::parse("http://pg:9091").unwrap();
        let url = push_url(&gw, "backup", &labels(&[("instance", "db-1.example")]));
        assert_eq!(
            url.as_str(),
            "http://pg:9091/metrics/job/backup/instance/db-1.example"
        );
        // A prefix and a trailing slash are kept as one path; a query dropped.
        let gw = Url::parse("https://u:p@h/gateway/?x=1").unwrap();
        assert_eq!(
            push_url(&gw, "j", &[]).as_str(),
            "https://u:p@h/gateway/metrics/job/j"
        );
    }

    #[test]
    fn values_that_are_not_plain_are_base64url_encoded() {
        let gw = Url::parse("http://pg:9091/").unwrap();
        let url = push_url(
            &gw,
            "nightly backup",
            &labels(&[("path", "/var/tmp"), ("empty", "")]),
        );
        assert_eq!(
            url.as_str(),
            "http://pg:9091/metrics/job@base64/bmlnaHRseSBiYWNrdXA=/path@base64/L3Zhci90bXA=/empty@base64/="
        );
    }
}
