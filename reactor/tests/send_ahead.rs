//! `Remote::send_ahead`: a message sent ahead is delivered before what was queued earlier in
//! the same batch (a fan-out, a plain send), in order among those sent ahead; and one sent
//! while a long fan-out is under way is delivered within `AHEAD_EVERY` recipients of it, not
//! after them all.

use std::io::Read as _;
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reactor::{AHEAD_EVERY, Config, ConnId, Io, Reactor, Service, Strand, Then, Wake};

/// Messages as the strand got them.
type Log = Arc<Mutex<Vec<u8>>>;

/// Logs each message; 0 then holds the worker until the test lets it go, and 9 (from a
/// fan-out) sends 3 ahead the first time it comes.
struct Conn {
    log: Log,
    hold: Arc<Mutex<Option<mpsc::Receiver<()>>>>,
    sent_ahead: bool,
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

    fn message(&mut self, io: &mut Io<'_, u8>, msg: u8) -> Then {
        self.log.lock().unwrap().push(msg);
        if msg == 0
            && let Some(rx) = self.hold.lock().unwrap().take()
        {
            let _ = rx.recv_timeout(Duration::from_secs(10));
        }
        if msg == 9 && !self.sent_ahead {
            self.sent_ahead = true;
            assert!(io.remote().send_ahead(io.id(), 3));
        }
        Then::read()
    }

    fn held_bytes(&self) -> usize {
        0
    }
}

/// Fans a message out to the one connection, `copies` times.
struct Fans {
    log: Log,
    hold: Arc<Mutex<Option<mpsc::Receiver<()>>>>,
    id: Arc<Mutex<Option<ConnId>>>,
    copies: usize,
}

impl Service for Fans {
    type Strand = Conn;
    fn open(&mut self, _: &mio::net::TcpStream, _: SocketAddr, id: ConnId) -> Conn {
        *self.id.lock().unwrap() = Some(id);
        Conn {
            log: Arc::clone(&self.log),
            hold: Arc::clone(&self.hold),
            sent_ahead: false,
        }
    }

    fn fan_out(&mut self, _msg: &u8, to: &mut Vec<ConnId>) {
        let id = self.id.lock().unwrap().expect("connected");
        to.extend(std::iter::repeat_n(id, self.copies));
    }
}

/// A reactor of one worker and one connection to it; what its strand logs.
fn start(
    copies: usize,
    hold: Option<mpsc::Receiver<()>>,
) -> (reactor::Handle<u8>, ConnId, Log, TcpStream) {
    let log: Log = Arc::default();
    let id = Arc::default();
    let hold = Arc::new(Mutex::new(hold));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let (l, i, h) = (Arc::clone(&log), Arc::clone(&id), Arc::clone(&hold));
    let handle = Reactor::new(listener, Config::default().workers(1), move |_| Fans {
        log: Arc::clone(&l),
        hold: Arc::clone(&h),
        id: Arc::clone(&i),
        copies,
    })
    .expect("reactor")
    .spawn()
    .expect("spawn");
    let mut s = TcpStream::connect(handle.local_addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut up = [0u8; 3];
    s.read_exact(&mut up).expect("up");
    let id = id.lock().unwrap().expect("opened");
    (handle, id, log, s)
}

fn wait_for(log: &Log, n: usize) -> Vec<u8> {
    let until = Instant::now() + Duration::from_secs(10);
    while log.lock().unwrap().len() < n {
        assert!(Instant::now() < until, "{:?}", log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(2));
    }
    log.lock().unwrap().clone()
}

#[test]
fn what_is_sent_ahead_comes_before_what_was_queued_earlier_in_the_batch_in_its_order() {
    let (release, hold) = mpsc::channel();
    let (handle, id, log, _s) = start(1, Some(hold));
    let remote = handle.remote();
    assert!(remote.send(id, 0)); // holds the worker: what follows is taken as one batch
    wait_for(&log, 1);
    assert!(remote.send(id, 1));
    assert!(remote.send_worker(0, 2));
    assert!(remote.send_ahead(id, 4));
    assert!(remote.send_ahead(id, 5));
    release.send(()).unwrap();
    assert_eq!(wait_for(&log, 5), [0, 4, 5, 1, 2]);
    assert!(handle.shutdown().is_ok());
}

#[test]
fn what_is_sent_ahead_during_a_long_fan_out_is_delivered_within_ahead_every_recipients() {
    let copies = 8 * AHEAD_EVERY;
    let (handle, _id, log, _s) = start(copies, None);
    assert!(handle.remote().send_worker(0, 9));
    let got = wait_for(&log, copies + 1);
    let at = got
        .iter()
        .position(|&m| m == 3)
        .expect("the message sent ahead");
    assert!(at <= AHEAD_EVERY + 1, "delivered after {at} of {copies}");
    assert!(handle.shutdown().is_ok());
}
