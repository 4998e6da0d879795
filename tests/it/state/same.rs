//! Both stores carry out the same rules as the pure model.

use std::os::unix::net::UnixStream;

use super::{Conn, Redis};
use crate::util::scratch;

// ---- both stores carry out the same rules ----

/// The same sequence of operations on the pure rules, the local store and
/// Redis gives the same answers (pace waits compared to the millisecond:
/// each store reads its own clock).
#[test]
fn both_stores_apply_the_pure_rules() {
    use retry_tool::state::rules::{
        Admit, Breaker, Budget, GroupState, Op, Pace, Plan, Reply, apply,
    };
    use retry_tool::state::{AnyStore, Store as _, StoreAt};

    const S: u64 = 1_000_000;
    const M: u64 = 60 * S;
    let budget = Budget {
        max_milli: 4_000,
        ratio_milli: 500,
    };
    let breaker = Breaker {
        threshold: 2,
        cooldown: 3_600 * S,
    };
    let pace = Pace {
        interval: 3_600 * S,
        burst: 2,
    };
    let plan = |deadline_in| Op::Plan {
        delay: 0,
        deadline_in,
        budget: Some(budget),
        pace: Some(pace),
    };
    let finish = |success, trial| Op::Finish {
        breaker,
        success,
        trial,
    };
    let record = |success| Op::Record { budget, success };
    let ops = [
        plan(None),
        plan(None),
        plan(Some(10 * S)),
        plan(None),
        record(false),
        record(false),
        plan(None),
        record(true),
        plan(None),
        Op::Admit {
            lease: 60 * S,
            breaker,
        },
        finish(false, false),
        finish(false, false),
        Op::Admit {
            lease: 60 * S,
            breaker,
        },
        finish(true, false),
        Op::Admit {
            lease: 60 * S,
            breaker,
        },
        finish(false, false),
        finish(false, false),
        finish(false, false),
        Op::Admit {
            lease: 60 * S,
            breaker,
        },
    ];
    // Durations are what differ between clocks, and time passes between the
    // calls (under load, seconds): compare them to the minute.
    let coarse = |r: Reply| match r {
        Reply::Plan(Plan::Go { wait, paced }) => Reply::Plan(Plan::Go {
            wait: (wait + M / 2) / M,
            paced: (paced + M / 2) / M,
        }),
        Reply::Plan(Plan::PastDeadline { wait }) => Reply::Plan(Plan::PastDeadline {
            wait: (wait + M / 2) / M,
        }),
        Reply::Admit(Admit::Open { wait }) => Reply::Admit(Admit::Open {
            wait: (wait + M / 2) / M,
        }),
        other => other,
    };
    let mut model = GroupState::default();
    let now = 1_700_000_000 * S;
    let want: Vec<Reply> = ops
        .iter()
        .map(|op| coarse(apply(&mut model, now, *op)))
        .collect();
    assert_eq!(
        want[..4],
        [
            Reply::Plan(Plan::Go { wait: 0, paced: 0 }),
            Reply::Plan(Plan::Go { wait: 0, paced: 0 }),
            Reply::Plan(Plan::PastDeadline { wait: 60 }),
            Reply::Plan(Plan::Go {
                wait: 60,
                paced: 60
            }),
        ]
    );

    let dir = scratch();
    let redis = Redis::unix();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for at in [
        StoreAt::Dir(dir.path().join("state")),
        StoreAt::Url(redis.url.clone()),
    ] {
        let mut store = AnyStore::new(&at, None, None).expect("store");
        rt.block_on(store.open("same")).expect("open");
        let got: Vec<Reply> = ops
            .iter()
            .map(|op| coarse(rt.block_on(store.apply("same", *op)).expect("apply")))
            .collect();
        assert_eq!(got, want, "{at:?}");
        let (_, state) = rt.block_on(store.show("same")).expect("show");
        let state = state.expect("stored");
        assert_eq!(
            (state.spent_milli, state.failures),
            (model.spent_milli, model.failures),
            "{at:?}"
        );
    }
    // One key per group, named for the group, expiring a week after its last change.
    let sock = redis.url.trim_start_matches("unix://");
    let mut c = Conn::Unix(UnixStream::connect(sock).expect("connect"));
    c.write_all(b"PTTL retry:{same}:state\r\n").expect("send");
    let mut buf = [0u8; 64];
    let n = c.read(&mut buf).expect("reply");
    let reply = String::from_utf8_lossy(&buf[..n]);
    let ttl: u64 = reply
        .trim()
        .trim_start_matches(':')
        .parse()
        .unwrap_or_else(|_| panic!("PTTL reply {reply:?}"));
    let week = 7 * 24 * 3600 * 1000;
    assert!(ttl > week - 60_000 && ttl <= week, "{ttl}");
}
