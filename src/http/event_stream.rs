//! The `text/event-stream` body format, beside HTTP's other body codecs because rooms encode
//! their messages in it for event streams once per publish (`web::sse::Event` is its public
//! name). [`Event`]: one Server-Sent Event and its bytes on the wire, per the WHATWG EventSource
//! format (`text/event-stream`): `id`, `event`, `retry` and one `data` line per line of the
//! text, then a blank line.
//!
//! Nothing an application puts in an event can end a field or the event early: line breaks in
//! the data become separate `data` lines (the browser joins them back with `\n`), and CR, LF
//! and NUL are left out of `id` and `event`, where a line break would start another field.

use std::sync::Arc;
use std::time::Duration;

/// A comment line alone: what a heartbeat sends (browsers ignore it; proxies see traffic).
pub(crate) const HEARTBEAT: &[u8] = b":\n\n";

/// One event of a Server-Sent Events stream, built from its data.
///
/// ```
/// use web::sse::Event;
/// let e = Event::new("line one\nline two").id("42").event("chat");
/// assert_eq!(e.to_bytes(), b"id: 42\nevent: chat\ndata: line one\ndata: line two\n\n");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    id: Option<String>,
    event: Option<String>,
    retry: Option<u64>,
    data: String,
    /// No data line at all (an event of `retry:` alone).
    bare: bool,
}

impl Event {
    /// An event carrying `data` (the browser's `MessageEvent.data`); its type is `message`.
    ///
    /// ```
    /// assert_eq!(web::sse::Event::new("hi").to_bytes(), b"data: hi\n\n");
    /// ```
    pub fn new(data: impl Into<String>) -> Event {
        Event {
            data: data.into(),
            ..Event::default()
        }
    }

    /// Sets the event's id: the browser sends the last one it saw back as `Last-Event-ID` when
    /// it reconnects. CR, LF and NUL are left out (they cannot stand in an id).
    ///
    /// ```
    /// let e = web::sse::Event::new("x").id("7\r\nevent: forged");
    /// assert_eq!(e.to_bytes(), b"id: 7event: forged\ndata: x\n\n");
    /// ```
    pub fn id(mut self, id: impl AsRef<str>) -> Event {
        self.id = Some(one_line(id.as_ref()));
        self
    }

    /// Sets the event's type (what `addEventListener` listens for). CR, LF and NUL are left out.
    ///
    /// ```
    /// let e = web::sse::Event::new("x").event("join");
    /// assert_eq!(e.to_bytes(), b"event: join\ndata: x\n\n");
    /// ```
    pub fn event(mut self, name: impl AsRef<str>) -> Event {
        self.event = Some(one_line(name.as_ref()));
        self
    }

    /// Tells the browser how long to wait before reconnecting after the stream ends
    /// (milliseconds on the wire).
    ///
    /// ```
    /// let e = web::sse::Event::new("x").retry(std::time::Duration::from_secs(3));
    /// assert_eq!(e.to_bytes(), b"retry: 3000\ndata: x\n\n");
    /// ```
    pub fn retry(mut self, after: Duration) -> Event {
        self.retry = Some(u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// An event of `retry:` alone: tells the browser how long to wait before it reconnects,
    /// and dispatches nothing (an event with a data line, even an empty one, reaches
    /// `onmessage`). A stream can send it first, before any data.
    ///
    /// ```
    /// let e = web::sse::Event::reconnect_after(std::time::Duration::from_secs(10));
    /// assert_eq!(e.to_bytes(), b"retry: 10000\n\n");
    /// ```
    pub fn reconnect_after(after: Duration) -> Event {
        Event {
            bare: true,
            ..Event::default().retry(after)
        }
    }

    /// The event as it goes on the wire.
    ///
    /// ```
    /// assert_eq!(web::sse::Event::new("").to_bytes(), b"data: \n\n");
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.len() + 16);
        self.write(&mut out);
        out
    }

    /// Appends the event's bytes to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        // Room for a one-line event at once (an empty buffer grown field by field would be
        // reallocated on the way).
        let named = |v: &Option<String>, name: usize| v.as_ref().map_or(0, |v| v.len() + name);
        out.reserve(self.data.len() + named(&self.id, 5) + named(&self.event, 8) + 36);
        if let Some(id) = &self.id {
            field(out, "id", id);
        }
        if let Some(event) = &self.event {
            field(out, "event", event);
        }
        if let Some(retry) = self.retry {
            field(out, "retry", &retry.to_string());
        }
        if !self.bare {
            data_lines(out, &self.data);
        }
        out.push(b'\n');
    }

    /// The event's bytes, shared by every stream it is sent to.
    pub(crate) fn shared(&self) -> Arc<[u8]> {
        self.to_bytes().into()
    }

    /// The event's data.
    pub(crate) fn data(&self) -> &str {
        &self.data
    }
}

/// `data` as one event of data lines alone (what a room's text message becomes).
pub(crate) fn data_event(data: &str) -> Arc<[u8]> {
    let mut out = Vec::with_capacity(data.len() + 8);
    data_lines(&mut out, data);
    out.push(b'\n');
    out.into()
}

fn field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.push(b'\n');
}

/// One `data` line per line of `data`; CRLF, CR and LF all end a line (as the parser reads
/// them), so none survives inside a line.
fn data_lines(out: &mut Vec<u8>, data: &str) {
    let mut rest = data;
    loop {
        let end = rest.find(['\r', '\n']).unwrap_or(rest.len());
        field(out, "data", &rest[..end]);
        if end == rest.len() {
            return;
        }
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + skip..];
    }
}

/// `s` without CR, LF and NUL.
fn one_line(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '\r' | '\n' | '\0'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a browser's EventSource parser makes of a stream: (id, type, data) per event.
    fn parse(stream: &[u8]) -> Vec<(String, String, String)> {
        let text = std::str::from_utf8(stream).unwrap();
        let mut events = Vec::new();
        let (mut id, mut kind, mut data) = (String::new(), String::new(), Vec::<String>::new());
        let mut lines = text.split('\n').peekable();
        while let Some(line) = lines.next() {
            if line.is_empty() {
                if lines.peek().is_none() {
                    break;
                }
                if data.is_empty() {
                    kind.clear();
                    continue; // no data line: nothing is dispatched (a comment alone, say)
                }
                let k = if kind.is_empty() { "message" } else { &kind };
                events.push((id.clone(), k.to_owned(), data.join("\n")));
                kind.clear();
                data.clear();
                continue;
            }
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match name {
                "id" => id = value.to_owned(),
                "event" => kind = value.to_owned(),
                "data" => data.push(value.to_owned()),
                _ => {}
            }
        }
        events
    }

    #[test]
    fn events_encode_as_the_whatwg_format_and_parse_back() {
        /// The event, its bytes, and what a parser reads back: (id, type, data).
        type Case = (
            Event,
            &'static [u8],
            (&'static str, &'static str, &'static str),
        );
        let cases: &[Case] = &[
            (Event::new("hi"), b"data: hi\n\n", ("", "message", "hi")),
            (
                Event::new("a\nb").id("1"),
                b"id: 1\ndata: a\ndata: b\n\n",
                ("1", "message", "a\nb"),
            ),
            (
                Event::new("a\r\nb\rc").event("x"),
                b"event: x\ndata: a\ndata: b\ndata: c\n\n",
                ("", "x", "a\nb\nc"),
            ),
            (
                Event::new("\n").id("2"),
                b"id: 2\ndata: \ndata: \n\n",
                ("2", "message", "\n"),
            ),
            (
                Event::new(" lead").id("3"),
                b"id: 3\ndata:  lead\n\n",
                ("3", "message", " lead"),
            ),
            (
                Event::new("x\n\ndata: forged").id("4\n\nid: 9"),
                b"id: 4id: 9\ndata: x\ndata: \ndata: data: forged\n\n",
                ("4id: 9", "message", "x\n\ndata: forged"),
            ),
            (
                Event::new("r").retry(Duration::from_millis(1500)),
                b"retry: 1500\ndata: r\n\n",
                ("", "message", "r"),
            ),
        ];
        for (event, wire, (id, kind, data)) in cases {
            assert_eq!(event.to_bytes(), *wire, "{event:?}");
            let parsed = parse(wire);
            assert_eq!(parsed.len(), 1, "one event only: {event:?}");
            assert_eq!(
                parsed[0],
                (id.to_string(), kind.to_string(), data.to_string())
            );
        }
    }

    #[test]
    fn a_data_event_is_the_data_lines_alone() {
        assert_eq!(&*data_event("a\nb"), b"data: a\ndata: b\n\n");
        assert_eq!(HEARTBEAT, b":\n\n");
        assert!(parse(HEARTBEAT).is_empty());
    }
}
