//! HTTP dates (RFC 9110 §5.6.7, IMF-fixdate).

use std::cell::RefCell;
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

/// A `fmt::Write` into a fixed array (what does not fit is an error).
struct FixedText {
    buf: [u8; 29],
    len: usize,
}

impl std::fmt::Write for FixedText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The current date of this thread, formatted at most once per second.
struct DateCache {
    /// When the formatted date goes stale (the next whole wall-clock second).
    stale_at: Option<Instant>,
    text: [u8; 29],
}

thread_local! {
    static DATE: RefCell<DateCache> = const {
        RefCell::new(DateCache { stale_at: None, text: [b' '; 29] })
    };
}

/// Calls `f` with the current HTTP date. Each thread (each server worker) formats the date at
/// most once per second; `now` is the caller's clock reading (the reactor reads it once per
/// loop turn).
pub(crate) fn with_date<R>(now: Instant, f: impl FnOnce(&[u8]) -> R) -> R {
    with_date_until(now, |date, _| f(date))
}

/// [`with_date`], and the instant the date goes stale (the next wall-clock second): what was
/// rendered with it may be reused until then.
pub(crate) fn with_date_until<R>(now: Instant, f: impl FnOnce(&[u8], Instant) -> R) -> R {
    DATE.with(|cell| {
        let mut cache = cell.borrow_mut();
        if cache.stale_at.is_none_or(|t| now >= t) {
            let wall = SystemTime::now().max(UNIX_EPOCH);
            let into_second = wall
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            // Formatted in place: no allocation, even once a second.
            let mut text = FixedText {
                buf: [b' '; 29],
                len: 0,
            };
            let formatted = write!(text, "{}", httpdate::HttpDate::from(wall)).is_ok();
            if formatted && text.len == cache.text.len() {
                cache.text = text.buf;
            }
            cache.stale_at =
                Some(now + Duration::from_nanos(u64::from(1_000_000_000 - into_second)));
        }
        f(&cache.text, cache.stale_at.unwrap_or(now))
    })
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
    fn the_cached_date_is_the_current_one_and_refreshes() {
        let t = Instant::now();
        let first = with_date(t, |d| d.to_vec());
        assert!(httpdate::parse_http_date(std::str::from_utf8(&first).unwrap()).is_ok());
        assert_eq!(
            with_date(t, |d| d.to_vec()),
            first,
            "same instant, same text"
        );
        let later = with_date(t + Duration::from_secs(2), |d| d.to_vec());
        assert!(httpdate::parse_http_date(std::str::from_utf8(&later).unwrap()).is_ok());
    }

    #[test]
    fn the_cached_date_has_the_fixed_format_and_parses() {
        let text = with_date(Instant::now(), |d| String::from_utf8(d.to_vec()).unwrap());
        assert_eq!(text.len(), 29);
        assert!(text.ends_with(" GMT"));
        let parsed = httpdate::parse_http_date(&text).unwrap();
        let off = SystemTime::now().duration_since(parsed).unwrap_or_default();
        assert!(off < Duration::from_secs(3), "{text}");
    }
}
