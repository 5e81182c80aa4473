//! One server connection's TLS, as a [`reactor::SocketLayer`]: rustls' unbuffered connection, driven
//! on the worker's thread over the worker's buffers. Ciphertext is read into the worker's
//! buffer, decrypted into the strand's scratch buffer, and what the strand writes is encrypted
//! into the worker's buffer and sent at once. The connection keeps bytes of its own only while
//! a record is cut short by a read or the socket takes less than was sent: idle, it holds the
//! rustls state and nothing else.

use std::cell::RefCell;
use std::io::{self, IoSlice};
use std::sync::Arc;
use std::time::Instant;

use reactor::{Received, Socket, SocketLayer};
use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, InsufficientSizeError};

use super::first_flight::FirstFlight;
use super::records::{self, RecordError};
use super::strand::TlsShared;
use super::traffic::Traffic;

/// The worker's ciphertext buffers: what one read takes from the socket, and what one write
/// encrypts before sending it (a record's overhead is at most 256 bytes in TLS 1.3, 2 048 in
/// TLS 1.2 by the RFCs; rustls' suites use 22 and 29).
const INCOMING: usize = 64 * 1024;
const OUTGOING: usize = 64 * 1024 + 4 * 1024;
/// What one write takes from the strand at most: what fits the outgoing buffer, sealed.
const PLAINTEXT_PER_WRITE: usize = 60 * 1024;
/// What a connection may owe the socket before it stops reading: one write's records. Only
/// answers to what the peer sent could add to that, and each is owed once at most; this
/// bound is what holds should one ever not be.
const OWED_BEFORE_READING: usize = OUTGOING;
/// What one turn of a connection may spend opening records: their bytes,
/// [`RECORD_COST`](super::traffic::RECORD_COST) each and
/// [`KEY_UPDATE_COST`](super::traffic::KEY_UPDATE_COST) per key update. Then the connection
/// yields to the others on its worker (the socket marked ready, so that it is resumed on the
/// next turn), as plain HTTP does after its reads.
const READ_BUDGET: usize = 1024 * 1024;

/// The worker's buffers, lent to one connection at a time (as the scratch buffer is).
struct Buffers {
    incoming: Vec<u8>,
    outgoing: Vec<u8>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = const {
        RefCell::new(Buffers { incoming: Vec::new(), outgoing: Vec::new() })
    };
}

/// Runs `f` with this worker's buffers, made on first use.
fn with_buffers<T>(f: impl FnOnce(&mut Buffers) -> T) -> T {
    BUFFERS.with_borrow_mut(|b| {
        if b.incoming.len() < INCOMING {
            b.incoming = vec![0; INCOMING];
            b.outgoing = vec![0; OUTGOING];
        }
        f(b)
    })
}

/// Gives the worker's buffers and cached keys back (its last connection closed).
pub(crate) fn release_buffers() {
    BUFFERS.with_borrow_mut(|b| {
        b.incoming = Vec::new();
        b.outgoing = Vec::new();
    });
    super::records::forget_keys();
}

/// Where the connection's handshake stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not yet done; the handshake must finish by the deadline (set at the first resume).
    Handshaking(Option<Instant>),
    /// Application data flows.
    Open,
    /// The peer said `close_notify`: nothing more will come from it.
    PeerClosed,
    /// A TLS error (or a plain HTTP request): the connection is to be closed.
    Failed,
    /// The strand closed with records unsent: they go out, then the connection closes (at
    /// this instant at the latest).
    Closing(Instant),
}

/// Who protects the connection's records.
enum Engine {
    /// rustls: the handshake, and for good when it will not give its keys (a configuration
    /// of the user's without secret extraction).
    Rustls(Box<UnbufferedServerConnection>),
    /// After the handshake: our records, rustls keeping only what key updates need.
    Own(Box<Traffic>),
    /// Failed, or between the two.
    Gone,
}

/// One connection's TLS: who protects its records, and the bytes a read or a write left over.
pub(crate) struct Session {
    engine: Engine,
    /// The configuration lets rustls hand its keys over once the handshake is done.
    take_over: bool,
    /// Ciphertext rustls could not use yet: the start of a record a read cut short, and the
    /// records of a handshake message still being joined (rustls reads them again, in place).
    kept: Vec<u8>,
    /// Sealed records the socket did not take yet, sent before anything else.
    unsent: Vec<u8>,
    /// Our side is to be shut once `unsent` is out.
    shut_when_sent: bool,
    /// What this turn has spent opening records (see [`READ_BUDGET`]).
    spent: u32,
    /// The records of the client's ClientHello, walked as they arrive until it is whole (or
    /// rustls answers); boxed, as an open connection has none.
    first_flight: Option<Box<FirstFlight>>,
    phase: Phase,
    /// ALPN chose HTTP/2.
    h2: bool,
    shared: Arc<TlsShared>,
}

impl Session {
    /// A connection's TLS about to start; one rustls refuses to start (its configuration) is
    /// failed already, and its connection closed at the first resume (counted).
    pub(crate) fn new(shared: &Arc<TlsShared>) -> Session {
        let config = shared.configs.current();
        let take_over = config.enable_secret_extraction;
        let started = UnbufferedServerConnection::new(config);
        let mut session = Session {
            engine: Engine::Gone,
            take_over,
            kept: Vec::new(),
            unsent: Vec::new(),
            shut_when_sent: false,
            spent: 0,
            first_flight: Some(Box::default()),
            phase: Phase::Handshaking(None),
            h2: false,
            shared: Arc::clone(shared),
        };
        match started {
            Ok(conn) => session.engine = Engine::Rustls(Box::new(conn)),
            Err(e) => drop(session.failed(e)),
        }
        session
    }

    /// The first resume: the handshake's clock starts.
    pub(crate) fn start(&mut self, now: Instant) {
        if let Phase::Handshaking(None) = self.phase {
            self.phase = Phase::Handshaking(Some(now + self.shared.handshake_timeout));
        }
    }

    /// The handshake's deadline while it runs.
    pub(crate) fn handshake_deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Handshaking(deadline) => deadline,
            _ => None,
        }
    }

    /// Whether the handshake ran out of time at `now` (counted once, here).
    pub(crate) fn timed_out(&self, now: Instant) -> bool {
        let late = self.handshake_deadline().is_some_and(|d| now >= d);
        if late {
            self.shared.counters.timed_out();
            crate::log::info!(; "a TLS handshake took too long: the connection is closed");
        }
        late
    }

    /// The strand is done; the connection closes once its records are sent, or at this instant.
    pub(crate) fn closing(&self) -> Option<Instant> {
        match self.phase {
            Phase::Closing(deadline) => Some(deadline),
            _ => None,
        }
    }

    pub(crate) fn close_after_sending(&mut self, deadline: Instant) {
        self.phase = Phase::Closing(deadline);
    }

    /// How long a closed strand's last records may take to go out.
    pub(crate) fn linger(&self) -> std::time::Duration {
        self.shared.linger
    }

    pub(crate) fn handshaking(&self) -> bool {
        matches!(self.phase, Phase::Handshaking(_))
    }

    pub(crate) fn has_unsent(&self) -> bool {
        !self.unsent.is_empty()
    }

    /// Whether the connection owes the socket too much to read more now: it waits until the
    /// peer takes some.
    pub(crate) fn owes_too_much(&self) -> bool {
        self.unsent.len() > OWED_BEFORE_READING
    }

    /// A new turn: the read budget is whole again.
    pub(crate) fn new_turn(&mut self) {
        self.spent = 0;
    }

    /// Keeps `bytes` the socket did not take, charged to the server's output budget.
    fn keep_unsent(&mut self, bytes: &[u8]) {
        let before = self.unsent.capacity();
        self.unsent.extend_from_slice(bytes);
        self.shared.budget.charge(self.unsent.capacity() - before);
    }

    /// Lets go of the unsent buffer (all of it was sent), crediting the budget.
    fn release_unsent(&mut self) {
        self.shared.budget.credit(self.unsent.capacity());
        self.unsent = Vec::new();
    }

    pub(crate) fn held_bytes(&self) -> usize {
        self.kept.capacity() + self.unsent.capacity()
    }

    /// Sends what the socket did not take before; `Ok(true)` once nothing is left.
    pub(crate) fn flush(&mut self, socket: &mut Socket<'_>) -> io::Result<bool> {
        while !self.unsent.is_empty() {
            let n = socket.send(&self.unsent)?;
            if n == 0 {
                return Ok(false);
            }
            self.unsent.drain(..n);
        }
        self.release_unsent();
        if std::mem::take(&mut self.shut_when_sent) {
            socket.stream().shutdown(std::net::Shutdown::Write)?;
        }
        Ok(true)
    }

    /// Sends `sealed` after what is already waiting; keeps what the socket does not take.
    fn send(&mut self, socket: &mut Socket<'_>, sealed: &[u8]) -> io::Result<()> {
        if sealed.is_empty() {
            return Ok(());
        }
        let sent = if self.unsent.is_empty() {
            socket.send(sealed)?
        } else {
            0
        };
        self.keep_unsent(&sealed[sent..]);
        Ok(())
    }

    /// A TLS failure: counted, the alert rustls owes the peer sent if the socket takes it
    /// (`seen`: the bytes rustls last read, which it may look at again), and the error the
    /// strand sees.
    fn fail(
        &mut self,
        socket: &mut Socket<'_>,
        out: &mut [u8],
        seen: Seen,
        error: rustls::Error,
    ) -> io::Error {
        if self.phase != Phase::Failed {
            let seen = match seen {
                Seen::Kept => &mut self.kept[..],
                Seen::These(bytes) => bytes,
            };
            if let Engine::Rustls(conn) = &mut self.engine {
                let status = conn.process_tls_records(seen);
                if let Ok(ConnectionState::EncodeTlsData(mut alert)) = status.state
                    && let Ok(n) = alert.encode(out)
                {
                    let _ = socket.send(&out[..n]);
                }
            }
        }
        self.failed(error)
    }

    /// The connection cannot go on: counted (once), its TLS state dropped, and the error the
    /// strand sees.
    fn failed(&mut self, why: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
        let error = io::Error::new(io::ErrorKind::InvalidData, why);
        if self.phase != Phase::Failed {
            self.shared.counters.failed();
            crate::log::info!(error = error; "TLS connection closed for bad input");
            self.phase = Phase::Failed;
        }
        self.engine = Engine::Gone;
        error
    }

    /// Turns ciphertext at `incoming[..end]` into plaintext at the front of `into`, answering
    /// the handshake as it goes. `fresh`: `incoming` holds only bytes rustls has not seen,
    /// from a record's start.
    fn decrypt(
        &mut self,
        socket: &mut Socket<'_>,
        incoming: &mut [u8],
        out: &mut [u8],
        into: &mut [u8],
        fresh: bool,
    ) -> io::Result<Decrypted> {
        let mut start = 0;
        let mut plain = 0;
        // Handshake records encoded, sent when rustls says so.
        let mut encoded = 0;
        // While `incoming` from `start` on is whole records rustls has not seen, it is given
        // them one at a time, so that the record ending the handshake is the last it reads.
        let mut by_record = fresh && self.take_over;
        loop {
            let Engine::Rustls(conn) = &mut self.engine else {
                return Err(io::Error::other("TLS failed"));
            };
            // Once the handshake is done, the records after it are ours to open (with the
            // limits and alerts of `traffic.rs`): rustls is not given them.
            let ours = self.take_over && !conn.is_handshaking();
            let feed = match records::whole_len(&incoming[start..]) {
                _ if ours => start,
                Some(len) if by_record => start + len,
                _ => incoming.len(),
            };
            let status = conn.process_tls_records(&mut incoming[start..feed]);
            let mut discard = status.discard;
            let state = match status.state {
                Ok(state) => state,
                Err(e) => {
                    return Err(self.fail(socket, out, Seen::These(&mut incoming[start..feed]), e));
                }
            };
            match state {
                ConnectionState::ReadTraffic(mut records) => {
                    while let Some(record) = records.next_record() {
                        let record =
                            record.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                        let payload = record.payload;
                        // Fits: a record's plaintext is shorter than its ciphertext, and
                        // `incoming` is no longer than `into` (see `SocketLayer::read`).
                        let Some(to) = into.get_mut(plain..plain + payload.len()) else {
                            return Err(io::Error::other(
                                "a TLS record larger than its ciphertext",
                            ));
                        };
                        to.copy_from_slice(payload);
                        plain += payload.len();
                        discard += record.discard;
                    }
                }
                ConnectionState::EncodeTlsData(mut data) => {
                    match data.encode(&mut out[encoded..]) {
                        Ok(n) => encoded += n,
                        Err(EncodeError::InsufficientSize(InsufficientSizeError {
                            required_size,
                        })) => {
                            return Err(io::Error::other(format!(
                                "a TLS handshake message of {required_size} bytes does not fit the buffer"
                            )));
                        }
                        Err(EncodeError::AlreadyEncoded) => {}
                    }
                }
                ConnectionState::TransmitTlsData(data) => {
                    data.done();
                    self.first_flight = None;
                    let sealed = std::mem::take(&mut encoded);
                    self.send(socket, &out[..sealed])?;
                }
                ConnectionState::PeerClosed => self.phase = Phase::PeerClosed,
                ConnectionState::BlockedHandshake
                | ConnectionState::WriteTraffic(_)
                | ConnectionState::Closed => {
                    start += discard;
                    let (handshaking, h2) = match &self.engine {
                        Engine::Rustls(conn) => (
                            conn.is_handshaking(),
                            conn.alpn_protocol() == Some(&b"h2"[..]),
                        ),
                        _ => (false, self.h2),
                    };
                    self.h2 = h2;
                    if handshaking && feed < incoming.len() {
                        // rustls wants more of the handshake, and more is here: the next
                        // record, or all the rest once rustls holds part of what it was given.
                        by_record &= start == feed;
                        continue;
                    }
                    if self.handshaking() && !handshaking {
                        self.phase = Phase::Open;
                        self.shared.counters.handshake();
                    }
                    return Ok(Decrypted {
                        plain,
                        used: start,
                        clean: start == feed,
                    });
                }
                // No early data is accepted (`max_early_data_size` is 0): never reached.
                _ => return Err(io::Error::other("TLS early data")),
            }
            start += discard;
        }
    }

    /// Once the handshake is done and rustls owes nothing (it holds no record half-joined),
    /// our records take over and rustls' record machinery goes; what rustls was not given is
    /// kept, whole records first, for ours to open.
    fn take_over_records(&mut self) {
        if !(self.take_over
            && self.phase == Phase::Open
            && matches!(self.engine, Engine::Rustls(_)))
        {
            return;
        }
        let Engine::Rustls(conn) = std::mem::replace(&mut self.engine, Engine::Gone) else {
            return;
        };
        match Traffic::take_over(*conn, self.shared.records_per_key) {
            Some(traffic) => self.engine = Engine::Own(Box::new(traffic)),
            None => drop(self.failed("rustls did not hand over its keys")),
        }
    }

    /// Opens whole records with our keys: plaintext into `into`, what the peer is owed sent.
    fn open_own(
        &mut self,
        socket: &mut Socket<'_>,
        incoming: &mut [u8],
        out: &mut [u8],
        into: &mut [u8],
    ) -> io::Result<(usize, usize)> {
        let Engine::Own(traffic) = &mut self.engine else {
            return Err(io::Error::other("TLS failed"));
        };
        let budget = READ_BUDGET.saturating_sub(self.spent as usize);
        match traffic.open(incoming, into, out, budget) {
            Ok(opened) => {
                // At most the budget and one record over it: fits.
                self.spent = self.spent.saturating_add(opened.cost as u32);
                self.send(socket, &out[..opened.sealed])?;
                if opened.peer_closed {
                    self.phase = Phase::PeerClosed;
                }
                Ok((opened.plain, opened.used))
            }
            Err(broken) => {
                let _ = self.send(socket, &out[..broken.alert]);
                Err(self.failed(broken.why))
            }
        }
    }

    /// Whether the kept bytes hold a whole record of ours (left when a turn's budget ran out);
    /// rustls' kept bytes are its own business.
    fn keeps_a_record(&self) -> bool {
        matches!(self.engine, Engine::Own(_)) && records::whole_len(&self.kept).is_some()
    }

    /// Answers a plain HTTP request sent to the TLS port in plain HTTP (nginx does the same),
    /// so that whoever typed `http://` reads why nothing works.
    fn refuse_plain_http(&mut self, socket: &mut Socket<'_>) -> io::Error {
        const REPLY: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\
            Content-Length: 47\r\nConnection: close\r\n\r\n\
            This port speaks HTTPS: a plain HTTP request.\r\n";
        let _ = socket.send(REPLY);
        let _ = socket.stream().shutdown(std::net::Shutdown::Write);
        self.failed("plain HTTP sent to the TLS port")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.budget.credit(self.unsent.capacity());
    }
}

/// What a read through rustls gave.
struct Decrypted {
    /// Plaintext bytes at the front of `into`.
    plain: usize,
    /// Ciphertext bytes rustls is done with.
    used: usize,
    /// rustls holds nothing of the bytes after `used` (it used them all, or was not given
    /// them): our records may take over from here.
    clean: bool,
}

/// Which bytes rustls last read, to give it again when it is asked for an alert.
enum Seen<'a> {
    /// The connection's kept bytes (between reads).
    Kept,
    /// The read buffer being worked through.
    These(&'a mut [u8]),
}

/// Whether the first byte of a connection starts a plain HTTP request (a method's letter)
/// rather than a TLS record (content type 20–24).
fn looks_like_http(first: u8) -> bool {
    first.is_ascii_uppercase()
}

impl SocketLayer for Session {
    fn read(&mut self, socket: &mut Socket<'_>, into: &mut [u8]) -> Received {
        match self.phase {
            Phase::Failed | Phase::Closing(_) => {
                return Received::Error(io::Error::new(io::ErrorKind::InvalidData, "TLS failed"));
            }
            Phase::PeerClosed => return Received::Closed,
            Phase::Handshaking(_) | Phase::Open => {}
        }
        if self.owes_too_much() {
            // Parked without read interest meanwhile (see `strand::park`).
            return Received::WouldBlock;
        }
        with_buffers(|buffers| {
            loop {
                if self.spent as usize >= READ_BUDGET {
                    // This turn's budget is spent: the rest waits for the next turn.
                    socket.set_read_ready();
                    return Received::WouldBlock;
                }
                let Buffers { incoming, outgoing } = buffers;
                // No more ciphertext than `into` holds: all the plaintext it makes fits there, so
                // rustls is never left holding plaintext the strand has not read.
                let incoming = &mut incoming[..into.len().min(INCOMING)];
                let kept = self.kept.len();
                if kept >= incoming.len() {
                    return Received::Error(
                        self.failed("a TLS handshake message larger than the read buffer"),
                    );
                }
                incoming[..kept].copy_from_slice(&self.kept);
                // Whole records kept from a turn whose budget ran out are opened before the
                // socket is read again.
                let end = if self.keeps_a_record() {
                    kept
                } else {
                    match socket.recv(&mut incoming[kept..]) {
                        Received::Data(n) => kept + n,
                        other => return other,
                    }
                };
                if kept == 0 && self.handshaking() && looks_like_http(incoming[0]) {
                    return Received::Error(self.refuse_plain_http(socket));
                }
                if let Some(walk) = &mut self.first_flight {
                    match walk.walk(&incoming[kept..end]) {
                        Ok(false) => {}
                        Ok(true) => self.first_flight = None,
                        Err(refused) => {
                            let _ = socket.send(&refused.alert());
                            return Received::Error(
                                self.failed("a ClientHello record TLS does not allow"),
                            );
                        }
                    }
                }
                let opened = match &mut self.engine {
                    Engine::Own(_) => self
                        .open_own(socket, &mut incoming[..end], outgoing, into)
                        .map(|(plain, used)| Decrypted {
                            plain,
                            used,
                            clean: false,
                        }),
                    _ => self.decrypt(socket, &mut incoming[..end], outgoing, into, kept == 0),
                };
                let Decrypted { plain, used, clean } = match opened {
                    Ok(done) => done,
                    Err(e) => return Received::Error(e),
                };
                self.kept.clear();
                if used < end {
                    self.kept.extend_from_slice(&incoming[used..end]);
                } else {
                    self.kept = Vec::new();
                }
                if clean {
                    self.take_over_records();
                }
                if plain > 0 {
                    if self.keeps_a_record() {
                        // Records left for the next turn: the strand must read again.
                        socket.set_read_ready();
                    }
                    return Received::Data(plain);
                }
                if self.phase == Phase::PeerClosed {
                    return Received::Closed;
                }
                if !socket.read_ready() && !self.keeps_a_record() {
                    return Received::WouldBlock;
                }
            }
        })
    }

    fn write(&mut self, socket: &mut Socket<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self.phase {
            Phase::Open | Phase::PeerClosed => {}
            Phase::Handshaking(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the TLS handshake is not done",
                ));
            }
            Phase::Failed | Phase::Closing(_) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "TLS failed"));
            }
        }
        if !self.flush(socket)? {
            return Ok(0);
        }
        with_buffers(|Buffers { incoming, outgoing }| {
            // The strand's pieces, gathered so that a head and its body share records.
            let mut taken = 0;
            for buf in bufs {
                let n = buf.len().min(PLAINTEXT_PER_WRITE - taken);
                incoming[taken..taken + n].copy_from_slice(&buf[..n]);
                taken += n;
                if taken == PLAINTEXT_PER_WRITE {
                    break;
                }
            }
            let sealed = match &mut self.engine {
                Engine::Own(traffic) => match traffic.seal(&incoming[..taken], outgoing) {
                    Ok(sealed) => sealed,
                    Err(RecordError::Exhausted) => {
                        // TLS 1.2's key has sealed all it may: we say goodbye and close.
                        let n = traffic.close_notify(outgoing).unwrap_or(0);
                        self.send(socket, &outgoing[..n])?;
                        return Err(io::Error::other(
                            "the TLS 1.2 key sealed all the records it may: closing",
                        ));
                    }
                    Err(e) => return Err(io::Error::other(format!("sealing a TLS record: {e:?}"))),
                },
                _ => self.seal(socket, &incoming[..taken], outgoing)?,
            };
            self.send(socket, &outgoing[..sealed])?;
            Ok(taken)
        })
    }

    fn protocol(&self) -> Option<&[u8]> {
        self.h2.then_some(&b"h2"[..])
    }

    fn shutdown_write(&mut self, socket: &mut Socket<'_>) -> io::Result<()> {
        if matches!(self.phase, Phase::Open | Phase::PeerClosed) {
            with_buffers(|Buffers { outgoing, .. }| -> io::Result<()> {
                let mut sealed = 0;
                if let Engine::Own(traffic) = &mut self.engine {
                    sealed = traffic
                        .close_notify(outgoing)
                        .map_err(|e| io::Error::other(format!("sealing close_notify: {e:?}")))?;
                }
                while let Engine::Rustls(conn) = &mut self.engine {
                    let status = conn.process_tls_records(&mut self.kept);
                    let discard = status.discard;
                    let done = match status.state {
                        Ok(ConnectionState::WriteTraffic(mut traffic)) => {
                            sealed += traffic
                                .queue_close_notify(&mut outgoing[sealed..])
                                .map_err(io::Error::other)?;
                            true
                        }
                        Ok(ConnectionState::EncodeTlsData(mut data)) => {
                            sealed += data
                                .encode(&mut outgoing[sealed..])
                                .map_err(io::Error::other)?;
                            false
                        }
                        Ok(ConnectionState::TransmitTlsData(data)) => {
                            data.done();
                            false
                        }
                        _ => true,
                    };
                    self.kept.drain(..discard.min(self.kept.len()));
                    if done {
                        break;
                    }
                }
                self.send(socket, &outgoing[..sealed])
            })?;
        }
        self.shut_when_sent = true;
        self.flush(socket).map(|_| ())
    }
}

impl Session {
    /// Encrypts `plain` into `out` (after whatever rustls must send first: a key update, a
    /// ticket); answers how many bytes of `out` hold records.
    fn seal(&mut self, socket: &mut Socket<'_>, plain: &[u8], out: &mut [u8]) -> io::Result<usize> {
        let mut sealed = 0;
        loop {
            // Given the bytes rustls has seen and kept, never fewer (it reads them again in
            // place); they hold no whole record, so nothing is decrypted here.
            let Engine::Rustls(conn) = &mut self.engine else {
                return Err(io::Error::other("TLS failed"));
            };
            let status = conn.process_tls_records(&mut self.kept);
            let discard = status.discard;
            let step = match status.state {
                Err(e) => Err(e),
                Ok(ConnectionState::WriteTraffic(mut traffic)) => {
                    Ok(Some(traffic.encrypt(plain, &mut out[sealed..])))
                }
                Ok(ConnectionState::EncodeTlsData(mut data)) => {
                    sealed += data.encode(&mut out[sealed..]).map_err(io::Error::other)?;
                    Ok(None)
                }
                Ok(ConnectionState::TransmitTlsData(data)) => {
                    data.done();
                    Ok(None)
                }
                Ok(ConnectionState::PeerClosed) => {
                    self.phase = Phase::PeerClosed;
                    Ok(None)
                }
                Ok(ConnectionState::Closed) => return Err(io::ErrorKind::BrokenPipe.into()),
                Ok(_) => return Err(io::Error::other("TLS is not ready to send")),
            };
            self.kept.drain(..discard.min(self.kept.len()));
            match step {
                Err(e) => return Err(self.fail(socket, out, Seen::Kept, e)),
                Ok(None) => continue,
                Ok(Some(Ok(n))) => return Ok(sealed + n),
                Ok(Some(Err(EncryptError::InsufficientSize(e)))) => {
                    return Err(io::Error::other(format!(
                        "{} bytes of records do not fit the buffer",
                        e.required_size
                    )));
                }
                Ok(Some(Err(e))) => return Err(io::Error::other(e)),
            }
        }
    }
}
