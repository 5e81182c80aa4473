//! A strand handed many messages in one turn, each time parking to write, is resumed once —
//! after all of them — so it can write what they brought in one system call (what a WebSocket
//! member of a busy room relies on). And again on the next turn. A message that came alone in
//! the worker's batch says so (`Io::alone_in_turn`: nothing would join what it brings at the
//! end of the turn); messages that came together do not.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use reactor::{Config, ConnId, Io, Reactor, Read, Service, Strand, Then, Wake};

/// Logs `m` for each message (`a` for one that came alone in its batch) and `w` for each
/// resume to write; on that resume writes the log as a line. Its first line is its id.
struct Logger {
    log: String,
}

impl Strand for Logger {
    type Msg = ();

    fn resume(&mut self, io: &mut Io<'_, ()>, wake: Wake) -> Then {
        match wake {
            Wake::Start => {
                let id = io.id();
                self.log = format!("{} {} {}", id.worker(), id.key(), id.generation());
            }
            Wake::Writable | Wake::Both => self.log.push('w'),
            Wake::Timeout => return Then::Close,
            _ => {}
        }
        if wake == Wake::Readable || wake == Wake::Both {
            while let Read::Data(_) = io.read() {}
        }
        if !self.log.is_empty() {
            let line = std::mem::take(&mut self.log) + "\n";
            // A short line to an idle socket: it takes it all.
            if io.write(line.as_bytes()).ok() != Some(line.len()) {
                return Then::Close;
            }
        }
        Then::read()
    }

    fn drain(&mut self, _io: &mut Io<'_, ()>) -> Then {
        Then::Close
    }

    fn message(&mut self, io: &mut Io<'_, ()>, _msg: ()) -> Then {
        self.log.push(if io.alone_in_turn() { 'a' } else { 'm' });
        Then::read_write()
    }

    fn held_bytes(&self) -> usize {
        self.log.capacity()
    }
}

struct Logs;

impl Service for Logs {
    type Strand = Logger;
    fn open(&mut self, _: &mio::net::TcpStream, _: SocketAddr, _: ConnId) -> Logger {
        Logger { log: String::new() }
    }
}

#[test]
fn messages_of_one_turn_are_followed_by_one_resume_to_write_and_a_lone_one_says_so() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let handle = Reactor::new(listener, Config::default().workers(1), |_| Logs)
        .expect("reactor")
        .spawn()
        .expect("spawn");
    let stream = TcpStream::connect(handle.local_addr()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut lines = BufReader::new(stream.try_clone().expect("clone")).lines();
    let mut line = || lines.next().expect("a line").expect("read");
    let parts: Vec<u32> = line()
        .split(' ')
        .map(|p| p.parse().expect("number"))
        .collect();
    let id = ConnId::from_parts(parts[0], parts[1], parts[2]);
    let remote = handle.remote();
    for round in 0..3 {
        // One broadcast takes the worker's lock once: all fifty land in one turn's batch.
        assert_eq!(remote.broadcast(&[id; 50], &()), 50);
        assert_eq!(
            line(),
            format!("{}w", "m".repeat(50)),
            "round {round}: fifty messages, then one resume to write"
        );
    }
    // A message alone in its batch says so; three in one batch do not.
    assert!(remote.send(id, ()));
    assert_eq!(line(), "aw", "one message, alone in its batch");
    assert_eq!(remote.broadcast(&[id; 3], &()), 3);
    assert_eq!(line(), "mmmw", "three messages in one batch");
    // Reading still works after being woken to write.
    (&stream).write_all(b"x").expect("write");
    assert!(handle.shutdown().is_ok());
}
