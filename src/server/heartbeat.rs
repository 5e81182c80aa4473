//! The heartbeat of event streams: one thread per server that, every interval, asks each
//! worker to walk its connections and hand every Server-Sent Events stream a comment line
//! (a stream with output still queued skips it). No timer and no list per stream.

use std::time::{Duration, Instant};

use reactor::Remote;

use crate::ws::WsCommand;

/// How often the thread looks whether the server is stopping (it ends within this).
const CHECK: Duration = Duration::from_millis(200);

/// Starts the heartbeat of the server behind `remote`: every `every` until it stops.
pub(crate) fn start(remote: Remote<WsCommand>, every: Duration) -> std::io::Result<()> {
    let every = every.max(Duration::from_millis(1));
    std::thread::Builder::new()
        .name("web-heartbeat".into())
        .spawn(move || {
            reactor::share_one_arena();
            let mut next = Instant::now() + every;
            while !remote.is_shutting_down() {
                let now = Instant::now();
                if now < next {
                    std::thread::sleep((next - now).min(CHECK));
                    continue;
                }
                next = now + every;
                for worker in 0..remote.workers() {
                    if !remote.send_all(worker, WsCommand::Heartbeat) && remote.is_shutting_down() {
                        return;
                    }
                }
            }
        })?;
    Ok(())
}
