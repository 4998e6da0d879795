use super::*;
use std::convert::Infallible;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN: &str = "00f067aa0ba902b7";

fn tp(version: &str, trace: &str, span: &str, flags: &str) -> String {
    format!("{version}-{trace}-{span}-{flags}")
}

/// Hands out the bytes given, then counts up from 1.
struct Scripted(Vec<u8>, u8);

impl rand::TryRng for Scripted {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut b = [0; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut b = [0; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for d in dst {
            *d = if self.0.is_empty() {
                self.1 = self.1.wrapping_add(1);
                self.1
            } else {
                self.0.remove(0)
            };
        }
        Ok(())
    }
}

#[test]
fn a_version_00_traceparent_is_read_and_written_back_alike() {
    let value = tp("00", TRACE, SPAN, "01");
    let ctx = parse_traceparent(&value).unwrap();
    assert_eq!(ctx.trace_id.hex(), TRACE);
    assert_eq!(ctx.span_id.hex(), SPAN);
    assert_eq!(ctx.flags, SAMPLED);
    assert_eq!(ctx.traceparent(), value);
    // Not sampled, and flags version 00 does not know yet, are kept.
    assert_eq!(
        parse_traceparent(&tp("00", TRACE, SPAN, "00"))
            .unwrap()
            .flags,
        0
    );
    assert_eq!(
        parse_traceparent(&tp("00", TRACE, SPAN, "03"))
            .unwrap()
            .flags,
        3
    );
    // Spaces and tabs around it, as around a header's value.
    assert_eq!(parse_traceparent(&format!(" \t{value} ")).unwrap(), ctx);
}

#[test]
fn version_00_is_exactly_55_characters() {
    let value = tp("00", TRACE, SPAN, "01");
    assert_eq!(value.len(), 55);
    assert_eq!(
        parse_traceparent(&format!("{value}-extra")),
        Err(Invalid::TrailingData)
    );
    assert_eq!(
        parse_traceparent(&format!("{value}0")),
        Err(Invalid::TrailingData)
    );
    assert_eq!(parse_traceparent(&value[..54]), Err(Invalid::Shape));
}

#[test]
fn a_later_version_is_read_by_its_first_55_characters() {
    let later = tp("cc", TRACE, SPAN, "01");
    assert_eq!(parse_traceparent(&later).unwrap().trace_id.hex(), TRACE);
    let with_more = format!("{later}-what-comes-later");
    let ctx = parse_traceparent(&with_more).unwrap();
    assert_eq!(ctx.span_id.hex(), SPAN);
    // Written back as version 00, keeping only the flag 00 defines.
    let flagged = parse_traceparent(&tp("01", TRACE, SPAN, "ff")).unwrap();
    assert_eq!(flagged.flags, SAMPLED);
    assert_eq!(flagged.traceparent(), tp("00", TRACE, SPAN, "01"));
    // What follows the 55 characters must be set off by a dash.
    assert_eq!(parse_traceparent(&format!("{later}x")), Err(Invalid::Shape));
}

#[test]
fn version_ff_is_invalid() {
    assert_eq!(
        parse_traceparent(&tp("ff", TRACE, SPAN, "01")),
        Err(Invalid::ForbiddenVersion)
    );
}

#[test]
fn all_zero_ids_are_invalid() {
    assert_eq!(
        parse_traceparent(&tp("00", &"0".repeat(32), SPAN, "01")),
        Err(Invalid::TraceIdZero)
    );
    assert_eq!(
        parse_traceparent(&tp("00", TRACE, &"0".repeat(16), "01")),
        Err(Invalid::SpanIdZero)
    );
}

#[test]
fn upper_case_hex_is_invalid_anywhere() {
    let upper = TRACE.to_uppercase();
    assert_eq!(
        parse_traceparent(&tp("00", &upper, SPAN, "01")),
        Err(Invalid::NotLowerHex)
    );
    assert_eq!(
        parse_traceparent(&tp("00", TRACE, &SPAN.to_uppercase(), "01")),
        Err(Invalid::NotLowerHex)
    );
    assert_eq!(
        parse_traceparent(&tp("0A", TRACE, SPAN, "01")),
        Err(Invalid::NotLowerHex)
    );
    assert_eq!(
        parse_traceparent(&tp("00", TRACE, SPAN, "0B")),
        Err(Invalid::NotLowerHex)
    );
    assert_eq!(
        parse_traceparent(&tp("00", &TRACE.replace('a', "g"), SPAN, "01")),
        Err(Invalid::NotLowerHex)
    );
}

#[test]
fn bad_lengths_and_separators_are_invalid() {
    for bad in [
        String::new(),
        "00".to_string(),
        tp("00", &TRACE[..31], SPAN, "01"),
        tp("00", TRACE, &SPAN[..15], "01"),
        tp("00", TRACE, SPAN, "1"),
        tp("0", TRACE, SPAN, "01"),
        format!("00-{TRACE}{SPAN}-01-0"),
        format!("00_{TRACE}-{SPAN}-01"),
        format!("00-{TRACE}_{SPAN}-01"),
        format!("00-{TRACE}-{SPAN}_01"),
        // A dash in a hex field shifts the rest.
        tp("00", &format!("{}-", &TRACE[..31]), &SPAN[..15], "01"),
    ] {
        assert!(parse_traceparent(&bad).is_err(), "{bad:?} was accepted");
    }
    // Never a panic on multi-byte characters where the dashes go.
    assert!(parse_traceparent(&"é".repeat(40)).is_err());
    assert!(parse_traceparent(&format!("00-{TRACE}é{SPAN}")).is_err());
}

#[test]
fn ids_come_from_the_generator_given_and_are_never_zero() {
    let mut rng = Scripted(vec![0; 24], 0);
    // The all-zero draws are drawn again.
    let root = SpanContext::root(&mut Scripted(vec![0; 16], 0));
    assert_eq!(root.trace_id.hex(), "0102030405060708090a0b0c0d0e0f10");
    assert_eq!(root.span_id.hex(), "1112131415161718");
    assert_eq!(root.flags, SAMPLED);
    let span = SpanId::new(&mut rng);
    assert_eq!(span.hex(), "0102030405060708");
    let parent = parse_traceparent(&tp("00", TRACE, SPAN, "00")).unwrap();
    let child = parent.child(&mut rng);
    assert_eq!(child.trace_id, parent.trace_id);
    assert_eq!(child.flags, 0);
    assert_eq!(child.span_id.hex(), "090a0b0c0d0e0f10");
}

#[test]
fn tracestate_is_passed_on_unchanged_when_valid() {
    let ts = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE, vendor@sys=a b";
    assert_eq!(check_tracestate(ts), Ok(Some(ts)));
    assert_eq!(check_tracestate(" a=1 "), Ok(Some("a=1")));
    assert_eq!(check_tracestate("a=1,,b=2"), Ok(Some("a=1,,b=2")));
    assert_eq!(check_tracestate(" , "), Ok(None));
    assert_eq!(check_tracestate("a="), Ok(Some("a=")));
    assert_eq!(check_tracestate("0t@sys=1"), Ok(Some("0t@sys=1")));
}

#[test]
fn tracestate_that_is_malformed_or_too_long_is_dropped() {
    for bad in [
        "novalue",
        "Upper=1",
        "1abc=1",
        "a=1,a=2",
        "a=x,y",
        "a=b=c",
        "t@=1",
        "t@Sys=1",
        "@sys=1",
        "a=\u{7f}",
        "t@systemnameistoolong=1",
    ] {
        assert!(check_tracestate(bad).is_err(), "{bad:?} was accepted");
    }
    let entries: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
    assert_eq!(
        check_tracestate(&entries.join(",")),
        Err("more than 32 entries")
    );
    let long = format!("a={}", "v".repeat(257));
    assert!(check_tracestate(&long).is_err());
    let just = format!("a={},b={}", "v".repeat(254), "w".repeat(253));
    assert_eq!(just.len(), 512);
    assert!(check_tracestate(&just).unwrap().is_some());
    let over = format!("{just},c=1");
    assert_eq!(check_tracestate(&over), Err("longer than 512 characters"));
}

#[test]
fn baggage_is_opaque_but_bounded() {
    let b = "userId=alice,serverNode=DF%2028;prop";
    assert_eq!(check_baggage(b), Ok(Some(b)));
    assert_eq!(check_baggage(""), Ok(None));
    assert!(check_baggage("a=\nb").is_err());
    assert!(check_baggage("a=é").is_err());
    assert!(check_baggage(&"k".repeat(8192)).is_ok());
    assert_eq!(
        check_baggage(&"k".repeat(8193)),
        Err("longer than 8192 bytes")
    );
}

#[test]
fn incoming_values_give_one_warning_each_and_never_fail() {
    let good = tp("00", TRACE, SPAN, "01");
    let all = incoming(Some(&good), Some("a=1"), Some("k=v"));
    assert_eq!(all.parent.unwrap().traceparent(), good);
    assert_eq!(all.tracestate.as_deref(), Some("a=1"));
    assert_eq!(all.baggage.as_deref(), Some("k=v"));
    assert!(all.warnings.is_empty());

    // An invalid parent: one line, and its tracestate goes with it.
    let bad = incoming(Some(&good.to_uppercase()), Some("a=1"), None);
    assert_eq!(bad.parent, None);
    assert_eq!(bad.tracestate, None);
    assert_eq!(
        bad.warnings,
        [
            "TRACEPARENT is not a W3C traceparent (hex digits must be lower case (0-9, a-f)): ignored, and TRACESTATE with it"
        ]
    );
    // A tracestate without a parent is not passed on, silently.
    let orphan = incoming(None, Some("a=1"), Some("k=v"));
    assert_eq!(orphan.tracestate, None);
    assert_eq!(orphan.baggage.as_deref(), Some("k=v"));
    assert!(orphan.warnings.is_empty());
    // Empty counts as unset.
    assert_eq!(incoming(Some(""), Some(""), Some(" ")), Incoming::default());
    let ts = incoming(Some(&good), Some("A=1"), None);
    assert_eq!(ts.warnings.len(), 1);
    assert!(ts.parent.is_some());
}
