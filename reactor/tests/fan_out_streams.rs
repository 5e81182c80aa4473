//! A fan-out that reaches several streams of one connection hands them over in one call
//! (`Strand::message_streams`, the streams in order), and each other recipient in a call of
//! its own, as before.

use std::io::Read as _;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reactor::{Config, ConnId, Io, Reactor, Service, Strand, Then, Wake};

/// What the strands were handed: (key, streams) per call.
type Log = Arc<Mutex<Vec<(u32, Vec<u32>)>>>;

struct Conn {
    log: Log,
}

impl Strand for Conn {
    type Msg = u8;

    fn resume(&mut self, io: &mut Io<'_, u8>, wake: Wake) -> Then {
        if wake == Wake::Start {
            let _ = io.write(b"up\n");
        }
        Then::read()
    }

    fn drain(&mut self, _io: &mut Io<'_, u8>) -> Then {
        Then::Close
    }

    fn message(&mut self, io: &mut Io<'_, u8>, _msg: u8) -> Then {
        let call = (io.id().key(), vec![io.addressed()]);
        self.log.lock().unwrap().push(call);
        Then::read()
    }

    fn message_streams(&mut self, io: &mut Io<'_, u8>, streams: &[u32], _msg: u8) -> Then {
        let call = (io.id().key(), streams.to_vec());
        self.log.lock().unwrap().push(call);
        Then::read()
    }

    fn held_bytes(&self) -> usize {
        0
    }
}

/// Fans a message out to streams 5, 1 and 3 of the connection with key 0, and to the
/// connection with key 1 itself, in that (unsorted) order.
struct Fans {
    log: Log,
    ids: Arc<Mutex<Vec<ConnId>>>,
}

impl Service for Fans {
    type Strand = Conn;
    fn open(&mut self, _: &mio::net::TcpStream, _: SocketAddr, id: ConnId) -> Conn {
        self.ids.lock().unwrap().push(id);
        Conn {
            log: Arc::clone(&self.log),
        }
    }

    fn fan_out(&mut self, _msg: &u8, to: &mut Vec<ConnId>) {
        let ids = self.ids.lock().unwrap();
        let (first, second) = (ids[0], ids[1]);
        to.extend([
            first.with_stream(5),
            second,
            first.with_stream(1),
            first.with_stream(3),
        ]);
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut up = [0u8; 3];
    s.read_exact(&mut up).expect("up");
    s
}

#[test]
fn the_streams_of_one_connection_a_fan_out_reaches_come_in_one_call_in_order() {
    let log: Log = Arc::default();
    let ids = Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let (l, i) = (Arc::clone(&log), Arc::clone(&ids));
    let handle = Reactor::new(listener, Config::default().workers(1), move |_| Fans {
        log: Arc::clone(&l),
        ids: Arc::clone(&i),
    })
    .expect("reactor")
    .spawn()
    .expect("spawn");
    let _a = connect(handle.local_addr());
    let _b = connect(handle.local_addr());
    assert!(handle.remote().send_worker(0, 7));
    let until = Instant::now() + Duration::from_secs(5);
    while log.lock().unwrap().len() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut calls = log.lock().unwrap().clone();
    calls.sort();
    let keys: Vec<u32> = ids
        .lock()
        .unwrap()
        .iter()
        .map(|id: &ConnId| id.key())
        .collect();
    assert_eq!(calls, [(keys[0], vec![1, 3, 5]), (keys[1], vec![0])]);
    assert!(handle.shutdown().is_ok());
}
