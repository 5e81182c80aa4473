//! `Io::deadline` as a strand that keeps no deadline of its own uses it (an idle HTTP
//! connection does): woken again and again without progress, it parks with the deadline it
//! reads back, and the deadline neither drifts by a tick per wake nor is lost — it fires when
//! first set, never early.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reactor::{Config, ConnId, Io, Reactor, Read, Service, Strand, TIMER_TICK, Then, Wake};

/// What the strand saw: its id, the deadline it first set, every deadline it read back.
#[derive(Default)]
struct Seen {
    id: Option<ConnId>,
    set: Option<Instant>,
    read_back: Vec<Option<Instant>>,
    timed_out: Option<Instant>,
}

type Log = Arc<Mutex<Seen>>;

/// Parks once with `now + IDLE`; afterwards keeps no deadline, reading it back at every wake.
struct Forgetful {
    log: Log,
}

const IDLE: Duration = Duration::from_millis(400);

fn seen(log: &Log) -> std::sync::MutexGuard<'_, Seen> {
    log.lock().unwrap_or_else(|e| e.into_inner())
}

impl Strand for Forgetful {
    type Msg = ();

    fn resume(&mut self, io: &mut Io<'_, ()>, wake: Wake) -> Then {
        match wake {
            Wake::Start => {
                let deadline = io.now() + IDLE;
                let mut s = seen(&self.log);
                s.id = Some(io.id());
                s.set = Some(deadline);
                let _ = io.write(b"up\n");
                Then::read().until(deadline)
            }
            Wake::Timeout => {
                seen(&self.log).timed_out = Some(Instant::now());
                Then::Close
            }
            _ => loop {
                match io.read() {
                    Read::Data(_) => continue,
                    Read::WouldBlock => return self.again(io),
                    Read::Closed | Read::Error(_) => return Then::Close,
                }
            },
        }
    }

    fn drain(&mut self, _io: &mut Io<'_, ()>) -> Then {
        Then::Close
    }

    fn message(&mut self, io: &mut Io<'_, ()>, _msg: ()) -> Then {
        self.again(io)
    }

    fn held_bytes(&self) -> usize {
        0
    }
}

impl Forgetful {
    /// Parks again with the deadline the reactor holds.
    fn again(&mut self, io: &mut Io<'_, ()>) -> Then {
        let deadline = io.deadline();
        seen(&self.log).read_back.push(deadline);
        match deadline {
            Some(t) => Then::read().until(t),
            None => Then::read(),
        }
    }
}

struct Opens(Log);

impl Service for Opens {
    type Strand = Forgetful;
    fn open(&mut self, _: &mio::net::TcpStream, _: SocketAddr, _: ConnId) -> Forgetful {
        Forgetful {
            log: Arc::clone(&self.0),
        }
    }
}

#[test]
fn a_deadline_read_back_at_every_wake_fires_when_first_set() {
    let log: Log = Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let opens = Arc::clone(&log);
    let handle = Reactor::new(listener, Config::default().workers(1), move |_| {
        Opens(Arc::clone(&opens))
    })
    .expect("reactor")
    .spawn()
    .expect("spawn");
    let mut conn = TcpStream::connect(handle.local_addr()).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut up = [0u8; 3];
    conn.read_exact(&mut up).expect("up");
    let id = seen(&log).id.expect("started");
    let remote = handle.remote();
    // Wakes without progress every 7 ms (not a multiple of the tick), for four times the idle
    // time: a deadline pushed back by even one tick per wake would never fire meanwhile.
    let until = Instant::now() + IDLE * 4;
    while Instant::now() < until && seen(&log).timed_out.is_none() {
        remote.send(id, ());
        std::thread::sleep(Duration::from_millis(7));
    }
    let s = seen(&log);
    let set = s.set.expect("set");
    let fired = s.timed_out.expect("the deadline never fired");
    assert!(fired >= set, "fired {:?} early", set - fired);
    assert!(
        fired < set + Duration::from_millis(500),
        "fired {:?} late",
        fired - set
    );
    assert!(s.read_back.len() >= 20, "{} wakes only", s.read_back.len());
    for read in &s.read_back {
        let read = read.expect("a deadline was armed at every wake");
        assert!(read >= set, "read back {:?} early", set - read);
        assert!(read < set + TIMER_TICK, "read back {:?} late", read - set);
        assert_eq!(
            Some(read),
            s.read_back[0],
            "the same deadline at every wake"
        );
    }
    drop(s);
    // The connection was closed at the deadline.
    let mut rest = [0u8; 1];
    assert!(matches!(conn.read(&mut rest), Ok(0) | Err(_)));
    let _ = conn.write_all(b"x");
    handle.shutdown().expect("shutdown");
}
