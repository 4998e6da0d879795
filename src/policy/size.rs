//! **Pure.** SIZE parsing, as GNU `head -c` and `sort -S` read sizes: a
//! whole number of bytes with an optional unit, `K`, `M`, `G` or `T` (and
//! `KiB`...: powers of 1024) or `KB`, `MB`, `GB`, `TB` (powers of 1000);
//! `inf` for no limit.

/// A size as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Bytes(u64),
    Unlimited,
}

/// Why a size was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeError {
    Invalid,
    Zero,
    TooLarge,
}

/// Parse a SIZE: `1048576`, `64M`, `1G`, `512KiB`, `2GB`, `inf`. Units are
/// case-insensitive; a space between number and unit is allowed.
pub fn parse(s: &str) -> Result<Size, SizeError> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("inf") {
        return Ok(Size::Unlimited);
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(SizeError::Invalid);
    }
    let (number, unit) = s.split_at(digits);
    let scale: u64 = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(SizeError::Invalid),
    };
    let n: u64 = number.parse().map_err(|_| SizeError::TooLarge)?;
    match n.checked_mul(scale) {
        Some(0) => Err(SizeError::Zero),
        Some(bytes) => Ok(Size::Bytes(bytes)),
        None => Err(SizeError::TooLarge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_every_accepted_form() {
        assert_eq!(parse("1048576"), Ok(Size::Bytes(1 << 20)));
        assert_eq!(parse("64M"), Ok(Size::Bytes(64 << 20)));
        assert_eq!(parse("64m"), Ok(Size::Bytes(64 << 20)));
        assert_eq!(parse("1G"), Ok(Size::Bytes(1 << 30)));
        assert_eq!(parse("1 GiB"), Ok(Size::Bytes(1 << 30)));
        assert_eq!(parse("512KiB"), Ok(Size::Bytes(512 << 10)));
        assert_eq!(parse("2T"), Ok(Size::Bytes(2 << 40)));
        assert_eq!(parse("2GB"), Ok(Size::Bytes(2_000_000_000)));
        assert_eq!(parse("10kb"), Ok(Size::Bytes(10_000)));
        assert_eq!(parse("100b"), Ok(Size::Bytes(100)));
        assert_eq!(parse("inf"), Ok(Size::Unlimited));
        assert_eq!(parse(" INF "), Ok(Size::Unlimited));
    }

    #[test]
    fn refused_sizes() {
        for bad in ["", "M", "-1", "1.5G", "1X", "1 G B", "0x10", "G1"] {
            assert_eq!(parse(bad), Err(SizeError::Invalid), "{bad:?}");
        }
        assert_eq!(parse("0"), Err(SizeError::Zero));
        assert_eq!(parse("0G"), Err(SizeError::Zero));
        assert_eq!(parse("99999999999999999999"), Err(SizeError::TooLarge));
        assert_eq!(parse("17000000T"), Err(SizeError::TooLarge));
    }
}
