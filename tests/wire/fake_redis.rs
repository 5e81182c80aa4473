//! A fake Redis on 127.0.0.1 for the fleet's failure tests and the soak: it reads commands
//! and answers each as told — slowly but correctly, or as a broken or hostile server would.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How a fake Redis answers every command it reads.
#[derive(Clone, Copy, Debug)]
pub enum Fake {
    /// Correctly (`:1` to each), after a delay.
    Slow(Duration),
    /// `$999999999999`, then bytes for ever.
    HugeBulk,
    /// `*999999999999`, then `:1` for ever.
    EndlessArray,
    /// A bulk string of 1 MB at about 1 KB/s.
    Trickle,
    /// These bytes (one RESP reply) to each command, at once.
    Reply(&'static [u8]),
}

/// A fake Redis on 127.0.0.1 answering as `how`; it ends when the returned flag is set.
pub fn fake_redis(how: Fake) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("redis://{}/", listener.local_addr().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let halt = Arc::clone(&stop);
    std::thread::spawn(move || {
        while !halt.load(Ordering::Acquire) {
            let Ok((mut conn, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let halt = Arc::clone(&halt);
            std::thread::spawn(move || {
                conn.set_nonblocking(false).unwrap();
                conn.set_read_timeout(Some(Duration::from_millis(50)))
                    .unwrap();
                let mut buf = vec![0u8; 64 * 1024];
                let mut pending = Vec::new();
                while !halt.load(Ordering::Acquire) {
                    match conn.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => pending.extend_from_slice(&buf[..n]),
                        Err(_) => {}
                    }
                    let commands = take_commands(&mut pending);
                    if commands == 0 {
                        continue;
                    }
                    let ok = match how {
                        Fake::Slow(delay) => {
                            std::thread::sleep(delay);
                            conn.write_all(&b":1\r\n".repeat(commands)).is_ok()
                        }
                        Fake::Reply(reply) => (0..commands).all(|_| conn.write_all(reply).is_ok()),
                        Fake::HugeBulk => {
                            let _ = conn.write_all(b"$999999999999\r\n");
                            let junk = vec![b'x'; 64 * 1024];
                            while !halt.load(Ordering::Acquire) && conn.write_all(&junk).is_ok() {}
                            false
                        }
                        Fake::EndlessArray => {
                            let _ = conn.write_all(b"*999999999999\r\n");
                            let ones = b":1\r\n".repeat(4096);
                            while !halt.load(Ordering::Acquire) && conn.write_all(&ones).is_ok() {}
                            false
                        }
                        Fake::Trickle => {
                            let _ = conn.write_all(b"$1000000\r\n");
                            while !halt.load(Ordering::Acquire)
                                && conn.write_all(&[b'y'; 100]).is_ok()
                            {
                                std::thread::sleep(Duration::from_millis(100));
                            }
                            false
                        }
                    };
                    if !ok {
                        return;
                    }
                }
            });
        }
    });
    (url, stop)
}

/// Counts (and drops) the whole RESP commands at the start of `pending`.
pub fn take_commands(pending: &mut Vec<u8>) -> usize {
    let mut at = 0;
    let mut commands = 0;
    'commands: loop {
        let line = |from: usize| {
            pending[from..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .map(|p| {
                    let digits = pending.get(from + 1..from + p).unwrap_or_default();
                    let n = std::str::from_utf8(digits)
                        .ok()
                        .and_then(|d| d.parse::<usize>().ok());
                    (from + p, n)
                })
        };
        let Some((end, Some(args))) = line(at) else {
            break;
        };
        let mut next = end + 2;
        for _ in 0..args {
            let Some((end, Some(len))) = line(next) else {
                break 'commands;
            };
            next = end + 2 + len + 2;
            if next > pending.len() {
                break 'commands;
            }
        }
        at = next;
        commands += 1;
    }
    pending.drain(..at);
    commands
}
