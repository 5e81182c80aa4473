//! What a server does on a schedule, for all its parked connections at once: one thread per
//! server that, at each due time, asks every worker to walk its connections and hand the
//! command to those that want it ([`Remote::send_all`]) — the heartbeat comment of event
//! streams, and the liveness sweep of WebSockets. No timer and no list per connection.

use std::time::{Duration, Instant};

use reactor::Remote;

use crate::live::Command;

/// How often the thread looks whether the server is stopping (it ends within this).
const CHECK: Duration = Duration::from_millis(200);

/// One thing done on a schedule.
pub(crate) struct Tick {
    pub(crate) every: Duration,
    pub(crate) command: Command,
}

/// Starts the ticks of the server behind `remote` (no thread when there are none), until it
/// stops.
pub(crate) fn start(remote: Remote<Command>, ticks: Vec<Tick>) -> std::io::Result<()> {
    if ticks.is_empty() {
        return Ok(());
    }
    let start = Instant::now();
    let mut due: Vec<(Instant, Tick)> = ticks
        .into_iter()
        .map(|t| {
            let every = t.every.max(Duration::from_millis(1));
            (start + every, Tick { every, ..t })
        })
        .collect();
    std::thread::Builder::new()
        .name("web-ticks".into())
        .spawn(move || {
            reactor::share_one_arena();
            while !remote.is_shutting_down() {
                let now = Instant::now();
                let next = due.iter().map(|(at, _)| *at).min().unwrap_or(now);
                if now < next {
                    std::thread::sleep((next - now).min(CHECK));
                    continue;
                }
                for (at, tick) in due.iter_mut().filter(|(at, _)| *at <= now) {
                    *at = now + tick.every;
                    for worker in 0..remote.workers() {
                        if !remote.send_all(worker, tick.command.clone())
                            && remote.is_shutting_down()
                        {
                            return;
                        }
                    }
                }
            }
        })?;
    Ok(())
}
