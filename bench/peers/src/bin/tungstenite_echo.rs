//! Sync tungstenite WebSocket echo, one OS thread per connection (tungstenite's own server example).
//! Echoes every text/binary message back as the same type. `--workers` is accepted and ignored.
use std::net::TcpListener;
use std::thread;
use std::time::Duration;

fn main() -> std::io::Result<()> {
    let a = web_bench_peers::args("tungstenite_echo");
    let listener = TcpListener::bind(a.addr())?;
    eprintln!("tungstenite_echo listening on {} (thread per connection)", a.addr());
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                eprintln!("accept error: {e}");
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let spawned = thread::Builder::new().spawn(move || {
            let mut ws = match tungstenite::accept(stream) {
                Ok(ws) => ws,
                Err(_) => return,
            };
            loop {
                match ws.read() {
                    Ok(msg) if msg.is_text() || msg.is_binary() => {
                        if ws.send(msg).is_err() {
                            break;
                        }
                    }
                    Ok(_) => {} // ping/pong/close frames: tungstenite answers them itself
                    Err(_) => break,
                }
            }
        });
        if let Err(e) = spawned {
            eprintln!("thread spawn failed: {e}"); // connection dropped
        }
    }
    Ok(())
}
