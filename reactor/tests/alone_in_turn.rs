//! `Io::alone_in_turn`: a message that came alone in the worker's batch says so (its strand
//! may write at once: nothing would join it at the end of the turn); messages that came
//! together do not.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use reactor::{Config, ConnId, Io, Reactor, Read, Service, Strand, Then, Wake};

/// Logs `a` for each message that came alone, `n` for the others; writes the log as a line
/// when resumed to write. Its first line is its id.
struct Logger {
    log: String,
}

impl Strand for Logger {
    type Msg = ();

    fn resume(&mut self, io: &mut Io<'_, ()>, wake: Wake) -> Then {
        if wake == Wake::Start {
            let id = io.id();
            self.log = format!("{} {} {}", id.worker(), id.key(), id.generation());
        }
        if wake == Wake::Timeout {
            return Then::Close;
        }
        while let Read::Data(_) = io.read() {}
        if !self.log.is_empty() {
            let line = std::mem::take(&mut self.log) + "\n";
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
        self.log.push(if io.alone_in_turn() { 'a' } else { 'n' });
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
fn a_message_alone_in_its_batch_says_so_and_messages_together_do_not() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let handle = Reactor::new(listener, Config::default().workers(1), |_| Logs)
        .expect("reactor")
        .spawn()
        .expect("spawn");
    let stream = TcpStream::connect(handle.local_addr()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut lines = BufReader::new(stream).lines();
    let mut line = || lines.next().expect("a line").expect("read");
    let parts: Vec<u32> = line()
        .split(' ')
        .map(|p| p.parse().expect("number"))
        .collect();
    let id = ConnId::from_parts(parts[0], parts[1], parts[2]);
    let remote = handle.remote();
    for _ in 0..3 {
        assert!(remote.send(id, ()));
        assert_eq!(line(), "a", "one message, alone in its batch");
        // One broadcast takes the worker's lock once: the three land in one batch.
        assert_eq!(remote.broadcast(&[id; 3], &()), 3);
        assert_eq!(line(), "nnn", "three messages in one batch");
    }
    assert!(handle.shutdown().is_ok());
}
