//! HTTP dates (RFC 9110 §5.6.7, IMF-fixdate).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last instant the four-digit year of IMF-fixdate can show: 9999-12-31 23:59:59.999 UTC.
const LAST_MILLIS: i64 = 253_402_300_799_999;

/// Renders milliseconds since 1970-01-01 00:00 UTC as `<Day>, <DD> <Mon> <YYYY> <HH>:<MM>:<SS> GMT`.
///
/// The format has a four-digit year from 1970 on, so instants before the epoch render as the
/// epoch and instants after year 9999 as its last second. Milliseconds are truncated.
///
/// ```
/// assert_eq!(web::http::http_date(784_111_777_000), "Sun, 06 Nov 1994 08:49:37 GMT");
/// assert_eq!(web::http::http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
/// ```
pub fn http_date(millis: i64) -> String {
    let clamped = millis.clamp(0, LAST_MILLIS) as u64;
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_millis(clamped))
}

/// The current time as an HTTP date.
pub(crate) fn now() -> String {
    httpdate::fmt_http_date(SystemTime::now().max(UNIX_EPOCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_date_cases() {
        let cases = [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (999, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (-1, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (i64::MIN, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777_000, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400_000, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_795_219_200_000, "Sat, 21 Nov 2026 00:00:00 GMT"),
            (LAST_MILLIS, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (i64::MAX, "Fri, 31 Dec 9999 23:59:59 GMT"),
        ];
        for (ms, want) in cases {
            assert_eq!(http_date(ms), want, "{ms}");
        }
    }

    #[test]
    fn now_has_the_fixed_format() {
        let s = now();
        assert_eq!(s.len(), 29);
        assert!(s.ends_with(" GMT"));
    }
}
