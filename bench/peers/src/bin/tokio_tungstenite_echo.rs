//! tokio-tungstenite WebSocket echo (the crate's echo-server example: read.forward(write)).
//! W=1 (default): current-thread tokio runtime; W>1: multi-thread runtime with W workers.
use std::time::Duration;

use futures_util::{future, StreamExt, TryStreamExt};
use tokio::net::{TcpListener, TcpStream};

async fn handle(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let ws = match tokio_tungstenite::accept_async(stream).await {
        Ok(ws) => ws,
        Err(_) => return,
    };
    let (write, read) = ws.split();
    let _ = read
        .try_filter(|m| future::ready(m.is_text() || m.is_binary()))
        .forward(write)
        .await;
}

async fn serve(addr: String) -> std::io::Result<()> {
    let listener = TcpListener::bind(&addr).await?;
    eprintln!("tokio_tungstenite_echo listening on {addr}");
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                tokio::spawn(handle(s));
            }
            Err(e) => {
                eprintln!("accept error: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

fn main() -> std::io::Result<()> {
    let a = web_bench_peers::args("tokio_tungstenite_echo");
    let rt = if a.workers <= 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(a.workers).enable_all().build()?
    };
    rt.block_on(serve(a.addr()))
}
