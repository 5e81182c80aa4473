//! The chat demo's rules, over its real process: one rate limit for every way of writing (a
//! WebSocket message as a post), one validation of room and member names for both ways in,
//! names that are not UTF-8 refused, pages of another host refused the WebSocket unless
//! allowed, and figures that list no room names.

use crate::wire;

use std::time::Duration;

use web::ws::client_frame;
use wire::chat::Chat;
use wire::ws::Client;

fn text_of(c: &mut Client) -> String {
    let (first, payload) = c.frame();
    assert_eq!(first, 0x81, "a text frame");
    String::from_utf8(payload).unwrap()
}

#[test]
fn websocket_messages_count_against_the_same_limit_as_posts() {
    let chat = Chat::start(&["--proxies", "1"]);
    let (status, mut member) =
        chat.upgrade("/ws?room=limits&name=ann", &["X-Forwarded-For: 10.9.9.9"]);
    assert_eq!(status, 101);
    for i in 0..12 {
        member.send(&client_frame(&format!("m{i}")));
    }
    let mut delivered = 0;
    let mut refused = 0;
    while delivered + refused < 12 {
        let text = text_of(&mut member);
        if text.contains("\"retry_after\":1") {
            refused += 1;
        } else {
            assert!(text.contains("\"name\":\"ann\""), "{text}");
            delivered += 1;
        }
    }
    // 5 a second (10 if the burst straddles a second).
    assert!(
        (5..=10).contains(&delivered),
        "{delivered} delivered, {refused} refused"
    );
    // The same caller's posts share the allowance: past it in this second, or the next.
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let (status, _) = chat.ask(
            "POST /api/messages?room=limits",
            &["X-Forwarded-For: 10.9.9.9"],
            "hi",
        );
        statuses.push(status);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
}

/// Posts from the loopback address `from`, one per header list in `each`, pipelined on one
/// connection (so that they arrive within microseconds, well inside the paced limit's 200 ms):
/// the statuses.
fn posts_from(chat: &Chat, from: [u8; 4], each: &[&str]) -> Vec<u16> {
    let addr = ([127, 0, 0, 1], chat.port).into();
    let mut c = wire::Client::connect_from(from.into(), addr);
    let requests: String = each
        .iter()
        .enumerate()
        .map(|(i, headers)| {
            format!(
                "POST /api/messages?room=callers HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: 2\r\n\r\nm{}",
                i % 10
            )
        })
        .collect();
    c.send(requests);
    each.iter().map(|_| c.reply().status).collect()
}

#[test]
fn callers_without_a_forwarded_address_are_told_apart_by_their_own() {
    let chat = Chat::start(&[]);
    for from in [[127, 0, 0, 2], [127, 0, 0, 3]] {
        let statuses = posts_from(&chat, from, &[""; 6]);
        assert_eq!(statuses, [201, 201, 201, 201, 201, 429], "from {from:?}");
    }
}

#[test]
fn by_default_a_forwarded_address_names_no_one() {
    let chat = Chat::start(&[]);
    let one = "X-Forwarded-For: 10.0.0.1\r\n";
    let other = "X-Forwarded-For: 10.0.0.2\r\n";
    let statuses = posts_from(
        &chat,
        [127, 0, 0, 2],
        &[one, one, one, one, one, other, other],
    );
    // One caller, whatever it forwards: its allowance is spent after five.
    assert_eq!(statuses, [201, 201, 201, 201, 201, 429, 429]);
}

#[test]
fn a_forwarded_address_counts_only_from_a_trusted_proxy() {
    let chat = Chat::start(&["--proxies", "1", "--trusted-proxies", "127.0.0.2/32"]);
    let forwarded: Vec<String> = (0..7)
        .map(|i| format!("X-Forwarded-For: 10.0.3.{i}\r\n"))
        .collect();
    let each: Vec<&str> = forwarded.iter().map(String::as_str).collect();
    // Not the proxy: one caller, whatever it forwards.
    let direct = posts_from(&chat, [127, 0, 0, 3], &each);
    assert_eq!(direct, [201, 201, 201, 201, 201, 429, 429]);
    // Through the proxy: seven callers.
    let proxied = posts_from(&chat, [127, 0, 0, 2], &each);
    assert_eq!(proxied, [201; 7]);
}

#[test]
fn room_and_member_names_follow_one_rule_on_both_ways_in() {
    let chat = Chat::start(&["--proxies", "1"]);
    for (i, (room, ok)) in [
        ("lobby", true),
        ("%20%20", false),
        ("%00", false),
        ("a%0Ab", false),
        ("x%ff%fe", false),
        ("x%c0%af", false),
        ("", false),
    ]
    .into_iter()
    .enumerate()
    {
        // A caller of its own each: the rate limit counts refused posts too.
        let from = format!("X-Forwarded-For: 10.1.1.{i}");
        let (post, body) = chat.ask(
            &format!("POST /api/messages?room={room}"),
            &[&from],
            "hello",
        );
        let (upgrade, _) = chat.upgrade(&format!("/ws?room={room}&name=n"), &[]);
        let want = if ok { (201, 101) } else { (400, 400) };
        assert_eq!((post, upgrade), want, "room {room:?}: {body}");
    }
    let (upgrade, _) = chat.upgrade("/ws?room=lobby&name=%20", &[]);
    assert_eq!(upgrade, 400, "a blank member name");
}

#[test]
fn pages_of_another_host_may_not_open_the_websocket_unless_allowed() {
    let chat = Chat::start(&[]);
    let own = format!("Origin: http://127.0.0.1:{}", chat.port);
    assert_eq!(chat.upgrade("/ws?room=r&name=n", &[&own]).0, 101);
    assert_eq!(
        chat.upgrade("/ws?room=r&name=n", &[]).0,
        101,
        "no Origin: not a browser"
    );
    assert_eq!(
        chat.upgrade("/ws?room=r&name=n", &["Origin: http://evil.example"])
            .0,
        403
    );
    let open = Chat::start(&["--allow-origin", "http://evil.example"]);
    assert_eq!(
        open.upgrade("/ws?room=r&name=n", &["Origin: http://evil.example"])
            .0,
        101
    );
    assert_eq!(
        open.upgrade("/ws?room=r&name=n", &["Origin: http://other.example"])
            .0,
        403
    );
}

#[test]
fn the_figures_count_rooms_and_name_none() {
    let chat = Chat::start(&[]);
    let (_, _member) = chat.upgrade("/ws?room=secret-room-name&name=n", &[]);
    let begun = std::time::Instant::now();
    let (status, body) = loop {
        let (status, body) = chat.ask("GET /api/stats", &[], "");
        if body.contains("\"rooms\":1") || begun.elapsed() > Duration::from_secs(10) {
            break (status, body);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status, 200);
    assert!(!body.contains("secret-room-name"), "{body}");
    assert!(body.contains("\"rooms\":1"), "{body}");
    // A handful of connections says nothing about the cost of one: no figure.
    assert!(
        body.contains(r#""bytes_per_added_connection":null"#),
        "{body}"
    );
}

#[test]
fn a_room_s_members_are_counted_by_name() {
    let chat = Chat::start(&[]);
    let (_, _one) = chat.upgrade("/ws?room=counted&name=a", &[]);
    let (_, _two) = chat.upgrade("/ws?room=counted&name=b", &[]);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", chat.port)).unwrap();
    std::io::Write::write_all(
        &mut stream,
        b"GET /sse?room=counted HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    )
    .unwrap();
    let mut head = [0u8; 64];
    assert!(std::io::Read::read(&mut stream, &mut head).unwrap() > 0);
    let mut body = String::new();
    for _ in 0..100 {
        let (status, b) = chat.ask("GET /api/rooms?room=counted", &[], "");
        assert_eq!(status, 200);
        body = b;
        if body == r#"{"room":"counted","members":3}"# {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        body, r#"{"room":"counted","members":3}"#,
        "WebSocket and SSE members"
    );
    let (status, body) = chat.ask("GET /api/rooms?room=nobody", &[], "");
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"room":"nobody","members":0}"#)
    );
    assert_eq!(
        chat.ask("GET /api/rooms", &[], "").0,
        400,
        "a room is needed"
    );
    assert_eq!(chat.ask("POST /api/rooms?room=x", &[], "").0, 405);
}
