//! Reading a duration the way users write one.
//!
//! Two families: a number of seconds in every form sleep(1) and timeout(1)
//! accept (`30`, `0.25`, `.5`, `1e-3`, `2.5e1`, with an optional `s`, `m`,
//! `h` or `d` suffix and any number of decimals), and humantime's unit forms
//! (`250ms`, `1h 30m`). The number is converted exactly, in decimal, and a
//! positive value too small for a nanosecond rounds up to one: a sleep the
//! user asked for never silently becomes zero. `inf`/`infinity` are read too,
//! so the caller can accept them where "no limit" makes sense.
//!
//! One of humantime's units is refused: `M`, its month, which in a retry
//! policy is far more often a mistyped minute. `month`/`months` written out
//! still read as months (30.44 days), and `w` as weeks.

use std::time::Duration;

/// A parsed duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dur {
    Finite(Duration),
    /// `inf` or `infinity` (with or without a suffix).
    Infinite,
}

/// Why a duration was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurError {
    /// Not a duration in any accepted form.
    Invalid,
    /// Starts with a minus sign.
    Negative,
    /// Beyond what a `Duration` holds (about 584 billion years).
    TooLarge,
    /// Uses `M` as a unit: minutes or months? [`with_m_as`] writes the fix.
    MinutesOrMonths,
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Parse `s` in any accepted form.
pub fn parse(s: &str) -> Result<Dur, DurError> {
    let t = s.trim();
    if let Some(rest) = t.strip_prefix('-') {
        // `-0` is harmless, but a sign is a sign: timeout(1) rejects it too.
        // Only a duration with a minus is negative; `--max` is no number.
        return Err(if parse(rest).is_ok() {
            DurError::Negative
        } else {
            DurError::Invalid
        });
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    if let Some(r) = seconds_form(t) {
        return r;
    }
    let d = humantime::parse_duration(t).map_err(|e| match e {
        humantime::DurationError::NumberOverflow => DurError::TooLarge,
        _ => DurError::Invalid,
    })?;
    if units(t).any(|unit| unit == "M") {
        return Err(DurError::MinutesOrMonths);
    }
    Ok(Dur::Finite(d))
}

/// The unit words of a duration in humantime's form (`1h 30m`: `h`, `m`).
fn units(t: &str) -> impl Iterator<Item = &str> {
    t.split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
}

/// `t` with each unit `M` written as `unit`: the fix a refusal suggests
/// (`5M` as `5min`, or as `5months`; `1M` as `1month`).
pub fn with_m_as(t: &str, unit: &str) -> String {
    let t = t.trim();
    let mut out = String::with_capacity(t.len() + 8);
    let mut rest = t;
    while let Some(at) = rest.find('M') {
        let (before, after) = rest.split_at(at);
        let alone =
            !before.ends_with(char::is_alphabetic) && !after[1..].starts_with(char::is_alphabetic);
        out.push_str(before);
        if alone {
            let number = before.trim_end();
            let one = number.ends_with('1')
                && !number[..number.len() - 1].ends_with(|c: char| c.is_ascii_digit() || c == '.');
            out.push_str(unit);
            if unit == "month" && !one {
                out.push('s');
            }
        } else {
            out.push('M');
        }
        rest = &after[1..];
    }
    out.push_str(rest);
    out
}

/// The sleep(1) form: a decimal number (optionally with an exponent) and an
/// optional one-letter unit. None when `t` is not in that form at all.
fn seconds_form(t: &str) -> Option<Result<Dur, DurError>> {
    let (number, unit) = match t.as_bytes().last()? {
        b's' => (&t[..t.len() - 1], 1u128),
        b'm' => (&t[..t.len() - 1], 60),
        b'h' => (&t[..t.len() - 1], 3600),
        b'd' => (&t[..t.len() - 1], 86_400),
        _ => (t, 1),
    };
    let lower = number.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(Ok(Dur::Infinite));
    }
    let (mantissa, exponent) = match number.find(['e', 'E']) {
        Some(i) => (&number[..i], Some(&number[i + 1..])),
        None => (number, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_only = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if int.len() + frac.len() == 0 || !digits_only(int) || !digits_only(frac) {
        return None;
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => {
            let body = e.strip_prefix(['+', '-']).unwrap_or(e);
            if body.is_empty() || !digits_only(body) {
                return None;
            }
            // Exponents beyond any representable value are clamped: the
            // result is zero, the smallest step or too large either way.
            let magnitude = body.parse::<i64>().unwrap_or(i64::MAX).min(1_000_000);
            if e.starts_with('-') {
                -magnitude
            } else {
                magnitude
            }
        }
    };
    Some(exact(int, frac, exponent, unit * NANOS_PER_SEC))
}

/// `int.frac × 10^exponent` units of `unit_nanos` nanoseconds, rounded up
/// to a whole nanosecond.
fn exact(int: &str, frac: &str, exponent: i64, unit_nanos: u128) -> Result<Dur, DurError> {
    // All significant digits as one integer D, with value = D × 10^scale.
    let joined: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let Some(first) = joined.iter().position(|&d| d != 0) else {
        return Ok(Dur::Finite(Duration::ZERO));
    };
    let mut digits = joined[first..].to_vec();
    let mut scale = exponent - frac.len() as i64;
    while digits.last() == Some(&0) {
        digits.pop();
        scale += 1;
    }
    // D × unit, as decimal digits (most significant first).
    let mut product = Vec::with_capacity(digits.len() + 20);
    let mut carry: u128 = 0;
    for &d in digits.iter().rev() {
        let v = u128::from(d) * unit_nanos + carry;
        product.push((v % 10) as u8);
        carry = v / 10;
    }
    while carry > 0 {
        product.push((carry % 10) as u8);
        carry /= 10;
    }
    product.reverse();
    // Shift by 10^scale: positive scales append zeros, negative ones drop
    // digits, and any nonzero dropped digit rounds the result up.
    let (kept, round_up) = if scale >= 0 {
        let zeros = usize::try_from(scale).map_err(|_| DurError::TooLarge)?;
        if product.len().saturating_add(zeros) > 39 {
            return Err(DurError::TooLarge);
        }
        product.extend(std::iter::repeat_n(0, zeros));
        (product.as_slice(), false)
    } else {
        let drop = usize::try_from(-scale).unwrap_or(usize::MAX);
        if drop >= product.len() {
            (&product[..0], true)
        } else {
            let (kept, dropped) = product.split_at(product.len() - drop);
            (kept, dropped.iter().any(|&d| d != 0))
        }
    };
    if kept.len() > 39 {
        return Err(DurError::TooLarge);
    }
    let mut nanos: u128 = 0;
    for &d in kept {
        nanos = nanos
            .checked_mul(10)
            .and_then(|n| n.checked_add(u128::from(d)))
            .ok_or(DurError::TooLarge)?;
    }
    if round_up {
        nanos = nanos.checked_add(1).ok_or(DurError::TooLarge)?;
    }
    let secs = u64::try_from(nanos / NANOS_PER_SEC).map_err(|_| DurError::TooLarge)?;
    Ok(Dur::Finite(Duration::new(
        secs,
        (nanos % NANOS_PER_SEC) as u32,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fin(s: &str) -> Duration {
        match parse(s) {
            Ok(Dur::Finite(d)) => d,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn sleep_forms() {
        assert_eq!(fin("30"), Duration::from_secs(30));
        assert_eq!(fin("0.25"), Duration::from_millis(250));
        assert_eq!(fin(".5"), Duration::from_millis(500));
        assert_eq!(fin("5."), Duration::from_secs(5));
        assert_eq!(fin("1e-3"), Duration::from_millis(1));
        assert_eq!(fin("2.5e1"), Duration::from_secs(25));
        assert_eq!(fin("2.5E+1s"), Duration::from_secs(25));
        assert_eq!(fin("1.5m"), Duration::from_secs(90));
        assert_eq!(fin(".5h"), Duration::from_secs(1800));
        assert_eq!(fin("1d"), Duration::from_secs(86_400));
        assert_eq!(fin("+3"), Duration::from_secs(3));
        assert_eq!(fin(" 7s "), Duration::from_secs(7));
        assert_eq!(fin("0"), Duration::ZERO);
        assert_eq!(fin("0.000"), Duration::ZERO);
        assert_eq!(fin("0e5"), Duration::ZERO);
        assert_eq!(
            fin("0.123456789123456789123456789"),
            Duration::new(0, 123_456_790)
        );
        assert_eq!(fin("1.000000000000000000000000"), Duration::from_secs(1));
        assert_eq!(fin("100e-2"), Duration::from_secs(1));
    }

    #[test]
    fn tiny_positive_values_round_up_to_one_nanosecond() {
        assert_eq!(fin("1e-12"), Duration::from_nanos(1));
        assert_eq!(fin("0.0000000001"), Duration::from_nanos(1));
        assert_eq!(fin("1e-999999999999"), Duration::from_nanos(1));
        assert_eq!(fin("1.5e-9"), Duration::from_nanos(2));
        assert_eq!(fin("1e-9"), Duration::from_nanos(1));
    }

    #[test]
    fn humantime_forms() {
        assert_eq!(fin("250ms"), Duration::from_millis(250));
        assert_eq!(fin("1h 30m"), Duration::from_secs(5400));
        assert_eq!(fin("2min"), Duration::from_secs(120));
        assert_eq!(fin("10us"), Duration::from_micros(10));
    }

    #[test]
    fn capital_m_is_refused_and_months_and_weeks_written_out_are_read() {
        for s in ["1M", "5M", "1h 30M", "2 M"] {
            assert_eq!(parse(s), Err(DurError::MinutesOrMonths), "{s}");
        }
        assert_eq!(fin("1month"), Duration::from_secs(2_630_016));
        assert_eq!(fin("2months"), Duration::from_secs(2 * 2_630_016));
        assert_eq!(fin("2w"), Duration::from_secs(14 * 86_400));
        assert_eq!(fin("1min"), Duration::from_secs(60));
        // Not a duration with an M unit: invalid as before.
        assert_eq!(parse("1Mx"), Err(DurError::Invalid));
        assert_eq!(parse("M"), Err(DurError::Invalid));
    }

    #[test]
    fn the_fix_for_an_m_unit_writes_it_out() {
        assert_eq!(with_m_as("5M", "min"), "5min");
        assert_eq!(with_m_as("5M", "month"), "5months");
        assert_eq!(with_m_as(" 1M ", "month"), "1month");
        assert_eq!(with_m_as("11M", "month"), "11months");
        assert_eq!(with_m_as("2.1M", "month"), "2.1months");
        assert_eq!(with_m_as("1h 30M", "min"), "1h 30min");
        assert_eq!(with_m_as("2 M", "min"), "2 min");
    }

    #[test]
    fn infinity() {
        for s in ["inf", "INF", "infinity", "Infinity", "infs", "infinityd"] {
            assert_eq!(parse(s), Ok(Dur::Infinite), "{s}");
        }
    }

    #[test]
    fn rejections() {
        for s in [
            "", "abc", ".", "e3", "1e", "1e+", "1.2.3", "1x", "s", "1 s s",
        ] {
            assert_eq!(parse(s), Err(DurError::Invalid), "{s}");
        }
        for s in ["--", "--max", "-x", "--5"] {
            assert_eq!(parse(s), Err(DurError::Invalid), "{s}");
        }
        for s in ["-1", "-1s", "-0.5", "-inf", "-250ms"] {
            assert_eq!(parse(s), Err(DurError::Negative), "{s}");
        }
        for s in [
            "1e30",
            "99999999999999999999999999999999999999999",
            "1e999999999999d",
        ] {
            assert_eq!(parse(s), Err(DurError::TooLarge), "{s}");
        }
    }

    proptest::proptest! {
        /// Every way of writing the same nanosecond count reads back exactly.
        #[test]
        fn exact_decimal_forms_round_trip(secs in 0u64..10_000_000_000, nanos in 0u32..1_000_000_000) {
            let d = Duration::new(secs, nanos);
            let ns = d.as_nanos();
            proptest::prop_assert_eq!(fin(&format!("{secs}.{nanos:09}")), d);
            proptest::prop_assert_eq!(fin(&format!("{secs}.{nanos:09}000s")), d);
            proptest::prop_assert_eq!(fin(&format!("{ns}e-9")), d);
            proptest::prop_assert_eq!(fin(&format!("{ns}000E-12")), d);
            proptest::prop_assert_eq!(fin(&format!("0.{ns:0>30}e21")), d);
        }

        /// Extra digits below a nanosecond round up, never down.
        #[test]
        fn sub_nanosecond_digits_round_up(ns in 0u64..1_000_000_000_000, extra in 1u32..999) {
            let got = fin(&format!("{ns}.{extra:03}e-9"));
            proptest::prop_assert_eq!(got, Duration::from_nanos(ns + 1));
        }
    }

    #[test]
    fn the_largest_duration_fits() {
        assert_eq!(fin("18446744073709551615"), Duration::from_secs(u64::MAX));
        assert_eq!(parse("18446744073709551616"), Err(DurError::TooLarge));
    }
}
