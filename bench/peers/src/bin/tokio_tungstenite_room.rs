//! `tokio_tungstenite_room`: the fan-out peer for `web-bench fanout`, as a tokio team would write
//! a room. A WebSocket upgrade (any path) makes a member: a task holding the socket and a
//! `tokio::sync::broadcast` receiver, sending each message the room gets as a text frame and
//! dropping what the member sends. A `POST` with a body sends it to the room (one
//! `broadcast::Sender::send`; each member's task wakes and writes it), then answers `200`.
//! W=1 (default): current-thread runtime; W>1: multi-thread runtime with W workers.
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

/// Messages a member may fall behind by before it skips ahead (broadcast's lag).
const ROOM_CAPACITY: usize = 1024;

/// Longest request head read.
const MAX_HEAD: usize = 16 * 1024;

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

async fn handle(mut stream: TcpStream, room: broadcast::Sender<Utf8Bytes>) {
    let _ = stream.set_nodelay(true);
    let mut input = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(at) = input.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if input.len() > MAX_HEAD {
            return;
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&input[..end]).into_owned();
    if let Some(key) = header(&head, "sec-websocket-key") {
        let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
        let reply = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
        );
        if stream.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
        let rest = input[end..].to_vec();
        let ws = WebSocketStream::from_partially_read(stream, rest, Role::Server, None).await;
        member(ws, room.subscribe()).await;
    } else if head.starts_with("POST ") {
        let Some(len) = header(&head, "content-length").and_then(|v| v.parse::<usize>().ok())
        else {
            return;
        };
        while input.len() < end + len {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => input.extend_from_slice(&buf[..n]),
            }
        }
        let body = String::from_utf8_lossy(&input[end..end + len]).into_owned();
        let _ = room.send(Utf8Bytes::from(body));
        let _ = stream
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\npublished",
            )
            .await;
    }
}

/// A member: the room's messages out, what it sends read and dropped, until either side ends.
async fn member(ws: WebSocketStream<TcpStream>, mut room: broadcast::Receiver<Utf8Bytes>) {
    let (mut write, mut read) = ws.split();
    loop {
        tokio::select! {
            got = room.recv() => match got {
                Ok(text) => {
                    if write.send(Message::Text(text)).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            },
            sent = read.next() => match sent {
                Some(Ok(_)) => {}
                _ => return,
            },
        }
    }
}

async fn serve(addr: String) -> std::io::Result<()> {
    let listener = TcpListener::bind(&addr).await?;
    let (room, _) = broadcast::channel(ROOM_CAPACITY);
    eprintln!("tokio_tungstenite_room listening on {addr}");
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                tokio::spawn(handle(s, room.clone()));
            }
            Err(e) => {
                eprintln!("accept error: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

fn main() -> std::io::Result<()> {
    let a = web_bench_peers::args("tokio_tungstenite_room");
    let rt = if a.workers <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(a.workers)
            .enable_all()
            .build()?
    };
    rt.block_on(serve(a.addr()))
}
