//! Who sent a request: the connection's peer ([`Request::peer`]) and the caller's address
//! ([`Request::client_addr`]) — the peer, or the address the server's own proxies wrote in
//! `X-Forwarded-For` when the server is told how many stand in front
//! ([`Server::proxies`](crate::http::Server::proxies)) and the peer is one of them
//! ([`Proxies`]). The walk over `X-Forwarded-For` is [`forwarded`], shared with the rate
//! limiter's [`client_of`](crate::http::client_of).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::Request;

/// Where a request came from, kept with its parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The connection's peer (`None`: not received from a socket).
    pub(crate) peer: Option<SocketAddr>,
    /// Proxies the server trusts in front of it, each appending to `X-Forwarded-For`.
    pub(crate) proxies: u8,
}

impl Request {
    /// The address of the connection the request came on (a proxy's, when one stands in
    /// front); `None` for a request not received from a socket ([`Request::new`]).
    ///
    /// ```
    /// use web::http::Request;
    /// let mut req = Request::new("GET", "/", vec![], "");
    /// assert_eq!(req.peer(), None);
    /// req.set_peer("127.0.0.2:40000".parse().unwrap());
    /// assert_eq!(req.peer(), Some("127.0.0.2:40000".parse().unwrap()));
    /// ```
    pub fn peer(&self) -> Option<SocketAddr> {
        self.caller().peer
    }

    /// The caller's address: the [peer](Request::peer)'s, or — when the server is told that
    /// `n` proxies stand in front of it ([`Server::proxies`](crate::http::Server::proxies),
    /// [`Server::trust_proxies`](crate::http::Server::trust_proxies)) and the peer is one of
    /// them — the address the outermost of them received the request from: the `X-Forwarded-For`
    /// entry `n`-th from the right (entries left of it are the client's to write, and
    /// ignored). A request with fewer entries did not come through every proxy — a caller
    /// reaching the server directly — and is known by its peer's address. `None` when there is
    /// no peer, or the entry is not an IP address.
    /// What the rate limiter tells callers apart by ([`RateLimit::per_address`](crate::http::RateLimit::per_address)).
    ///
    /// ```
    /// use web::http::{Header, Request};
    /// let mut req = Request::new("GET", "/", vec![Header::new("x-forwarded-for", "6.6.6.6, 10.0.0.7")], "");
    /// req.set_peer("127.0.0.1:5000".parse().unwrap());
    /// assert_eq!(req.client_addr(), Some("127.0.0.1".parse().unwrap())); // no proxy trusted
    /// req.set_proxies(1);
    /// assert_eq!(req.client_addr(), Some("10.0.0.7".parse().unwrap()));
    /// ```
    pub fn client_addr(&self) -> Option<IpAddr> {
        let caller = self.caller();
        match caller.proxies {
            0 => caller.peer.map(|p| p.ip()),
            n => match forwarded(self, usize::from(n)) {
                Some(entry) => std::str::from_utf8(entry).ok()?.parse().ok(),
                None => caller.peer.map(|p| p.ip()),
            },
        }
    }

    /// Sets the [peer](Request::peer) (the server does, for every request it receives; a test
    /// or a middleware standing for a proxy may).
    pub fn set_peer(&mut self, peer: SocketAddr) {
        self.caller_mut().peer = Some(peer);
    }

    /// Sets how many proxies [`client_addr`](Request::client_addr) trusts (the server does,
    /// from [`Server::proxies`](crate::http::Server::proxies) when the peer is a trusted
    /// proxy, else 0); at most 255.
    pub fn set_proxies(&mut self, n: usize) {
        self.caller_mut().proxies = u8::try_from(n).unwrap_or(u8::MAX);
    }

    /// Sets both at once, as the server does for every request it receives: the connection's
    /// `peer` (left as it is when `None`) and how many of `proxies` are trusted for it.
    pub(crate) fn set_caller(&mut self, peer: Option<SocketAddr>, proxies: &Proxies) {
        let caller = self.caller_mut();
        if peer.is_some() {
            caller.peer = peer;
        }
        caller.proxies = proxies.hops_for(peer);
    }
}

/// The proxies a server trusts: how many stand in front of it, and the networks they connect
/// from. A peer outside those networks is a caller itself, whatever `X-Forwarded-For` it
/// sends (nginx's `set_real_ip_from`, Express's `trust proxy` with addresses).
/// By default none is trusted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Proxies {
    hops: u8,
    from: Vec<Network>,
}

impl Proxies {
    /// `hops` proxies connecting from the loopback networks (a proxy on the same host).
    pub(crate) fn on_loopback(hops: usize) -> Proxies {
        let from = vec![
            Network::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 0)), 8),
            Network::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 128),
        ];
        Proxies::from_networks(hops, from)
    }

    /// `hops` proxies connecting from `from` (addresses, or networks as `address/prefix`).
    pub(crate) fn parse<S: AsRef<str>>(
        hops: usize,
        from: impl IntoIterator<Item = S>,
    ) -> io::Result<Proxies> {
        let from = from
            .into_iter()
            .map(|n| Network::parse(n.as_ref()))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Proxies::from_networks(hops, from))
    }

    fn from_networks(hops: usize, from: Vec<Network>) -> Proxies {
        Proxies {
            hops: u8::try_from(hops).unwrap_or(u8::MAX),
            from,
        }
    }

    /// The proxies [`Request::client_addr`] trusts for a request from `peer`: all of them if
    /// the peer is one, else none.
    pub(crate) fn hops_for(&self, peer: Option<SocketAddr>) -> u8 {
        let trusted =
            self.hops > 0 && peer.is_some_and(|p| self.from.iter().any(|n| n.contains(p.ip())));
        if trusted { self.hops } else { 0 }
    }
}

/// An IP network: an address and how many of its leading bits count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    fn new(addr: IpAddr, prefix: u8) -> Network {
        Network { addr, prefix }
    }

    /// `10.0.0.0/8`, `::1/128`, or an address alone (all its bits).
    fn parse(text: &str) -> io::Result<Network> {
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{text:?} is not an address or address/prefix"),
            )
        };
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let addr = addr.to_canonical();
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= bits)
                .ok_or_else(bad)?,
        };
        Ok(Network { addr, prefix })
    }

    /// Whether `ip` is in the network (an IPv4-mapped IPv6 address as its IPv4 one).
    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => same_prefix(
                u128::from(net.to_bits()) << 96,
                u128::from(ip.to_bits()) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                same_prefix(net.to_bits(), ip.to_bits(), self.prefix)
            }
            _ => false,
        }
    }
}

/// Whether `a` and `b` agree in their first `prefix` bits.
fn same_prefix(a: u128, b: u128, prefix: u8) -> bool {
    match prefix {
        0 => true,
        p => (a ^ b) >> (128 - u32::from(p.min(128))) == 0,
    }
}

/// The `X-Forwarded-For` entry `hops`-th from the right (1: the last), whitespace trimmed;
/// several lines are one list joined in order (RFC 9110 §5.3) and empty elements do not count
/// (§5.6.1.2). `None` when there are fewer entries (or `hops` is 0).
pub(crate) fn forwarded(req: &Request, hops: usize) -> Option<&[u8]> {
    let mut skip = hops.checked_sub(1)?;
    // From the right: the last line's last entry first. (A plain loop: the same walk written
    // with rsplit/flat_map/filter/nth took 1.7 times the instructions.)
    for line in req.headers().rev() {
        if !line.name().eq_ignore_ascii_case("x-forwarded-for") {
            continue;
        }
        let mut rest = line.value();
        loop {
            let (left, entry) = match rest.iter().rposition(|&b| b == b',') {
                Some(comma) => (rest.get(..comma), rest.get(comma + 1..).unwrap_or_default()),
                None => (None, rest),
            };
            let entry = entry.trim_ascii();
            if !entry.is_empty() {
                match skip.checked_sub(1) {
                    None => return Some(entry),
                    Some(s) => skip = s,
                }
            }
            match left {
                Some(left) => rest = left,
                None => break,
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Header;

    #[test]
    fn forwarded_addresses_are_trusted_only_from_the_proxies_networks() {
        let proxies = Proxies::parse(1, ["10.0.0.0/8", "192.168.1.7", "2001:db8::/32"]).unwrap();
        // (peer, hops trusted)
        let cases = [
            ("10.1.2.3:1", 1),
            ("10.255.255.255:1", 1),
            ("11.0.0.1:1", 0),
            ("192.168.1.7:1", 1),
            ("192.168.1.8:1", 0),
            ("[::ffff:10.0.0.9]:1", 1),
            ("[2001:db8:1::5]:1", 1),
            ("[2001:db9::5]:1", 0),
            ("127.0.0.1:1", 0),
        ];
        for (peer, hops) in cases {
            assert_eq!(
                proxies.hops_for(Some(peer.parse().unwrap())),
                hops,
                "{peer}"
            );
        }
        assert_eq!(proxies.hops_for(None), 0);
        let local = Proxies::on_loopback(2);
        assert_eq!(local.hops_for(Some("127.0.0.2:1".parse().unwrap())), 2);
        assert_eq!(local.hops_for(Some("[::1]:1".parse().unwrap())), 2);
        assert_eq!(local.hops_for(Some("10.0.0.1:1".parse().unwrap())), 0);
        assert_eq!(
            Proxies::default().hops_for(Some("127.0.0.1:1".parse().unwrap())),
            0
        );
        let anyone = Proxies::parse(1, ["0.0.0.0/0", "::/0"]).unwrap();
        assert_eq!(anyone.hops_for(Some("8.8.8.8:1".parse().unwrap())), 1);
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "10.0.0",
            "x",
            "10.0.0.0/",
            "10.0.0.0/-1",
        ] {
            assert!(Proxies::parse(1, [bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_client_address_is_the_peer_or_the_entry_the_trusted_proxies_wrote() {
        // (peer, X-Forwarded-For lines, proxies, client address)
        type Case<'a> = (Option<&'a str>, &'a [&'a str], usize, Option<&'a str>);
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (None, &[], 0, None),
            (Some("127.0.0.2:1"), &[], 0, Some("127.0.0.2")),
            (Some("[::1]:1"), &["9.9.9.9"], 0, Some("::1")),
            (Some("127.0.0.1:1"), &["6.6.6.6, 10.0.0.7"], 1, Some("10.0.0.7")),
            (Some("127.0.0.1:1"), &["6.6.6.6, 10.0.0.7"], 2, Some("6.6.6.6")),
            // Fewer entries than proxies: a caller that came directly, known by its peer.
            (Some("127.0.0.1:1"), &["10.0.0.7"], 2, Some("127.0.0.1")),
            (None, &["10.0.0.7"], 2, None),
            (Some("127.0.0.1:1"), &["not-an-address"], 1, None),
            (Some("127.0.0.1:1"), &["2001:db8::1"], 1, Some("2001:db8::1")),
            (Some("127.0.0.4:1"), &[], 1, Some("127.0.0.4")),
        ];
        for &(peer, forwarded, proxies, want) in cases {
            let headers = forwarded
                .iter()
                .map(|v| Header::new("x-forwarded-for", *v))
                .collect();
            let mut req = Request::new("GET", "/", headers, "");
            if let Some(peer) = peer {
                req.set_peer(peer.parse().unwrap());
            }
            req.set_proxies(proxies);
            assert_eq!(
                req.client_addr(),
                want.map(|w| w.parse().unwrap()),
                "{peer:?} {forwarded:?} {proxies}"
            );
        }
    }
}
