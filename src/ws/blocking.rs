//! The specification's blocking WebSocket operations over a `std::net::TcpStream`.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

use super::close::CloseCode;
use super::frame::{FIXED_MASK, FrameHead, Opcode, apply_mask, write_frame};
use super::handshake::{upgrade_reply, ws_wanted};
use crate::http::{MAX_HEAD_BYTES, parse_reply_head};

/// Largest frame payload [`ws_take`] accepts: the specification's 64 KiB. A frame announcing
/// more is an `InvalidData` error (nothing is allocated for it); close such a connection with
/// 1009.
pub const MAX_FRAME: usize = 64 * 1024;

/// Answers a client's upgrade request on `conn`, per RFC 6455 §4.2: writes the 101 reply and
/// returns `true` when `request_raw` is a valid upgrade. For a request that is not an upgrade
/// at all (no `Sec-WebSocket-Key`) it writes nothing and returns `false`; for a broken upgrade
/// it writes the HTTP refusal (400, or 426 with `Upgrade: websocket` and
/// `Sec-WebSocket-Version: 13`) and returns
/// `false`. Either way the caller then closes the connection.
///
/// ```no_run
/// let listener = std::net::TcpListener::bind("127.0.0.1:9001")?;
/// let (mut conn, _) = listener.accept()?;
/// let raw = web::ws::fill(&mut conn, Vec::new(), 1)?;
/// if web::ws::ws_accept(&mut conn, &raw)? {
///     let (payload, _rest) = web::ws::ws_take(&mut conn, Vec::new())?;
///     web::ws::ws_write_bin(&mut conn, &payload)?;
///     web::ws::ws_close(conn)?;
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ws_accept(conn: &mut TcpStream, request_raw: &[u8]) -> io::Result<bool> {
    if !ws_wanted(request_raw) {
        return Ok(false);
    }
    match upgrade_reply(request_raw) {
        Ok(reply) => conn.write_all(&reply).map(|()| true),
        Err(refusal) => conn.write_all(&refusal).map(|()| false),
    }
}

/// Reads until at least `want` bytes are in `buf` or the peer stops talking; returns the
/// buffer (empty when the peer is gone and nothing was buffered). A failing connection is an
/// error.
///
/// ```no_run
/// let mut conn = std::net::TcpStream::connect("127.0.0.1:9001")?;
/// let first = web::ws::fill(&mut conn, Vec::new(), 1)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn fill(conn: &mut TcpStream, mut buf: Vec<u8>, want: usize) -> io::Result<Vec<u8>> {
    let mut chunk = [0u8; 16 * 1024];
    while buf.len() < want {
        match conn.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
                ) =>
            {
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(buf)
}

/// Reads one frame of any opcode and returns `(payload, leftover)`: its payload (unmasked) and
/// the bytes received after it, to pass back as `acc` on the next call. Handles a frame split
/// across reads and several frames in one read. `(empty, rest)` means the peer stopped talking
/// (as does an empty frame: a caller that must tell them apart uses
/// [`Decoder`](crate::ws::Decoder)).
///
/// Frames from either side are read: masked ones (from a client) are unmasked. On the client
/// side the server's `101` reply ahead of the first frame is skipped. A frame with a payload
/// over [`MAX_FRAME`] or a malformed head is an `InvalidData` error.
///
/// ```
/// use std::io::Write;
/// use web::ws::{client_frame, ws_take};
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let mut client = std::net::TcpStream::connect(listener.local_addr()?)?;
/// let (mut server, _) = listener.accept()?;
/// // Two frames in one write: the second comes back as leftover.
/// client.write_all(&[client_frame("one"), client_frame("two")].concat())?;
/// let (first, rest) = ws_take(&mut server, Vec::new())?;
/// let (second, _) = ws_take(&mut server, rest)?;
/// assert_eq!((first.as_slice(), second.as_slice()), (&b"one"[..], &b"two"[..]));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ws_take(conn: &mut TcpStream, acc: Vec<u8>) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = skip_upgrade_reply(conn, acc)?;
    loop {
        match take_frame(&buf)? {
            Some((head, end)) => {
                let mut payload = buf[head.head_len..end].to_vec();
                if let Some(key) = head.mask {
                    apply_mask(&mut payload, key, 0);
                }
                return Ok((payload, buf.split_off(end)));
            }
            None => {
                let had = buf.len();
                buf = fill(conn, buf, had + 1)?;
                if buf.len() == had {
                    return Ok((Vec::new(), buf)); // the peer stopped talking
                }
            }
        }
    }
}

/// The head of the frame at the start of `buf` and where the frame ends, once all of it is in.
fn take_frame(buf: &[u8]) -> io::Result<Option<(FrameHead, usize)>> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
    let Some(&b1) = buf.get(1) else {
        return Ok(None);
    };
    // Either side's frames: parse as the role the mask bit says.
    let role = if b1 & 0x80 != 0 {
        super::frame::Role::Server
    } else {
        super::frame::Role::Client
    };
    let Some(head) = super::frame::parse_frame_head(buf, role)
        // The WsError is the io::Error's source (`get_ref`): which rule, which close code.
        .map_err(io::Error::from)?
    else {
        return Ok(None);
    };
    if head.len > MAX_FRAME as u64 {
        return Err(invalid("frame larger than 64 KiB (close code 1009)"));
    }
    let end = head.head_len + head.len as usize;
    Ok((buf.len() >= end).then_some((head, end)))
}

/// Drops an HTTP `101` reply at the start of what a client reads. The head is searched for its
/// end once (each read looks only at the bytes it added) and may be at most
/// [`MAX_HEAD_BYTES`](crate::http::MAX_HEAD_BYTES) long; a reply that is not a `101` is an
/// `InvalidData` error.
fn skip_upgrade_reply(conn: &mut TcpStream, mut buf: Vec<u8>) -> io::Result<Vec<u8>> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let mut searched: usize = 0;
    loop {
        if !b"HTTP/".starts_with(&buf[..buf.len().min(5)]) {
            return Ok(buf);
        }
        let from = searched.saturating_sub(3);
        let view = &buf[..buf.len().min(MAX_HEAD_BYTES)];
        if let Some(at) = view[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            let end = from + at + 4;
            return match parse_reply_head(&buf[..end]) {
                Ok(Some(head)) if head.status == 101 => Ok(buf.split_off(end)),
                Ok(Some(head)) => Err(invalid(format!(
                    "the server refused the upgrade with status {}",
                    head.status
                ))),
                Ok(None) | Err(_) => Err(invalid("a malformed upgrade reply".to_owned())),
            };
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(invalid(format!(
                "an upgrade reply head longer than {MAX_HEAD_BYTES} bytes"
            )));
        }
        searched = buf.len();
        buf = fill(conn, buf, searched + 1)?;
        if buf.len() == searched {
            return Ok(buf);
        }
    }
}

/// The payload of one text message, `""` when the connection is done (the peer closed, or sent
/// a close frame). Pings met on the way are answered with pongs; pongs are skipped. Keeps
/// nothing between calls — bytes of a second frame that arrived with the first are dropped — so
/// it is safe only where one message arrives at a time. A payload that is not UTF-8 is an
/// `InvalidData` error.
///
/// ```
/// use std::io::Write;
/// use web::ws::{client_frame, ws_read};
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let mut client = std::net::TcpStream::connect(listener.local_addr()?)?;
/// let (mut server, _) = listener.accept()?;
/// client.write_all(&client_frame("hello"))?;
/// assert_eq!(ws_read(&mut server)?, "hello");
/// drop(client);
/// assert_eq!(ws_read(&mut server)?, ""); // the peer is gone
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ws_read(conn: &mut TcpStream) -> io::Result<String> {
    let mut acc = Vec::new();
    loop {
        let opcode = match take_frame_opcode(conn, &mut acc)? {
            Some(op) => op,
            None => return Ok(String::new()),
        };
        // Frames from a server are unmasked: then we are the client.
        let client_side = acc.get(1).is_some_and(|b| b & 0x80 == 0);
        let (payload, rest) = ws_take(conn, std::mem::take(&mut acc))?;
        acc = rest;
        match Opcode::from_u8(opcode) {
            Some(Opcode::Ping) => {
                // A client masks every frame it sends (RFC 6455 §5.3); a server never does.
                let mask = client_side.then(fresh_mask);
                let mut pong = Vec::new();
                write_frame(&mut pong, Opcode::Pong.fin(), &payload, mask);
                conn.write_all(&pong)?;
            }
            Some(Opcode::Pong) => {}
            Some(Opcode::Close) => return Ok(String::new()),
            _ => {
                return String::from_utf8(payload).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "text frame is not UTF-8")
                });
            }
        }
    }
}

/// The opcode of the next frame, reading until its first byte is in (`None` when the peer is
/// gone).
fn take_frame_opcode(conn: &mut TcpStream, acc: &mut Vec<u8>) -> io::Result<Option<u8>> {
    *acc = skip_upgrade_reply(conn, std::mem::take(acc))?;
    if acc.len() < 2 {
        // Two bytes: the opcode, and the mask bit that tells which side sent the frame.
        *acc = fill(conn, std::mem::take(acc), 2)?;
    }
    Ok(acc.first().map(|b| b & 0x0f))
}

/// A mask key for a frame this client sends.
fn fresh_mask() -> [u8; 4] {
    let mut key = [0u8; 4];
    key.copy_from_slice(&super::handshake::random_16()[..4]);
    key
}

/// Sends a text message in one frame. Returns the bytes written: the whole frame, head included.
///
/// ```no_run
/// # let mut conn = std::net::TcpStream::connect("127.0.0.1:9001")?;
/// let sent = web::ws::ws_write(&mut conn, "hi")?;
/// assert_eq!(sent, 4); // 2 bytes of head, 2 of payload
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ws_write(conn: &mut TcpStream, text: &str) -> io::Result<usize> {
    write_message(conn, Opcode::Text, text.as_bytes())
}

/// Sends a binary message in one frame. Returns the bytes written: the whole frame, head
/// included.
///
/// ```no_run
/// let mut conn = std::net::TcpStream::connect("127.0.0.1:9001")?;
/// web::ws::ws_write_bin(&mut conn, &[1, 2, 3])?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ws_write_bin(conn: &mut TcpStream, body: &[u8]) -> io::Result<usize> {
    write_message(conn, Opcode::Binary, body)
}

fn write_message(conn: &mut TcpStream, opcode: Opcode, payload: &[u8]) -> io::Result<usize> {
    let mut frame = Vec::with_capacity(payload.len() + 10);
    write_frame(&mut frame, opcode.fin(), payload, None);
    conn.write_all(&frame)?;
    Ok(frame.len())
}

/// Sends a close frame (1000, normal closure), then closes the socket.
///
/// ```no_run
/// let conn = std::net::TcpStream::connect("127.0.0.1:9001")?;
/// web::ws::ws_close(conn)?; // close frame 1000, then the socket closes
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ws_close(mut conn: TcpStream) -> io::Result<()> {
    let mut frame = Vec::new();
    write_frame(
        &mut frame,
        Opcode::Close.fin(),
        &CloseCode::NORMAL.payload(),
        None,
    );
    let sent = conn.write_all(&frame);
    let _ = conn.shutdown(Shutdown::Both);
    sent
}

/// A server frame: final, unmasked. `op` is the whole first byte: 129 (`0x81`) for a text
/// frame, 130 (`0x82`) for binary. Bytes: `op`, the length in its shortest encoding, the
/// payload.
///
/// ```
/// assert_eq!(web::ws::ws_frame_op(130, b"ab"), [0x82, 0x02, b'a', b'b']);
/// ```
pub fn ws_frame_op(op: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 10);
    write_frame(&mut out, op, body, None);
    out
}

/// A server text frame (first byte `0x81`).
///
/// ```
/// assert_eq!(web::ws::ws_frame("hi")[..2], [0x81, 0x02]);
/// ```
pub fn ws_frame(text: &str) -> Vec<u8> {
    ws_frame_op(Opcode::Text.fin(), text.as_bytes())
}

/// A server binary frame (first byte `0x82`).
///
/// ```
/// assert_eq!(web::ws::ws_frame_bin(&[1, 2, 3])[..2], [0x82, 0x03]);
/// ```
pub fn ws_frame_bin(body: &[u8]) -> Vec<u8> {
    ws_frame_op(Opcode::Binary.fin(), body)
}

/// A masked client text frame with the fixed mask key [`FIXED_MASK`]: `0x81`, then `0x80` plus
/// the length, the key, the masked payload.
///
/// ```
/// assert_eq!(web::ws::client_frame("hi")[..2], [0x81, 0x82]);
/// ```
pub fn client_frame(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 14);
    write_frame(
        &mut out,
        Opcode::Text.fin(),
        text.as_bytes(),
        Some(FIXED_MASK),
    );
    out
}

/// A masked client binary frame with the fixed mask key [`FIXED_MASK`].
///
/// ```
/// assert_eq!(web::ws::client_frame_bin(&[7])[..2], [0x82, 0x81]);
/// ```
pub fn client_frame_bin(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 14);
    write_frame(&mut out, Opcode::Binary.fin(), body, Some(FIXED_MASK));
    out
}
