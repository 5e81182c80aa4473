//! Drives a whole connection of a real server — request reading, dispatch and the reactor's
//! HTTP strand — over 127.0.0.1 with bytes split at chosen points, and checks what came back:
//! the connection ends in time (no turn that makes no progress), no strand panicked, and every
//! byte the server wrote is part of a well-formed reply. Shared by the property test
//! (`tests/connection_properties.rs`) and the fuzz target (`fuzz/fuzz_targets/connection.rs`).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::http::{
    ReplyFraming, Request, Response, Server, ServerHandle, parse_reply_head, text_response,
};

/// How long a connection may take to end after the client's last byte and end of stream.
pub const END_WITHIN: Duration = Duration::from_secs(5);

/// A one-worker server with small limits, so that short inputs reach them.
pub struct Target {
    pub server: ServerHandle,
}

/// Every reply body starts with this, so a reply to HEAD (a head alone) is told from one
/// with a body.
const BODY_MARK: &str = "body:";

pub fn describe(req: Request) -> Response {
    let mut text = format!("{BODY_MARK}{} {}\n", req.method(), req.path()).into_bytes();
    text.extend_from_slice(req.body());
    text_response(200, text)
}

/// One worker and small limits, so that short inputs reach them.
pub fn small_server() -> Server {
    Server::bind("127.0.0.1:0")
        .expect("bind")
        .workers(1)
        .max_head_bytes(512)
        .max_headers(8)
        .max_body(256)
}

/// A fuzz input as the connection targets read it: the first byte (its low 3 bits: how many
/// cuts, its high bits for the target), then that many bytes placing the cuts (scaled to the
/// rest), then the input itself; the cuts sorted.
pub fn split_input(data: &[u8]) -> Option<(u8, Vec<usize>, &[u8])> {
    let (&first, rest) = data.split_first()?;
    let count = usize::from(first % 8).min(rest.len());
    let (cuts, input) = rest.split_at(count);
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&c| usize::from(c) * input.len() / 256)
        .collect();
    cuts.sort_unstable();
    Some((first, cuts, input))
}

/// A live route of the HTTP/2 target, for event streams and WebSockets alike: each joins
/// room `r`; a WebSocket echoes what it is sent and publishes it to the room.
pub struct Live;

impl web::sse::SseHandler for Live {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, sse: &mut web::sse::Sse<'_>, _: &mut ()) {
        sse.join("r");
    }
}

impl web::ws::WsHandler for Live {
    type State = ();
    fn accept(&self, _req: &Request) -> Result<(), Response> {
        Ok(())
    }
    fn open(&self, ws: &mut web::ws::Ws<'_>, _: &mut ()) {
        ws.join("r");
    }
    fn message(&self, ws: &mut web::ws::Ws<'_>, _: &mut (), msg: web::ws::Message) {
        ws.publish("r", &msg);
        ws.send(&msg);
    }
}

impl Target {
    pub fn start() -> Target {
        let server = small_server().spawn(describe).expect("spawn");
        Target { server }
    }

    /// The HTTP/2 target: the same server with an event-stream route at `/e` and a WebSocket
    /// route at `/w` (RFC 8441 over HTTP/2), so that streams become live connections.
    pub fn start_h2() -> Target {
        let server = small_server()
            .sse("/e", Live)
            .websocket("/w", Live)
            .spawn(describe)
            .expect("spawn");
        Target { server }
    }

    /// Sends `pieces` one write each (with a pause between them, so the server reads them
    /// apart), ends the stream, and reads to the end. Fails when the connection does not end
    /// within [`END_WITHIN`], when a strand panicked, or when what came back is not a run of
    /// whole replies.
    pub fn drive(&self, pieces: &[&[u8]]) -> Result<usize, String> {
        let panics = self.server.stats().panics;
        let mut c = TcpStream::connect(self.server.local_addr()).map_err(|e| e.to_string())?;
        c.set_nodelay(true).map_err(|e| e.to_string())?;
        c.set_write_timeout(Some(END_WITHIN))
            .map_err(|e| e.to_string())?;
        send(&mut c, pieces);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let out = read_to_end(&mut c)?;
        let replies = check_answers(&pieces.concat(), &out)?;
        let now = self.server.stats().panics;
        if now != panics {
            return Err(format!("{} strand call(s) panicked", now - panics));
        }
        Ok(replies)
    }

    /// Sends `first`, waits until the server has written `heads` HEADERS frames (its answers to
    /// it), then sends `rest`, ends the stream and reads to the end: what [`Target::drive`]
    /// checks, with the server's reading of the two parts apart made certain rather than
    /// waited for. How many replies in all.
    pub fn drive_after_heads(
        &self,
        first: &[u8],
        heads: usize,
        rest: &[u8],
    ) -> Result<usize, String> {
        let panics = self.server.stats().panics;
        let mut c = TcpStream::connect(self.server.local_addr()).map_err(|e| e.to_string())?;
        c.set_nodelay(true).map_err(|e| e.to_string())?;
        c.write_all(first).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        c.set_read_timeout(Some(END_WITHIN))
            .map_err(|e| e.to_string())?;
        while headers_in(&out) < heads {
            match c.read(&mut chunk) {
                Ok(0) => return Err(format!("the connection ended before {heads} heads")),
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("waiting for {heads} heads: {e}")),
            }
        }
        c.write_all(rest).map_err(|e| e.to_string())?;
        let _ = c.shutdown(std::net::Shutdown::Write);
        out.extend_from_slice(&read_to_end(&mut c)?);
        let replies = check_answers(&[first, rest].concat(), &out)?;
        let now = self.server.stats().panics;
        if now != panics {
            return Err(format!("{} strand call(s) panicked", now - panics));
        }
        Ok(replies)
    }
}

/// HEADERS frames among the whole frames at the start of `out`.
fn headers_in(out: &[u8]) -> usize {
    let (mut at, mut heads) = (0, 0);
    while let Some(head) = out.get(at..at + 9) {
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        if out.len() < at + 9 + len {
            break;
        }
        heads += usize::from(head[3] == 0x1);
        at += 9 + len;
    }
    heads
}

/// Checks what the server wrote (`out`) as what answers `sent`: HTTP/2 frames when `sent`
/// starts with the preface (the server speaks HTTP/2 then, over TLS too), else HTTP/1.1
/// replies; how many replies.
pub fn check_answers(sent: &[u8], out: &[u8]) -> Result<usize, String> {
    match sent.starts_with(PREFACE) {
        true => check_frames(out),
        false => check_replies(out),
    }
}

/// HTTP/2's connection preface: a connection that starts with it is answered in frames.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Checks that `out` is what an HTTP/2 server writes: its SETTINGS first, then a run of whole
/// frames (each its 9-byte head and that many bytes), none over the 16 KiB a client accepts by
/// default; answers how many replies (HEADERS frames) it holds.
pub fn check_frames(out: &[u8]) -> Result<usize, String> {
    if out.is_empty() {
        return Ok(0);
    }
    let mut at = 0;
    let mut replies = 0;
    while at < out.len() {
        let head = out
            .get(at..at + 9)
            .ok_or_else(|| format!("a frame head cut short at {at} of {}", out.len()))?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let kind = head[3];
        if at == 0 && (kind != 0x4 || head[4] & 1 != 0) {
            return Err(format!(
                "the first frame is not the server's SETTINGS: {head:?}"
            ));
        }
        if len > 16_384 {
            return Err(format!("a frame of {len} bytes (type {kind})"));
        }
        if out.len() < at + 9 + len {
            return Err(format!("a frame cut short at {at} of {}", out.len()));
        }
        replies += usize::from(kind == 0x1);
        at += 9 + len;
    }
    Ok(replies)
}

/// Writes `pieces` one write each, with a pause between them so the server reads them apart;
/// stops early when the server has closed (after a refusal: what it wrote is still read).
pub fn send(c: &mut TcpStream, pieces: &[&[u8]]) {
    for piece in pieces {
        if c.write_all(piece).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// `input` cut at `cuts` (offsets, sorted; empty pieces left out).
pub fn pieces<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut pieces = Vec::new();
    let mut at = 0;
    for &cut in cuts.iter().chain([&input.len()]) {
        let cut = cut.min(input.len());
        if cut > at {
            pieces.push(&input[at..cut]);
            at = cut;
        }
    }
    pieces
}

/// Reads until the server closes, for at most [`END_WITHIN`]; a reset after the replies counts
/// as the end.
pub fn read_to_end(c: &mut TcpStream) -> Result<Vec<u8>, String> {
    let end = Instant::now() + END_WITHIN;
    let mut out = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "the connection did not end within {END_WITHIN:?}; got {:?}",
                String::from_utf8_lossy(&out)
            ));
        }
        c.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
        match c.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                return Ok(out);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Checks that `out` is a run of whole replies (a 100 Continue, or a reply with a
/// Content-Length and that many bytes of body — or none, after a HEAD); answers how many.
pub fn check_replies(out: &[u8]) -> Result<usize, String> {
    if out.is_empty() {
        return Ok(0);
    }
    let shown = || String::from_utf8_lossy(out).into_owned();
    let head = match parse_reply_head(out) {
        Ok(Some(head)) => head,
        Ok(None) => return Err(format!("a reply cut short: {:?}", shown())),
        Err(e) => {
            return Err(format!(
                "a reply that does not parse ({e:?}): {:?}",
                shown()
            ));
        }
    };
    let rest = &out[head.len..];
    let bodies = match head.framing {
        ReplyFraming::None if head.status == 100 || head.status == 204 => [0, 0],
        // A reply to HEAD announces a length and sends no body: the bytes after it tell.
        ReplyFraming::Length(n) => [usize::try_from(n).map_err(|e| e.to_string())?, 0],
        other => return Err(format!("a reply framed {other:?}: {:?}", shown())),
    };
    let mut last = Err(format!("a body cut short: {:?}", shown()));
    for body in bodies {
        if rest.len() >= body {
            last = check_replies(&rest[body..]).map(|n| n + 1);
            if last.is_ok() {
                break;
            }
        }
    }
    last
}
