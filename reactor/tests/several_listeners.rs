//! A reactor on several addresses: every worker accepts from each, and a connection's strand
//! is made knowing which address it came to (`Service::open_on`); a shutdown stops them all.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};

use reactor::{
    Config, ConnId, Io, MAX_LISTENERS, Reactor, Service, Strand, Then, Wake, bind_reuseport,
};

/// Writes the place of its listener, then closes.
struct Tell(u8);

impl Strand for Tell {
    type Msg = ();

    fn resume(&mut self, io: &mut Io<'_, ()>, _wake: Wake) -> Then {
        let _ = io.write(&[self.0]);
        Then::Close
    }

    fn drain(&mut self, _io: &mut Io<'_, ()>) -> Then {
        Then::Close
    }

    fn message(&mut self, _io: &mut Io<'_, ()>, _msg: ()) -> Then {
        Then::Close
    }

    fn held_bytes(&self) -> usize {
        0
    }
}

struct Telling;

impl Service for Telling {
    type Strand = Tell;

    fn open(&mut self, _: &mio::net::TcpStream, _: SocketAddr, _: ConnId) -> Tell {
        Tell(b'?')
    }

    fn open_on(
        &mut self,
        listener: usize,
        _: &mio::net::TcpStream,
        _: SocketAddr,
        _: ConnId,
    ) -> Tell {
        Tell(b'0' + listener as u8)
    }
}

fn told(addr: SocketAddr) -> u8 {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut byte = [0u8; 1];
    stream.read_exact(&mut byte).unwrap();
    byte[0]
}

#[test]
fn each_address_is_served_by_every_worker_and_its_connections_know_it() {
    let any = "127.0.0.1:0".parse().unwrap();
    let (first, second, third) = (
        bind_reuseport(any).unwrap(),
        bind_reuseport(any).unwrap(),
        bind_reuseport(any).unwrap(),
    );
    let addrs = [
        first.local_addr().unwrap(),
        second.local_addr().unwrap(),
        third.local_addr().unwrap(),
    ];
    // Two workers, each with its own socket on each address.
    let sets = vec![
        vec![first, second, third],
        addrs.iter().map(|&a| bind_reuseport(a).unwrap()).collect(),
    ];
    let handle = Reactor::from_listener_sets(sets, Config::default(), |_| Telling)
        .unwrap()
        .spawn()
        .unwrap();
    assert_eq!(handle.local_addrs(), addrs);
    for _ in 0..20 {
        for (at, &addr) in addrs.iter().enumerate() {
            assert_eq!(told(addr), b'0' + at as u8);
        }
    }
    handle.shutdown().unwrap();
    for addr in addrs {
        // Each address stops accepting with the shutdown.
        let refused = TcpStream::connect(addr).map(|mut s| {
            let mut byte = [0u8; 1];
            s.write_all(b"x").ok();
            s.read(&mut byte).unwrap_or(0)
        });
        assert!(matches!(refused, Err(_) | Ok(0)), "{addr} still served");
    }
}

#[test]
fn listener_sets_that_disagree_or_are_too_many_are_refused() {
    let any = "127.0.0.1:0".parse().unwrap();
    let two = vec![
        vec![bind_reuseport(any).unwrap(), bind_reuseport(any).unwrap()],
        vec![bind_reuseport(any).unwrap()],
    ];
    let err = Reactor::from_listener_sets(two, Config::default(), |_| Telling).err();
    assert_eq!(
        err.map(|e| e.kind()),
        Some(std::io::ErrorKind::InvalidInput)
    );
    let many = vec![
        (0..=MAX_LISTENERS)
            .map(|_| bind_reuseport(any).unwrap())
            .collect(),
    ];
    let err = Reactor::from_listener_sets(many, Config::default(), |_| Telling).err();
    assert_eq!(
        err.map(|e| e.kind()),
        Some(std::io::ErrorKind::InvalidInput)
    );
    let none: Vec<Vec<std::net::TcpListener>> = vec![vec![]];
    let err = Reactor::from_listener_sets(none, Config::default(), |_| Telling).err();
    assert_eq!(
        err.map(|e| e.kind()),
        Some(std::io::ErrorKind::InvalidInput)
    );
}
