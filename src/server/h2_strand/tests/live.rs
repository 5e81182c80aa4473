//! Live connections on HTTP/2 streams, over real sockets: event streams and WebSockets (RFC
//! 8441) several to a connection, members of rooms like any other, ending with their streams.

use super::*;
use crate::http::event_stream::Event;
use crate::rooms::Message;
use crate::sse::{Sse, SseHandler};
use crate::ws::{Ws, WsHandler};

/// Event streams that join the room their query names.
struct Feed;

impl SseHandler for Feed {
    type State = String;
    fn accept(&self, req: &Request) -> Result<String, Response> {
        let room = crate::http::param(crate::http::query_of(req.path()), "room");
        match room.is_empty() {
            true => Err(text_response(403, "a room, please")),
            false => Ok(room),
        }
    }
    fn open(&self, sse: &mut Sse<'_>, room: &mut String) {
        sse.join(room);
    }
}

/// WebSockets that echo, and join room `news`.
struct Echo;

impl WsHandler for Echo {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, ws: &mut Ws<'_>, _: &mut ()) {
        ws.join("news");
    }
    fn message(&self, ws: &mut Ws<'_>, _: &mut (), msg: Message) {
        if let Message::Text(text) = msg {
            ws.send_text(&format!("echo {text}"));
        }
    }
}

/// Event streams that keep no state of their own, in room `news`.
struct Quiet;

impl SseHandler for Quiet {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut Sse<'_>, _: &mut ()) {
        sse.join("news");
    }
}

fn live_server() -> (ServerHandle, crate::ws::Rooms) {
    let server = bind()
        .sse("/events", Feed)
        .sse("/quiet", Quiet)
        .websocket("/ws", Echo);
    let rooms = server.rooms();
    (serve(server, echo), rooms)
}

impl Client {
    /// HEADERS opening a stream that stays open (no END_STREAM): an extended CONNECT for a
    /// WebSocket at `path`.
    fn connect_websocket(&mut self, stream: u32, path: &str) {
        let fields = [
            (":method", "CONNECT"),
            (":protocol", "websocket"),
            (":scheme", "http"),
            (":authority", "example.test"),
            (":path", path),
            ("sec-websocket-version", "13"),
        ];
        self.open_stream(stream, &fields);
    }

    /// A WebSocket frame from the client (masked) as DATA on `stream`; `end` ends the stream.
    fn ws_frame(&mut self, stream: u32, first: u8, payload: &[u8], end: bool) {
        let mut ws = Vec::new();
        crate::ws::write_frame(&mut ws, first, payload, Some([1, 2, 3, 4]));
        let mut out = Vec::new();
        let f = if end { flags::END_STREAM } else { 0 };
        frame::write_head(&mut out, ws.len(), Kind::Data, f, stream);
        out.extend_from_slice(&ws);
        self.send(&out);
    }

    /// Reads frames until each of `streams` has DATA containing `needle`; what each got (the
    /// head's status if it came meanwhile, the body so far).
    fn until_each(&mut self, streams: &[u32], needle: &str) -> Vec<Answer> {
        let mut got: Vec<(u32, Answer)> = streams.iter().map(|&s| (s, Answer::default())).collect();
        let has = |a: &Answer| String::from_utf8_lossy(&a.body).contains(needle);
        while !got.iter().all(|(_, a)| has(a)) {
            let Some((head, payload)) = self.frame() else {
                panic!("connection ended waiting for {needle:?}: {got:?}");
            };
            let Some((_, answer)) = got.iter_mut().find(|(s, _)| *s == head.stream) else {
                continue;
            };
            match head.kind {
                Kind::Headers => {
                    let mut status = 0;
                    self.decoder
                        .decode(&payload, &mut self.scratch, |n, v| {
                            if n == b":status" {
                                status = String::from_utf8_lossy(v).parse().unwrap();
                            }
                        })
                        .expect("HPACK");
                    answer.status = status;
                }
                Kind::Data => answer.body.extend_from_slice(&payload),
                Kind::RstStream => panic!("stream {} reset: {payload:?}", head.stream),
                _ => {}
            }
            assert!(
                !head.has(flags::END_STREAM),
                "stream {} ended waiting for {needle:?}",
                head.stream
            );
        }
        got.into_iter().map(|(_, a)| a).collect()
    }
}

/// Waits until `room` has `n` members.
fn members(rooms: &crate::ws::Rooms, room: &str, n: usize) {
    let start = Instant::now();
    while rooms.members(room) != n {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{room} has {} members, not {n}",
            rooms.members(room)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn ten_event_streams_and_a_websocket_share_one_connection_and_each_gets_the_room() {
    let (server, rooms) = live_server();
    let mut c = Client::new(server.local_addr().port());
    let streams: Vec<u32> = (0..10).map(|i| 1 + 2 * i).collect();
    for &s in &streams {
        c.get(s, "/events?room=news");
    }
    c.connect_websocket(21, "/ws");
    // An ordinary request on the same connection meanwhile.
    c.get(23, "/plain");
    members(&rooms, "news", 11);
    // (A worker publishes its figures at the end of its turn: the members may be counted a
    // moment before the connection is.)
    let start = Instant::now();
    while server.stats().open_connections != 1 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            server.stats()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    rooms.publish_event("news", &Event::new("first").id("1"));
    let mut all = streams.clone();
    all.push(21);
    let got = c.until_each(&all, "first");
    for a in &got {
        assert_eq!(a.status, 200);
    }
    for a in &got[..10] {
        assert!(String::from_utf8_lossy(&a.body).contains("id: 1\ndata: first\n\n"));
    }
    // The WebSocket got the event's data as a text message.
    assert_eq!(&got[10].body[..], b"\x81\x05first");
    // A stream reset by the client leaves the room; the others stay.
    let mut out = Vec::new();
    frame::write_rst_stream(&mut out, 1, ErrorCode::Cancel);
    c.send(&out);
    members(&rooms, "news", 10);
    rooms.publish("news", &Message::Text("second".into()));
    c.until_each(&all[1..], "second");
    server.shutdown().unwrap();
}

#[test]
fn a_websocket_by_extended_connect_echoes_on_its_stream_and_closes_with_it() {
    let (server, rooms) = live_server();
    let mut c = Client::new(server.local_addr().port());
    // The server's SETTINGS enable extended CONNECT (RFC 8441 §3).
    let (head, payload) = c.frame().expect("settings");
    assert_eq!(head.kind, Kind::Settings);
    let enabled = payload
        .chunks(6)
        .any(|s| s[..2] == [0, 8] && s[2..] == [0, 0, 0, 1]);
    assert!(enabled, "SETTINGS_ENABLE_CONNECT_PROTOCOL in {payload:?}");
    c.connect_websocket(1, "/ws");
    c.ws_frame(1, 0x81, b"hello", false);
    let got = c.until_each(&[1], "echo hello");
    assert_eq!(got[0].status, 200);
    assert_eq!(&got[0].body[..], b"\x81\x0aecho hello");
    // Our close, answered with the server's; then both ends of the stream end.
    c.ws_frame(1, 0x88, &1000u16.to_be_bytes(), false);
    let mut body = Vec::new();
    loop {
        let (head, payload) = c.frame().expect("close");
        if head.stream != 1 {
            continue;
        }
        assert_eq!(head.kind, Kind::Data, "{payload:?}");
        body.extend_from_slice(&payload);
        if head.has(flags::END_STREAM) {
            break;
        }
    }
    assert_eq!(&body[..], b"\x88\x02\x03\xe8");
    c.ws_frame(1, 0x88, &[], true);
    members(&rooms, "news", 0);
    // The connection goes on.
    c.get(3, "/after");
    assert_eq!(c.answer(3).status, 200);
    server.shutdown().unwrap();
}

#[test]
fn an_event_stream_refused_by_its_application_gets_the_refusal_on_its_stream() {
    let (server, _rooms) = live_server();
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/events");
    let a = c.answer(1);
    assert_eq!((a.status, &a.body[..]), (403, &b"a room, please"[..]));
    // HTTP/1.1's upgrade asked over HTTP/2 is told to use HTTP/1.1.
    c.request(
        3,
        "GET",
        "/ws",
        &[("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")],
        None,
    );
    assert_eq!(c.answer(3).reset, Some(0xd));
    server.shutdown().unwrap();
}

#[test]
fn a_stop_ends_every_event_stream_and_websocket_of_a_connection() {
    let (server, rooms) = live_server();
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/events?room=a");
    c.get(3, "/events?room=b");
    c.connect_websocket(5, "/ws");
    members(&rooms, "news", 1);
    members(&rooms, "b", 1);
    let stopping = std::thread::spawn(move || server.shutdown());
    // The event streams end; the WebSocket is sent a close (1001), answered here.
    let mut ended = Vec::new();
    while ended.len() < 3 {
        let Some((head, payload)) = c.frame() else {
            panic!("connection ended with {ended:?} ended");
        };
        if head.stream == 5 && head.kind == Kind::Data && payload.starts_with(&[0x88]) {
            assert_eq!(&payload[2..4], &1001u16.to_be_bytes());
            c.ws_frame(5, 0x88, &1001u16.to_be_bytes(), true);
        }
        let ends = head.has(flags::END_STREAM) && matches!(head.kind, Kind::Data | Kind::Headers);
        if ends || head.kind == Kind::RstStream {
            ended.push(head.stream);
        }
    }
    ended.sort();
    assert_eq!(ended, [1, 3, 5]);
    assert!(c.goaway.is_some());
    stopping.join().unwrap().unwrap();
}

#[test]
fn an_idle_event_stream_on_http2_costs_its_connection_under_150_bytes() {
    // (Beyond the application's own state, which is its handler's to choose: none here.)
    let (server, rooms) = live_server();
    let mut c = Client::new(server.local_addr().port());
    // What the server holds once the streams are idle: parked, and the same twice in a row
    // (their joins came back).
    let held = |server: &ServerHandle, n: usize| {
        members(&rooms, "news", n);
        let start = Instant::now();
        let mut last = usize::MAX;
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let stats = server.stats();
            let settled = stats.parked == 1 && stats.held_bytes == last;
            if settled || start.elapsed() > Duration::from_secs(5) {
                return stats.held_bytes;
            }
            last = stats.held_bytes;
        }
    };
    c.get(1, "/quiet");
    assert_eq!(
        c.until_each(&[1], "").pop().unwrap().status,
        0,
        "no DATA yet"
    );
    let one = held(&server, 1);
    let streams: Vec<u32> = (1..=100).map(|i| 1 + 2 * i).collect();
    for &s in &streams {
        c.get(s, "/quiet");
    }
    members(&rooms, "news", 101);
    let many = held(&server, 101);
    let per_stream = (many - one) as f64 / 100.0;
    eprintln!(
        "an idle event stream on HTTP/2: {per_stream} bytes (work {}, codec stream {})",
        std::mem::size_of::<(u32, super::super::Work)>(),
        crate::h2::conn::stream_size()
    );
    assert!(
        per_stream <= 150.0,
        "{per_stream} bytes per idle event stream"
    );
    server.shutdown().unwrap();
}

#[test]
fn heartbeats_and_the_liveness_sweep_reach_the_live_streams_of_an_http2_connection() {
    let server = bind()
        .sse("/events", Feed)
        .websocket("/ws", Echo)
        .heartbeat(Duration::from_millis(150))
        .ping_interval(Some(Duration::from_millis(600)));
    let rooms = server.rooms();
    let server = serve(server, echo);
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/events?room=a");
    c.connect_websocket(3, "/ws");
    c.connect_websocket(5, "/ws");
    members(&rooms, "news", 2);
    // From now on the client reads and sends nothing: the event stream gets heartbeats; the
    // connection is silent, so both WebSockets are pinged at the same sweep (one sweep for the
    // connection, not one per stream), and, the pings unanswered, both end.
    let start = Instant::now();
    let (mut beats, mut pinged, mut reset) = (0, Vec::new(), Vec::new());
    while reset.len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{beats} {pinged:?} {reset:?}"
        );
        let (head, payload) = c.frame().expect("a frame");
        match (head.stream, head.kind) {
            (1, Kind::Data) if payload.as_slice() == b":\n\n" => beats += 1,
            (3 | 5, Kind::Data) if payload.first() == Some(&0x89) => pinged.push(head.stream),
            (3 | 5, Kind::RstStream) => reset.push(head.stream),
            _ => {}
        }
    }
    assert!(beats >= 2, "{beats} heartbeats");
    pinged.sort();
    reset.sort();
    assert_eq!((pinged, reset), (vec![3, 5], vec![3, 5]));
    // The event stream goes on.
    members(&rooms, "news", 0);
    assert_eq!(rooms.members("a"), 1);
    server.shutdown().unwrap();
}

/// Opens and closes of live streams as their application sees them.
#[derive(Clone, Default)]
struct Tally {
    opens: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    closes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Tally {
    fn open(&self) {
        self.opens.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    /// A close, which must follow an open.
    fn close(&self) {
        let closes = 1 + self
            .closes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let opens = self.opens.load(std::sync::atomic::Ordering::SeqCst);
        assert!(
            closes <= opens,
            "close without open: {closes} closes, {opens} opens"
        );
    }
    fn get(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::SeqCst;
        (self.opens.load(SeqCst), self.closes.load(SeqCst))
    }
}

impl SseHandler for Tally {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut Sse<'_>, _: &mut ()) {
        self.open();
        sse.join("news");
    }
    fn close(&self, _id: crate::ws::ConnId, _: ()) {
        self.close();
    }
}

impl WsHandler for Tally {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, ws: &mut Ws<'_>, _: &mut ()) {
        self.open();
        ws.join("news");
    }
    fn message(&self, _ws: &mut Ws<'_>, _: &mut (), _msg: Message) {}
    fn close(&self, _id: crate::ws::ConnId, _: (), _code: Option<u16>) {
        self.close();
    }
}

/// What a client does to the live streams of its connection.
#[derive(Clone, Debug)]
enum LiveStep {
    OpenEvents,
    OpenWebSocket,
    /// Resets the n-th stream opened (modulo how many).
    Reset(usize),
    /// Waits until the server has read everything sent (a PING answered).
    Sync,
}

fn live_step() -> impl proptest::strategy::Strategy<Value = LiveStep> {
    use proptest::prelude::*;
    prop_oneof![
        Just(LiveStep::OpenEvents),
        Just(LiveStep::OpenWebSocket),
        (0..8usize).prop_map(LiveStep::Reset),
        Just(LiveStep::Sync),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Whatever the order of opens, resets and the connection's end — streams reset or cut
    /// before their start ran among them — the gauges come back to zero (never below) and
    /// the application's `close` runs once for each `open`, never without it.
    #[test]
    fn live_stream_gauges_and_closes_follow_opens_whatever_the_order(
        steps in proptest::collection::vec(live_step(), 1..24),
        goaway in proptest::bool::ANY,
    ) {
        let tally = Tally::default();
        let server = serve(
            bind().sse("/events", tally.clone()).websocket("/ws", tally.clone()),
            echo,
        );
        let mut c = Client::new(server.local_addr().port());
        let mut opened = Vec::new();
        let mut next = 1;
        for step in &steps {
            match step {
                LiveStep::OpenEvents => {
                    c.request(next, "GET", "/events", &[], None);
                    opened.push(next);
                    next += 2;
                }
                LiveStep::OpenWebSocket => {
                    c.connect_websocket(next, "/ws");
                    opened.push(next);
                    next += 2;
                }
                LiveStep::Reset(n) if !opened.is_empty() => {
                    let mut out = Vec::new();
                    frame::write_rst_stream(&mut out, opened[n % opened.len()], ErrorCode::Cancel);
                    c.send(&out);
                }
                LiveStep::Reset(_) => {}
                LiveStep::Sync => c.round_trip(),
            }
        }
        if goaway {
            let mut out = Vec::new();
            frame::write_goaway(&mut out, 0, ErrorCode::NoError);
            c.send(&out);
        }
        drop(c);
        let start = Instant::now();
        while server.stats().open_connections != 0 || tally.get().0 != tally.get().1 {
            proptest::prop_assert!(
                start.elapsed() < Duration::from_secs(10),
                "open connections {}, opens and closes {:?}",
                server.stats().open_connections,
                tally.get()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let stats = server.stats();
        proptest::prop_assert_eq!((stats.websockets, stats.event_streams), (0, 0));
        server.shutdown().unwrap();
    }
}

/// A download that takes the connection's window does not starve the page's event streams:
/// when the window opens again, an event waiting on it goes before the download.
#[test]
fn an_event_waiting_on_the_window_goes_before_a_download_when_it_opens() {
    let server = bind()
        .sse("/events", Feed)
        .drain_timeout(Duration::from_millis(100));
    let rooms = server.rooms();
    let server = serve(server, |req: Request| match req.path() {
        "/download" => text_response(200, vec![b'd'; 1 << 20]),
        _ => text_response(200, "small"),
    });
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/events?room=news");
    members(&rooms, "news", 1);
    // The download takes the whole connection window (65 535 bytes).
    c.get(3, "/download");
    let mut downloaded = 0;
    while downloaded < 65_535 {
        let (head, payload) = c.frame().expect("the download");
        if head.kind == Kind::Data && head.stream == 3 {
            downloaded += payload.len();
        }
    }
    // An event waits on the window: seen as what the connection holds changing, once the
    // turns that wrote the download have ended and published their figures (two round trips
    // later, the second answered in a turn after the first's).
    c.round_trip();
    c.round_trip();
    let held = |server: &ServerHandle| server.stats().held_bytes;
    let quiet = held(&server);
    rooms.publish_event("news", &Event::new("first"));
    let start = Instant::now();
    while held(&server) == quiet {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the event was not queued"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // The download's stream may take a megabyte more, but the connection opens by 100 bytes:
    // they are the event's.
    let mut out = Vec::new();
    frame::write_window_update(&mut out, 3, 1 << 20);
    frame::write_window_update(&mut out, 0, 100);
    c.send(&out);
    let (head, payload) = loop {
        let (head, payload) = c.frame().expect("a frame");
        if head.kind == Kind::Data {
            break (head, payload);
        }
    };
    assert_eq!(
        head.stream,
        1,
        "the event first, not {} bytes of download",
        payload.len()
    );
    assert!(String::from_utf8_lossy(&payload).contains("data: first"));
    server.shutdown().unwrap();
}

/// A heartbeat that a shut window holds back starts the stream's write timeout, which then
/// ends it — though the connection itself waited on nothing before.
#[test]
fn a_heartbeat_held_back_by_a_shut_window_times_the_stream_out() {
    let server = bind()
        .sse("/events", Feed)
        .heartbeat(Duration::from_millis(50))
        .write_timeout(Duration::from_millis(300));
    let rooms = server.rooms();
    let server = serve(server, echo);
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/events?room=a");
    members(&rooms, "a", 1);
    // Every stream's window shut from now on (the connection acknowledges it).
    let mut out = Vec::new();
    frame::write_settings(&mut out, &[Setting::InitialWindowSize(0)]);
    c.send(&out);
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the stream lived on"
        );
        let (head, _) = c.frame().expect("a frame");
        if head.stream == 1 && head.kind == Kind::RstStream {
            break;
        }
    }
    members(&rooms, "a", 0);
    server.shutdown().unwrap();
}

#[test]
fn an_event_stream_and_a_websocket_over_http2_are_logged_with_the_status_and_bytes_sent() {
    use crate::http::AccessKind;
    let (server, heard) = logging(bind());
    let server = server.sse("/events", Feed).websocket("/ws", Echo);
    let rooms = server.rooms();
    let server = serve(server, echo);
    let mut c = Client::new(server.local_addr().port());
    c.get(1, "/events?room=news");
    c.connect_websocket(3, "/ws");
    members(&rooms, "news", 2);
    rooms.publish_event("news", &Event::new("hello"));
    let got = c.until_each(&[1, 3], "hello");
    assert_eq!((got[0].status, got[1].status), (200, 200));
    // Both end: the client resets them; each is logged as it ends.
    let mut out = Vec::new();
    frame::write_rst_stream(&mut out, 1, ErrorCode::Cancel);
    frame::write_rst_stream(&mut out, 3, ErrorCode::Cancel);
    c.send(&out);
    members(&rooms, "news", 0);
    let heard = records(&heard, 2);
    assert_eq!(
        kinds(&heard),
        [
            ("/events?room=news", 200, AccessKind::EventStream),
            ("/ws", 200, AccessKind::WebSocket),
        ]
    );
    // A session's bytes are its opening head's (see `Access::bytes`).
    assert!(heard.iter().all(|r| r.bytes > 0), "{heard:?}");
    let http2 = (crate::http::Protocol::Http2, false);
    assert!(
        heard.iter().all(|r| (r.protocol, r.tls) == http2),
        "{heard:?}"
    );
    server.shutdown().unwrap();
}

/// Data segments the kernel received on `sock` so far (`tcpi_data_segs_in` of Linux's
/// `TCP_INFO`, at byte 152 of the structure).
#[cfg(target_os = "linux")]
fn data_segments_in(sock: &std::net::TcpStream) -> u32 {
    use std::os::fd::AsRawFd;
    let mut info = [0u8; 232];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`, a live local of that size.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert!(r == 0 && len >= 156, "TCP_INFO: {r}, {len} bytes");
    u32::from_ne_bytes(info[152..156].try_into().unwrap())
}

/// A publish reaching a hundred event streams of one connection is written once: the frames
/// of every stream gathered in the connection's output, one write (one segment on loopback,
/// where a write per stream made a hundred).
#[cfg(target_os = "linux")]
#[test]
fn a_publish_to_a_hundred_streams_of_one_connection_is_one_write() {
    let server = bind().sse("/events", Feed);
    let rooms = server.rooms();
    let server = serve(server, echo);
    let c = Client::new(server.local_addr().port());
    publish_to_a_hundred_streams(c, &rooms);
    server.shutdown().unwrap();
}

/// The same over TLS (h2 by ALPN): the records of every stream's frames, one write.
#[cfg(all(target_os = "linux", feature = "tls"))]
#[test]
fn a_publish_to_a_hundred_streams_of_one_tls_connection_is_one_write() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let tls = crate::tls::ServerTls::from_pem(
        cert.cert.pem().as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let server = bind().tls(tls).sse("/events", Feed);
    let rooms = server.rooms();
    let server = serve(server, echo);
    let c = Client::tls(server.local_addr().port(), cert.cert.der());
    publish_to_a_hundred_streams(c, &rooms);
    server.shutdown().unwrap();
}

/// A hundred event streams of `c` in room `news`, one publish: what it took to arrive.
#[cfg(target_os = "linux")]
fn publish_to_a_hundred_streams(mut c: Client, rooms: &crate::ws::Rooms) {
    let streams: Vec<u32> = (0..100).map(|i| 1 + 2 * i).collect();
    for &s in &streams {
        c.get(s, "/events?room=news");
    }
    members(rooms, "news", 100);
    // Every head read, and nothing else in flight.
    c.until_each(&streams, "");
    c.round_trip();
    let before = data_segments_in(c.sock.tcp());
    rooms.publish_event("news", &Event::new("to all"));
    c.until_each(&streams, "data: to all");
    let segments = data_segments_in(c.sock.tcp()) - before;
    assert!(segments <= 2, "{segments} segments for one publish");
}
