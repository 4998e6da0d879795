//! A server certificate that is, byte for byte, one of `--cacert`'s: the
//! usual way to trust an internal service with a self-signed certificate
//! (`openssl req -x509 …`, which marks it as a CA) or with its own leaf
//! certificate, which curl accepts and chain building refuses.
//!
//! Being the very certificate the user named is the trust; what is still
//! checked is the rest: the certificate is within its validity period and
//! names the host (its subject alternative names; with none at all, its
//! common name, as curl does). The TLS handshake separately proves that
//! the server holds the certificate's key. **Pure**, apart from the time
//! passed in.

use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, Error};

/// Checks a server certificate found byte-identical in `--cacert`.
pub fn verify(
    cert: &CertificateDer<'_>,
    name: &ServerName<'_>,
    now: UnixTime,
) -> Result<(), Error> {
    let bad = || Error::InvalidCertificate(CertificateError::BadEncoding);
    let parts = parse(cert.as_ref()).ok_or_else(bad)?;
    let now = now.as_secs();
    if now < parts.not_before {
        return Err(Error::InvalidCertificate(CertificateError::NotValidYet));
    }
    if now > parts.not_after {
        return Err(Error::InvalidCertificate(CertificateError::Expired));
    }
    let ee = webpki::EndEntityCert::try_from(cert).map_err(|_| bad())?;
    if ee.verify_is_valid_for_subject_name(name).is_ok() {
        return Ok(());
    }
    let wanted = match name {
        ServerName::DnsName(d) => d.as_ref().to_string(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => String::new(),
    };
    if !parts.has_alt_names
        && parts
            .common_name
            .as_deref()
            .is_some_and(|cn| !wanted.is_empty() && cn.eq_ignore_ascii_case(&wanted))
    {
        return Ok(());
    }
    Err(Error::InvalidCertificate(
        CertificateError::NotValidForNameContext {
            expected: name.to_owned(),
            presented: parts.common_name.into_iter().collect(),
        },
    ))
}

/// What is read from the certificate here.
#[derive(Debug, PartialEq, Eq)]
struct Parts {
    /// Validity, in seconds since the Unix epoch.
    not_before: u64,
    not_after: u64,
    common_name: Option<String>,
    /// A subjectAltName extension is present (then the common name is not
    /// a name the certificate is for).
    has_alt_names: bool,
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
const BOOLEAN: u8 = 0x01;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
/// [0] EXPLICIT (version) and [3] EXPLICIT (extensions).
const VERSION: u8 = 0xa0;
const EXTENSIONS: u8 = 0xa3;
/// 2.5.4.3, commonName; 2.5.29.17, subjectAltName.
const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];

/// Reads one DER element off the front of `input`: its tag, its contents,
/// and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The contents of an element that must have `tag`.
fn expect(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (t, body, rest) = element(input)?;
    (t == tag).then_some((body, rest))
}

fn parse(der: &[u8]) -> Option<Parts> {
    let (cert, _) = expect(der, SEQUENCE)?;
    let (tbs, _) = expect(cert, SEQUENCE)?;
    let mut rest = tbs;
    if rest.first() == Some(&VERSION) {
        rest = element(rest)?.2;
    }
    // serialNumber, signature, issuer: skipped.
    for _ in 0..3 {
        rest = element(rest)?.2;
    }
    let (validity, after) = expect(rest, SEQUENCE)?;
    let (not_before, more) = time(validity)?;
    let (not_after, _) = time(more)?;
    let (subject, after) = expect(after, SEQUENCE)?;
    // subjectPublicKeyInfo, then the optional unique IDs and extensions.
    let mut rest = element(after)?.2;
    let mut has_alt_names = false;
    while let Some((tag, body, next)) = element(rest) {
        if tag == EXTENSIONS {
            has_alt_names = has_extension(body, OID_SAN)?;
        }
        rest = next;
    }
    Some(Parts {
        not_before,
        not_after,
        common_name: common_name(subject),
        has_alt_names,
    })
}

/// Whether the extensions (`[3] { SEQUENCE OF Extension }`) hold `oid`.
fn has_extension(explicit: &[u8], oid: &[u8]) -> Option<bool> {
    let (mut list, _) = expect(explicit, SEQUENCE)?;
    while !list.is_empty() {
        let (ext, next) = expect(list, SEQUENCE)?;
        let (id, mut fields) = expect(ext, OID)?;
        if fields.first() == Some(&BOOLEAN) {
            fields = element(fields)?.2;
        }
        expect(fields, OCTET_STRING)?;
        if id == oid {
            return Some(true);
        }
        list = next;
    }
    Some(false)
}

/// The subject's (last) common name, when it is text.
fn common_name(mut name: &[u8]) -> Option<String> {
    let mut found = None;
    while let Some((SET, set, next)) = element(name) {
        let mut atvs = set;
        while let Some((SEQUENCE, atv, more)) = element(atvs) {
            if let Some((id, value)) = expect(atv, OID)
                && id == OID_CN
                && let Some((tag, text, _)) = element(value)
                // UTF8String, PrintableString, TeletexString, IA5String.
                && matches!(tag, 0x0c | 0x13 | 0x14 | 0x16)
            {
                found = std::str::from_utf8(text).ok().map(str::to_string);
            }
            atvs = more;
        }
        name = next;
    }
    found
}

/// A UTCTime or GeneralizedTime (`…Z`), as seconds since the epoch.
fn time(input: &[u8]) -> Option<(u64, &[u8])> {
    let (tag, body, rest) = element(input)?;
    let text = std::str::from_utf8(body).ok()?;
    let digits = text.strip_suffix('Z')?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let num = |s: &str| s.parse::<u64>().ok();
    let (year, rest_digits) = match (tag, digits.len()) {
        (UTC_TIME, 12) => {
            let yy = num(&digits[..2])?;
            // RFC 5280: 50-99 are 1950-1999, 00-49 are 2000-2049.
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &digits[2..])
        }
        (GENERALIZED_TIME, 14) => (num(&digits[..4])?, &digits[4..]),
        _ => return None,
    };
    let month = num(&rest_digits[0..2])?;
    let day = num(&rest_digits[2..4])?;
    let hour = num(&rest_digits[4..6])?;
    let minute = num(&rest_digits[6..8])?;
    let second = num(&rest_digits[8..10])?;
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    Some((days * 86_400 + hour * 3600 + minute * 60 + second, rest))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm), for dates from 1970 on.
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    let y = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), Some(0));
        assert_eq!(days_from_civil(2000, 3, 1), Some(11_017));
        // 2024-02-29: a leap day.
        assert_eq!(days_from_civil(2024, 2, 29), Some(19_782));
        assert_eq!(days_from_civil(1969, 12, 31), None);
    }

    #[test]
    fn times() {
        let utc = [&[UTC_TIME, 13][..], b"941106084937Z"].concat();
        assert_eq!(time(&utc).map(|t| t.0), Some(784_111_777));
        let utc_2049 = [&[UTC_TIME, 13][..], b"490101000000Z"].concat();
        assert_eq!(time(&utc_2049).map(|t| t.0), Some(2_493_072_000));
        let gen_time = [&[GENERALIZED_TIME, 15][..], b"21060207062815Z"].concat();
        assert_eq!(time(&gen_time).map(|t| t.0), Some(4_294_967_295));
        for bad in [&b"941106084937"[..], b"941306084937Z", b"94110608493xZ"] {
            let t = [&[UTC_TIME, bad.len() as u8][..], bad].concat();
            assert_eq!(time(&t), None, "{bad:?}");
        }
    }

    #[test]
    fn lengths_and_truncation() {
        assert_eq!(element(&[0x30, 0x00]), Some((0x30, &[][..], &[][..])));
        let long = [&[0x04, 0x81, 0x80][..], &[7u8; 0x80]].concat();
        assert_eq!(element(&long).map(|e| e.1.len()), Some(0x80));
        assert_eq!(element(&[0x04, 0x05, 1, 2]), None);
        assert_eq!(element(&[0x04, 0x80]), None);
        assert_eq!(parse(&[0x30, 0x03, 0x30, 0x01, 0x00]), None);
    }
}
