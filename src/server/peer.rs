//! The address of a connection's peer, kept in the connection's slab entry in 8 bytes: an
//! IPv4 address and port packed (IPv4-mapped IPv6 ones too, what a dual-stack listener
//! accepts), or a mark that says to ask the socket (`getpeername`, about 200 ns) — for IPv6
//! peers, which would not fit. One more bit says whether the connection has spoken HTTP/1.1
//! (HTTP/2's preface is only taken as a connection's first bytes, RFC 9113 §3.3).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

/// A peer's address, packed: bit 48 set, then the IPv4 address (bits 16..48) and the port;
/// bit 49 once the connection has spoken HTTP/1.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Peer(u64);

const V4: u64 = 1 << 48;
const SPOKE_HTTP1: u64 = 1 << 49;

impl Peer {
    pub(crate) fn new(addr: SocketAddr) -> Peer {
        let v4 = match addr.ip() {
            IpAddr::V4(ip) => Some(ip),
            IpAddr::V6(ip) => ip.to_ipv4_mapped(),
        };
        match v4 {
            Some(ip) => Peer(V4 | u64::from(ip.to_bits()) << 16 | u64::from(addr.port())),
            None => Peer(0),
        }
    }

    /// The address, or `None` when it is the socket's to say.
    pub(crate) fn get(self) -> Option<SocketAddr> {
        if self.0 & V4 == 0 {
            return None;
        }
        let ip = Ipv4Addr::from_bits((self.0 >> 16) as u32);
        Some(SocketAddr::V4(SocketAddrV4::new(ip, self.0 as u16)))
    }

    /// The connection's first bytes were not HTTP/2's preface: it speaks HTTP/1.1 for good.
    pub(crate) fn spoke_http1(&mut self) {
        self.0 |= SPOKE_HTTP1;
    }

    /// Whether the connection's first bytes were HTTP/1.1.
    pub(crate) fn speaks_http1(self) -> bool {
        self.0 & SPOKE_HTTP1 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_peers_are_kept_and_ipv6_ones_left_to_the_socket() {
        let cases = [
            ("127.0.0.1:8080", Some("127.0.0.1:8080")),
            ("0.0.0.0:0", Some("0.0.0.0:0")),
            ("255.255.255.255:65535", Some("255.255.255.255:65535")),
            ("[::ffff:10.1.2.3]:443", Some("10.1.2.3:443")),
            ("[::1]:80", None),
            ("[2001:db8::7]:5000", None),
        ];
        for (addr, kept) in cases {
            let mut peer = Peer::new(addr.parse().unwrap());
            assert_eq!(peer.get(), kept.map(|k| k.parse().unwrap()), "{addr}");
            assert!(!peer.speaks_http1());
            peer.spoke_http1();
            assert!(peer.speaks_http1(), "{addr}");
            assert_eq!(peer.get(), kept.map(|k| k.parse().unwrap()), "{addr}");
        }
    }
}
