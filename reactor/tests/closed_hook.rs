//! `Strand::closed` is called once for every connection that leaves the reactor, with its id,
//! however it leaves: the strand's own `Close`, the peer hanging up, a panic, the drain
//! deadline at shutdown — and never for one still open.

use std::io::{Read as _, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reactor::{Config, ConnId, Io, Reactor, Read, Service, Strand, Then, Wake};

type Log = Arc<Mutex<Vec<(ConnId, ConnId)>>>;

/// Reads; on `c` closes, on `p` panics, on anything else stays; at shutdown never drains by
/// itself (the drain deadline ends it).
struct Conn {
    id: Option<ConnId>,
    log: Log,
}

impl Strand for Conn {
    type Msg = ();

    fn resume(&mut self, io: &mut Io<'_, ()>, wake: Wake) -> Then {
        if wake == Wake::Start {
            self.id = Some(io.id());
            let _ = io.write(b"up\n");
        }
        loop {
            match io.read() {
                Read::Data(bytes) if bytes.contains(&b'c') => return Then::Close,
                Read::Data(bytes) if bytes.contains(&b'p') => panic!("asked to"),
                Read::Data(_) => {}
                Read::WouldBlock => return Then::read(),
                Read::Closed | Read::Error(_) => return Then::Close,
            }
        }
    }

    fn drain(&mut self, _io: &mut Io<'_, ()>) -> Then {
        Then::read()
    }

    fn message(&mut self, _io: &mut Io<'_, ()>, _msg: ()) -> Then {
        Then::read()
    }

    fn closed(&mut self, id: ConnId) {
        let own = self.id.unwrap_or(ConnId::from_parts(0, 0, 0));
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((own, id));
    }

    fn held_bytes(&self) -> usize {
        0
    }
}

struct Opens(Log);

impl Service for Opens {
    type Strand = Conn;
    fn open(&mut self, _: &mio::net::TcpStream, _: SocketAddr, _: ConnId) -> Conn {
        Conn {
            id: None,
            log: Arc::clone(&self.0),
        }
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut up = [0u8; 3];
    s.read_exact(&mut up).expect("up");
    s
}

fn wait_for(log: &Log, n: usize) -> Vec<(ConnId, ConnId)> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let seen = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if seen.len() >= n || Instant::now() > until {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn closed_is_called_once_with_the_connection_s_id_however_it_leaves() {
    let log: Log = Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let config = Config::default()
        .workers(1)
        .drain_deadline(Duration::from_millis(200));
    let opens = Arc::clone(&log);
    let handle = Reactor::new(listener, config, move |_| Opens(Arc::clone(&opens)))
        .expect("reactor")
        .spawn()
        .expect("spawn");
    let addr = handle.local_addr();

    let mut closes = connect(addr);
    closes.write_all(b"c").expect("write");
    assert_eq!(wait_for(&log, 1).len(), 1, "the strand's own Close");

    drop(connect(addr));
    assert_eq!(wait_for(&log, 2).len(), 2, "the peer hung up");

    let mut panics = connect(addr);
    panics.write_all(b"p").expect("write");
    assert_eq!(wait_for(&log, 3).len(), 3, "a panic");

    let _stays = connect(addr);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        log.lock().unwrap_or_else(|e| e.into_inner()).len(),
        3,
        "an open one is not"
    );
    assert!(handle.shutdown().is_ok());
    let seen = wait_for(&log, 4);
    assert_eq!(seen.len(), 4, "the drain deadline: {seen:?}");
    for (own, given) in &seen {
        assert_eq!(own, given, "the id the strand started with");
    }
    let mut keys: Vec<(u32, u32)> = seen
        .iter()
        .map(|(_, id)| (id.key(), id.generation()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 4, "once each");
}
