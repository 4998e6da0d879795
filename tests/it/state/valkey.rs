//! Shared state on Valkey, the fork of Redis that Linux distributions ship
//! beside it (Debian from trixie on; bookworm in backports): the checks of
//! pace, budget and breaker on one server and on a cluster.

use super::rules::{breaker_cycle, budget_is_exact_under_concurrency, pace_spaces_retries};
use super::topology::VALKEY;
use super::{Redis, Store, show_at};

#[test]
fn one_valkey_server_holds_pace_budget_and_breaker() {
    let server = Redis::valkey();
    let url = server.url.clone();
    pace_spaces_retries(Store::Url(url.clone()));
    budget_is_exact_under_concurrency(Store::Url(url.clone()));
    breaker_cycle(Store::Url(url.clone()));
    let shown = show_at(&url, "flaky", &["--breaker"]);
    assert!(shown.contains("breaker: closed"), "{shown}");
    assert!(
        server
            .cmd(None, &["INFO", "server"])
            .contains("valkey_version"),
        "not a Valkey server"
    );
}

#[test]
fn a_valkey_cluster_holds_pace_budget_and_breaker_with_groups_spread_over_its_slots() {
    super::cluster::holds_pace_budget_and_breaker(VALKEY);
}
