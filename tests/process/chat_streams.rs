//! The chat's long-lived HTTP over its real process: `GET /sse?room=R` (the room's recent
//! messages, then each new one once, every event with an id, a reconnect resuming after
//! `Last-Event-ID`) and `GET /poll?room=R&after=ID` (at once when newer messages exist, else
//! the next one), and SIGTERM ending both cleanly.

use crate::wire;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use wire::chat::Chat;

/// Posts `text` to `room` (each from a caller of its own: the rate limit is not under test);
/// the message's id.
fn post(chat: &Chat, room: &str, text: &str) -> u64 {
    let caller = format!(
        "X-Forwarded-For: 10.0.{}.{}",
        text.len() % 250,
        text.as_bytes()[0]
    );
    let (status, body) = chat.ask(&format!("POST /api/messages?room={room}"), &[&caller], text);
    assert_eq!(status, 201, "{body}");
    let id = body.split(r#""id":"#).nth(1).unwrap();
    id.trim_end_matches('}').parse().unwrap()
}

/// An open request whose reply is read as it comes.
struct Open {
    conn: TcpStream,
    got: Vec<u8>,
}

impl Open {
    fn get(chat: &Chat, target: &str, extra: &str) -> Open {
        let mut conn = TcpStream::connect(("127.0.0.1", chat.port)).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            conn,
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n"
        )
        .unwrap();
        Open {
            conn,
            got: Vec::new(),
        }
    }

    /// Reads until `end`; what came up to it.
    fn until(&mut self, end: &str) -> String {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(at) = self
                .got
                .windows(end.len())
                .position(|w| w == end.as_bytes())
            {
                let rest = self.got.split_off(at + end.len());
                return String::from_utf8(std::mem::replace(&mut self.got, rest)).unwrap();
            }
            assert!(
                Instant::now() < until,
                "no {end:?} in {:?}",
                String::from_utf8_lossy(&self.got)
            );
            let mut buf = [0u8; 4096];
            match self.conn.read(&mut buf) {
                Ok(0) => panic!(
                    "ended before {end:?}: {:?}",
                    String::from_utf8_lossy(&self.got)
                ),
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(e) => panic!(
                    "{e} before {end:?}: {:?}",
                    String::from_utf8_lossy(&self.got)
                ),
            }
        }
    }

    /// The next event: its id and data.
    fn event(&mut self) -> (u64, String) {
        let event = self.until("\n\n");
        let mut id = None;
        let mut data = String::new();
        for line in event.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.parse().unwrap());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push_str(v);
            }
        }
        (id.expect("every event has an id"), data)
    }

    fn read_to_end(&mut self) -> String {
        let _ = self.conn.read_to_end(&mut self.got);
        String::from_utf8(std::mem::take(&mut self.got)).unwrap()
    }
}

#[test]
fn an_event_stream_gets_the_rooms_recent_messages_then_each_new_one_and_resumes_after_its_last_id()
{
    let chat = Chat::start(&["--proxies", "1"]);
    let ids: Vec<u64> = ["one", "two", "three"]
        .iter()
        .map(|t| post(&chat, "sse", t))
        .collect();
    let mut s = Open::get(&chat, "/sse?room=sse", "");
    let head = s.until("\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n") && head.contains("text/event-stream"),
        "{head}"
    );
    for (id, text) in ids.iter().zip(["one", "two", "three"]) {
        let (got, data) = s.event();
        assert_eq!(got, *id);
        assert!(data.contains(&format!(r#""text":"{text}""#)), "{data}");
    }
    let four = post(&chat, "sse", "four");
    let (got, data) = s.event();
    assert_eq!(got, four);
    assert!(
        data.contains(r#""text":"four""#) && data.contains(r#""room":"sse""#),
        "{data}"
    );
    drop(s);
    // The browser comes back having seen "two": it gets three and four, nothing twice.
    let mut again = Open::get(
        &chat,
        "/sse?room=sse",
        &format!("Last-Event-ID: {}\r\n", ids[1]),
    );
    again.until("\r\n\r\n");
    assert_eq!(again.event().0, ids[2]);
    assert_eq!(again.event().0, four);
    let five = post(&chat, "sse", "five");
    assert_eq!(again.event().0, five);
    let (status, _) = chat.ask("GET /sse?room=", &[], "");
    assert_eq!(status, 400);
}

#[test]
fn a_long_poll_answers_at_once_with_newer_messages_or_waits_for_the_next_one() {
    let chat = Chat::start(&["--proxies", "1"]);
    let first = post(&chat, "poll", "first");
    let (status, body) = chat.ask(&format!("GET /poll?room=poll&after={}", first - 1), &[], "");
    assert_eq!(status, 200);
    assert!(
        body.starts_with(r#"{"messages":[{"id":"#) && body.contains(r#""text":"first""#),
        "{body}"
    );
    let mut waiting = Open::get(
        &chat,
        &format!("/poll?room=poll&after={first}"),
        "Connection: close\r\n",
    );
    std::thread::sleep(Duration::from_millis(200));
    let next = post(&chat, "poll", "next");
    let reply = waiting.read_to_end();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(
        reply.contains(&format!(r#""id":{next},"#)) && reply.contains(r#""text":"next""#),
        "{reply}"
    );
    assert!(!reply.contains(r#""text":"first""#), "{reply}");
    let (status, _) = chat.ask("GET /poll?room=poll&after=x", &[], "");
    assert_eq!(status, 400);
}

#[test]
fn sigterm_ends_every_stream_and_poll_cleanly() {
    let mut chat = Chat::start(&["--proxies", "1"]);
    let mut stream = Open::get(&chat, "/sse?room=stop", "");
    stream.until("\r\n\r\n");
    let mut poll = Open::get(&chat, "/poll?room=stop&after=0", "");
    std::thread::sleep(Duration::from_millis(200));
    let began = Instant::now();
    // SAFETY: kill(2) on the PID of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(chat.pid() as i32, libc::SIGTERM) }, 0);
    assert_eq!(stream.read_to_end(), "");
    let reply = poll.read_to_end();
    assert!(reply.starts_with("HTTP/1.1 204 "), "{reply}");
    assert_eq!(chat.wait_exit(Duration::from_secs(10)), Some(0));
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn an_id_that_names_no_message_replays_nothing_and_whole_histories_count_as_writes() {
    let chat = Chat::start(&["--proxies", "1"]);
    let ids: Vec<u64> = ["one", "two", "three"]
        .iter()
        .map(|t| post(&chat, "garbage", t))
        .collect();
    // Garbage, negative, a float, too long, past u64: no replay, then the next message only.
    let long = "9".repeat(8000);
    for bad in ["zzz", "-1", "1e3", long.as_str(), "18446744073709551616"] {
        let mut stream = Open::get(
            &chat,
            "/sse?room=garbage",
            &format!("Last-Event-ID: {bad}\r\nX-Forwarded-For: 10.9.9.9\r\n"),
        );
        stream.until("\r\n\r\n");
        let next = post(
            &chat,
            "garbage",
            &format!("after {}", &bad[..bad.len().min(5)]),
        );
        assert_eq!(
            stream.event().0,
            next,
            "{}: only what follows",
            &bad[..bad.len().min(8)]
        );
    }
    // A whole history (no id, or a poll without `after`) is one of the caller's 5 writes a
    // second: the sixth in a second is refused.
    // (The limiter counts per wall-clock second: the eight are asked within one, a new caller
    // each attempt.)
    let statuses = wire::within_one_second(|attempt| {
        let caller = format!("X-Forwarded-For: 10.7.7.{attempt}");
        (0..8)
            .map(|_| chat.ask("GET /poll?room=garbage", &[&caller], "").0)
            .collect::<Vec<u16>>()
    });
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        statuses.iter().filter(|s| **s == 200).count() <= 5,
        "{statuses:?}"
    );
    // With an id, no write is counted.
    let statuses: Vec<u16> = (0..8)
        .map(|_| {
            let target = format!("GET /poll?room=garbage&after={}", ids[0]);
            chat.ask(&target, &["X-Forwarded-For: 10.7.8.8"], "").0
        })
        .collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
}

#[test]
fn a_websocket_member_resuming_after_an_id_gets_only_the_messages_after_it_once() {
    let chat = Chat::start(&[]);
    let ids: Vec<u64> = ["one", "two", "three"]
        .iter()
        .map(|text| post(&chat, "resume", text))
        .collect();
    let target = format!("/ws?room=resume&name=back&after={}", ids[0]);
    let (status, mut member) = chat.upgrade(&target, &[]);
    assert_eq!(status, 101);
    let mut texts = Vec::new();
    for _ in 0..2 {
        let (_, payload) = member.frame();
        texts.push(String::from_utf8(payload).unwrap());
    }
    assert!(texts[0].contains(r#""text":"two""#), "{texts:?}");
    assert!(texts[1].contains(r#""text":"three""#), "{texts:?}");
    // Then what is posted from now on, nothing of the history twice.
    post(&chat, "resume", "four");
    let (_, payload) = member.frame();
    assert!(
        String::from_utf8(payload)
            .unwrap()
            .contains(r#""text":"four""#)
    );
    // An id that is not one is refused before the upgrade.
    let (status, _) = chat.upgrade("/ws?room=resume&name=back&after=soon", &[]);
    assert_eq!(status, 400);
}
