//! The line-echo protocol over real sockets: echo, split reads, held bytes, messages, stale ids,
//! panics, hand-over.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{Client, LineEcho, start, wait_until};
use reactor::{Config, ConnId};

const IDLE: Duration = Duration::from_secs(30);

#[test]
fn five_hundred_connections_echo_across_two_workers() {
    let handle = start(Config::default().workers(2), IDLE);
    let addr = handle.local_addr();
    let mut clients: Vec<Client> = (0..500).map(|_| Client::connect(addr)).collect();
    for (i, c) in clients.iter_mut().enumerate() {
        c.send(format!("hello {i}\nsecond {i}\n").as_bytes());
    }
    for (i, c) in clients.iter_mut().enumerate() {
        assert_eq!(c.line().as_deref(), Some(format!("hello {i}").as_str()));
        assert_eq!(c.line().as_deref(), Some(format!("second {i}").as_str()));
    }
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .open
        == 500));
    let stats = handle.stats();
    assert_eq!(stats.total.accepted, 500);
    assert_eq!(stats.workers.len(), 2);
    eprintln!(
        "accepted per worker: {:?}",
        stats.workers.iter().map(|w| w.accepted).collect::<Vec<_>>()
    );
    drop(clients);
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .open
        == 0));
    handle.shutdown().expect("shutdown");
}

#[test]
fn line_sent_one_byte_at_a_time_is_echoed_whole() {
    let handle = start(Config::default().workers(1), IDLE);
    let mut c = Client::connect(handle.local_addr());
    for b in b"split across many reads\n" {
        c.send(&[*b]);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(c.line().as_deref(), Some("split across many reads"));
    // Two lines and a half in one write, then the rest.
    c.send(b"one\ntwo\nthr");
    assert_eq!(c.line().as_deref(), Some("one"));
    assert_eq!(c.line().as_deref(), Some("two"));
    c.send(b"ee\n");
    assert_eq!(c.line().as_deref(), Some("three"));
}

#[test]
fn held_bytes_go_back_to_zero_when_idle() {
    let handle = start(Config::default().workers(2), IDLE);
    let mut clients: Vec<Client> = (0..20)
        .map(|_| Client::connect(handle.local_addr()))
        .collect();
    for c in clients.iter_mut() {
        c.send(b"an unfinished line");
    }
    assert!(
        wait_until(Duration::from_secs(5), || handle.stats().total.held_bytes
            >= 20 * 18),
        "partial lines are held: {:?}",
        handle.stats()
    );
    assert_eq!(handle.stats().total.parked, 20);
    for c in clients.iter_mut() {
        c.send(b"\n");
        assert_eq!(c.line().as_deref(), Some("an unfinished line"));
    }
    assert!(
        wait_until(Duration::from_secs(5), || handle.stats().total.held_bytes
            == 0),
        "idle strands hold nothing: {:?}",
        handle.stats()
    );
    assert_eq!(handle.stats().total.open, 20);
    assert_eq!(handle.stats().total.parked, 20);
}

#[test]
fn message_from_another_thread_reaches_the_right_strand() {
    let handle = start(Config::default().workers(2), IDLE);
    let mut clients: Vec<Client> = (0..8)
        .map(|_| Client::connect(handle.local_addr()))
        .collect();
    let ids: Vec<(u32, u32, u32)> = clients.iter_mut().map(|c| c.id()).collect();
    let remote = handle.remote();
    let target = ids[5];
    let sender = std::thread::spawn(move || {
        let id = find_id(&remote, target);
        assert!(remote.send(id, b"for five\n".to_vec()));
    });
    sender.join().expect("sender");
    assert_eq!(clients[5].line().as_deref(), Some("for five"));
    // Nobody else got it: their next line is their own echo.
    for (i, c) in clients.iter_mut().enumerate() {
        assert_eq!(c.roundtrip("ping").as_deref(), Some("ping"), "client {i}");
    }
    // Broadcast reaches everyone once.
    let remote = handle.remote();
    let all: Vec<ConnId> = ids.iter().map(|&t| find_id(&remote, t)).collect();
    assert_eq!(remote.broadcast(&all, &b"news\n".to_vec()), 8);
    for c in clients.iter_mut() {
        assert_eq!(c.line().as_deref(), Some("news"));
    }
}

fn find_id(_remote: &reactor::Remote<Vec<u8>>, (w, key, generation): (u32, u32, u32)) -> ConnId {
    id_of(w, key, generation)
}

fn id_of(worker: u32, key: u32, generation: u32) -> ConnId {
    ConnId::from_parts(worker, key, generation)
}

#[test]
fn messages_to_a_closed_connection_are_dropped_after_its_key_is_reused() {
    let handle = start(Config::default().workers(1), IDLE);
    let addr = handle.local_addr();
    let mut old = Client::connect(addr);
    let (w, key, generation) = old.id();
    // Stats are published at the end of a loop turn, possibly after the reply above arrived:
    // see the old connection counted before waiting for it to go.
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .open
        == 1));
    drop(old);
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .open
        == 0));
    let mut new = Client::connect(addr);
    let (w2, key2, generation2) = new.id();
    assert_eq!((w2, key2), (w, key), "the slab key is reused");
    assert_ne!(generation2, generation);
    let remote = handle.remote();
    assert!(remote.send(id_of(w, key, generation), b"for the old one\n".to_vec()));
    assert!(remote.send(id_of(w2, key2, generation2), b"for the new one\n".to_vec()));
    assert_eq!(new.line().as_deref(), Some("for the new one"));
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .dropped_messages
        == 1));
}

#[test]
fn rapid_close_and_reopen_never_crosses_connections() {
    let handle = start(Config::default().workers(1), IDLE);
    let addr = handle.local_addr();
    let mut steady = Client::connect(addr);
    for round in 0..300 {
        // Open, write, close without reading: the key is freed while events may be queued.
        let mut c = Client::connect(addr);
        c.send(format!("gone {round}\n").as_bytes());
        drop(c);
        let mut d = Client::connect(addr);
        assert_eq!(
            d.roundtrip(&format!("mine {round}")),
            Some(format!("mine {round}"))
        );
        if round % 50 == 0 {
            assert_eq!(steady.roundtrip("steady").as_deref(), Some("steady"));
        }
    }
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .open
        == 1));
}

#[test]
fn panicking_strand_closes_only_its_connection() {
    let handle = start(Config::default().workers(1), IDLE);
    let addr = handle.local_addr();
    let mut bystander = Client::connect(addr);
    assert_eq!(bystander.roundtrip("before").as_deref(), Some("before"));
    let mut victim = Client::connect(addr);
    victim.send(b"panic\n");
    assert!(victim.closed_within(Duration::from_secs(5)));
    assert_eq!(bystander.roundtrip("after").as_deref(), Some("after"));
    let mut late = Client::connect(addr);
    assert_eq!(late.roundtrip("late").as_deref(), Some("late"));
    // Figures are published once per loop turn: wait for the turn that served `late`.
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .open
        == 2));
    assert_eq!(handle.stats().total.panics, 1);
}

#[test]
fn released_connection_is_handed_over_blocking() {
    let handle = start(Config::default().workers(1), IDLE);
    let mut c = Client::connect(handle.local_addr());
    assert_eq!(c.roundtrip("hi").as_deref(), Some("hi"));
    c.send(b"take\n");
    assert_eq!(c.line().as_deref(), Some("taken"));
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .open
        == 0));
    assert_eq!(
        c.roundtrip("still here").as_deref(),
        Some("taken: still here")
    );
    c.reader.get_mut().flush().expect("flush");
}

#[test]
fn slab_entry_is_small() {
    let size = reactor::entry_size::<LineEcho>();
    let strand = std::mem::size_of::<LineEcho>();
    eprintln!("slab entry for the line-echo strand: {size} bytes (strand {strand})");
    // The socket, generation, timer links and flags take 24 bytes after padding; debug builds
    // of mio add 8 bytes (plus padding) to each socket to check registrations.
    let extra = if cfg!(debug_assertions) { 40 } else { 24 };
    assert!(size <= strand + extra, "{size} bytes");
}

#[test]
fn large_echo_to_a_slow_reader_arrives_whole_with_backpressure() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

    let handle = start(Config::default().workers(1), IDLE);
    let mut c = Client::connect(handle.local_addr());
    let mut writer = c.reader.get_ref().try_clone().expect("clone");
    // A small, fixed receive buffer on the client (setting it turns off the kernel's autotuning,
    // which on loopback may grow buffers to tens of MB): the server's output backs up once its
    // own send buffer is full, however large the machine lets that grow.
    set_receive_buffer(c.reader.get_ref(), 64 * 1024);
    // The sender writes until the server is seen holding output, so the test proves
    // backpressure whatever the machine's buffer sizes and speed; its last line is `end`.
    let stop = Arc::new(AtomicBool::new(false));
    let sender = std::thread::spawn({
        let stop = Arc::clone(&stop);
        move || {
            let mut i = 0;
            while !stop.load(SeqCst) {
                let line = format!("{i:08} {}\n", "x".repeat(90));
                writer.write_all(line.as_bytes()).expect("write");
                i += 1;
            }
            writer.write_all(b"end\n").expect("write");
            i
        }
    });
    // Do not read: both socket buffers fill, the strand holds output and stops reading.
    assert!(
        wait_until(Duration::from_secs(60), || handle.stats().total.held_bytes
            > 0),
        "output is pending while the reader sleeps: {:?}",
        handle.stats()
    );
    stop.store(true, SeqCst);
    let held = handle.stats().total.held_bytes;
    assert!(
        held <= 4 * 64 * 1024,
        "bounded by backpressure: {held} bytes"
    );
    let mut i = 0;
    loop {
        let line = c.line();
        if line.as_deref() == Some("end") {
            break;
        }
        let want = format!("{i:08} {}", "x".repeat(90));
        assert_eq!(line.as_deref(), Some(want.as_str()), "line {i}");
        i += 1;
    }
    assert_eq!(
        sender.join().expect("sender"),
        i,
        "every line sent came back"
    );
    assert!(wait_until(Duration::from_secs(5), || handle
        .stats()
        .total
        .held_bytes
        == 0));
}

/// Fixes the socket's receive buffer size (`SO_RCVBUF`).
fn set_receive_buffer(stream: &std::net::TcpStream, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt(2) reads `size_of::<c_int>()` bytes from a live `c_int`; the descriptor
    // belongs to `stream`, open for the whole call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt SO_RCVBUF");
}
