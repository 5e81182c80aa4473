//! Who sent a request: the connection's peer ([`Request::peer`]) and the caller's address
//! ([`Request::client_addr`]) — the peer, or the address the server's own proxies wrote in
//! `X-Forwarded-For` when the server is told how many stand in front
//! ([`Server::proxies`](crate::http::Server::proxies)). The walk over `X-Forwarded-For` is
//! [`forwarded`], shared with the rate limiter's [`client_of`](crate::http::client_of).

use std::net::{IpAddr, SocketAddr};

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
    /// `n` proxies stand in front of it ([`Server::proxies`](crate::http::Server::proxies)) —
    /// the address the outermost of them received the request from: the `X-Forwarded-For`
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
    /// from [`Server::proxies`](crate::http::Server::proxies)); at most 255.
    pub fn set_proxies(&mut self, n: usize) {
        self.caller_mut().proxies = u8::try_from(n).unwrap_or(u8::MAX);
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
