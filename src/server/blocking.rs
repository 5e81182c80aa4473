//! [`handle_conn`]: the blocking, `std::net` driver of the same request reading and dispatch the
//! reactor strands use.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use super::request_reader::RequestReader;
use crate::http::render::{has_body, render, render_stream_head};
use crate::http::stream_framing::StreamFraming;
use crate::http::{Request, Response};

use super::dispatch::{Stop, Turn, answer};
use super::exchange::{App, Origin, Streamed};
use super::limits::Limits;
use super::replies::ReplyTo;
use super::streamed::ThreadPiece;
use crate::http::Refusal;

/// Serves request after request on an accepted connection, blocking, until one side asks to
/// stop (a `Connection: close`, an HTTP/1.0 request without keep-alive, end of stream, a
/// malformed request — answered with its 4xx — or a timeout), then closes it. Returns how many
/// requests it answered.
///
/// The server's default limits apply; its timeouts are per read here: a read that waits longer
/// than [`IDLE_TIMEOUT`](crate::http::IDLE_TIMEOUT) between requests ends the connection
/// quietly, and one that waits longer than [`HEADER_TIMEOUT`](crate::http::HEADER_TIMEOUT)
/// inside a request gets a 408.
///
/// ```
/// use std::io::{Read, Write};
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let mut client = std::net::TcpStream::connect(listener.local_addr()?)?;
/// client.write_all(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
/// let (conn, _) = listener.accept()?;
/// let served = web::http::handle_conn(conn, |req| web::http::text_response(200, req.path().to_owned()))?;
/// assert_eq!(served, 2);
/// let mut replies = String::new();
/// client.read_to_string(&mut replies)?;
/// assert!(replies.ends_with("\r\n\r\n/b"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn handle_conn(conn: TcpStream, handler: impl Fn(Request) -> Response) -> io::Result<usize> {
    serve_blocking(conn, &handler, &Limits::default())
}

fn serve_blocking(
    mut conn: TcpStream,
    handler: &dyn Fn(Request) -> Response,
    limits: &Limits,
) -> io::Result<usize> {
    conn.set_write_timeout(Some(limits.write_timeout))?;
    let app = App::HandlerOnly(handler);
    let mut reader = RequestReader::new(limits.head, limits.max_body);
    let mut input: Vec<u8> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    let mut served = 0;
    let peer = conn.peer_addr().ok();
    loop {
        // Answer every complete request buffered, replies written together.
        let mut turn = Turn {
            out: &mut out,
            out_at: 0,
            high_water: usize::MAX,
            inline_limit: usize::MAX,
            fd: None,
            origin: Origin {
                now: Instant::now(),
                peer,
                reply_to: ReplyTo::Blocking,
                stream: 0,
                worker: 0,
                tls: false,
            },
        };
        let done = answer(&app, &mut reader, &input, &mut turn);
        served += done.completed;
        conn.write_all(&out)?;
        out.clear();
        match done.stop {
            Stop::Incomplete | Stop::Held => {}
            Stop::Streamed(streamed) => {
                if !send_streamed(&mut conn, *streamed)? {
                    return finish(conn, served, limits.linger);
                }
                // Requests pipelined behind it are answered before reading more.
                input.drain(..done.used);
                continue;
            }
            // Without a WebSocket route or a `taken` hook, the rest all mean: the last reply
            // is written, close.
            _ => return finish(conn, served, limits.linger),
        }
        input.drain(..done.used);
        let waiting_inside_request = !input.is_empty() || reader.is_mid_request();
        conn.set_read_timeout(Some(if waiting_inside_request {
            limits.header_timeout
        } else {
            limits.idle_timeout
        }))?;
        match conn.read(&mut chunk) {
            Ok(0) => return Ok(served),
            Ok(n) => input.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if waiting_inside_request {
                    let head_only = reader.is_head();
                    render(
                        &mut out,
                        Refusal::Timeout.response(),
                        false,
                        head_only,
                        Instant::now(),
                        usize::MAX,
                    );
                    conn.write_all(&out)?;
                    return finish(conn, served, limits.linger);
                }
                return Ok(served);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                ) =>
            {
                return Ok(served);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Writes a streamed reply as its pieces come; whether the connection stays open after it (a
/// body cut short, close-delimited, or after a `Connection: close` request ends it).
fn send_streamed(conn: &mut TcpStream, streamed: Streamed) -> io::Result<bool> {
    let Streamed { stream, rules } = streamed;
    let mut framing = StreamFraming::choose(stream.length, rules.http10);
    let mut out = Vec::new();
    let keep = render_stream_head(
        &mut out,
        &stream.head,
        rules.keep_alive,
        framing,
        Instant::now(),
    );
    conn.write_all(&out)?;
    if rules.head_only || !has_body(stream.head.status) {
        return Ok(keep);
    }
    loop {
        out.clear();
        match stream.pieces.recv() {
            Ok(ThreadPiece::Data(piece)) => {
                if framing.piece(&mut out, &piece).is_err() {
                    return Ok(false);
                }
            }
            Ok(ThreadPiece::End(trailers)) => {
                let complete = framing.end(&mut out, &trailers);
                conn.write_all(&out)?;
                return Ok(keep && complete);
            }
            // The sender was dropped before the end: the body is cut.
            Err(_) => return Ok(false),
        }
        conn.write_all(&out)?;
    }
}

/// Closes after the last reply: shut our side, then read and drop what the client still sends
/// for up to `linger`, so the close does not reset the connection before the client has read
/// the reply.
fn finish(mut conn: TcpStream, served: usize, linger: Duration) -> io::Result<usize> {
    let _ = conn.shutdown(Shutdown::Write);
    let _ = conn.set_read_timeout(Some(
        Duration::from_millis(500)
            .min(linger)
            .max(Duration::from_millis(1)),
    ));
    let mut sink = [0u8; 4096];
    let deadline = Instant::now() + linger;
    while Instant::now() < deadline {
        match conn.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    Ok(served)
}
