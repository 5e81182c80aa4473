//! One HTTP/2 connection as a server keeps it (RFC 9113 §3.4, §5, §6.5, §6.9): the preface,
//! settings, the streams and their states, header blocks (HEADERS and CONTINUATION) decoded
//! into requests, both sides' flow control, and the bounds that keep one peer from costing
//! more than its share. Pure: bytes in, events and bytes out.
//!
//! **Bounds.** Frames that cost this side work but give the peer nothing it is owed — resets
//! of its own streams, empty DATA, CONTINUATION fragments, PRIORITY, streams refused, pings and
//! settings — draw on one budget that each finished stream refills; spent, the connection ends
//! with ENHANCE_YOUR_CALM (Rapid Reset, CVE-2023-44487, and the 2019 floods). What this side
//! owes in return (ACKs, resets) stops the reading while [`Conn::receive`]'s output is past
//! [`OUTPUT_HIGH`], so a peer that does not read cannot make it grow. A header block is bounded
//! in bytes and fragments (CONTINUATION flood, CVE-2024-27316); a header list over the size
//! this side advertised decodes (HPACK stays in step) but is refused on its stream. A stream's
//! receive window reopens only as the server says what it took ([`Conn::allow`],
//! [`Conn::consumed`]): never as DATA merely arrives, so what a peer can make it hold is what
//! the server chose to take.

use super::error::{ErrorCode, H2Error};
use super::frame::{self, Frame, HEAD_LEN, Head, Kind, MAX_WINDOW, Setting, flags};
use super::headers::{HeaderList, Refused};
use super::hpack::{self, Decoder};
use super::stream_index::StreamIndex;
use crate::http::message::pool::{empty, keep, push_thrifty, reuse};

/// The connection preface a client starts with (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The window every stream and the connection start with (RFC 9113 §6.9.2).
pub(crate) const DEFAULT_WINDOW: u32 = 65_535;
/// HPACK's table size before SETTINGS say otherwise (RFC 9113 §6.5.2).
const DEFAULT_TABLE_SIZE: usize = 4096;
/// Output owed past which no more input is taken until it is written.
pub(crate) const OUTPUT_HIGH: usize = 64 * 1024;
/// Fragments one header block may come in.
const MAX_FRAGMENTS: u32 = 64;
/// What the peer may spend on frames that give it nothing (see the module's notes), and what
/// each finished stream gives back.
const FLOOD_BUDGET: u32 = 1_000;
const FLOOD_REFILL: u32 = 10;

thread_local! {
    /// Lists of open streams kept for reuse, so that a connection whose one stream opens and
    /// closes allocates nothing.
    static STREAM_LISTS: std::cell::RefCell<Vec<Vec<Stream>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The worker has no connection left: its pooled stream lists go.
pub(crate) fn worker_idle() {
    empty(&STREAM_LISTS);
}

/// What decoding a header block uses while it runs and keeps nothing of afterwards (the
/// Huffman strings' room, the header list): one per worker, shared by its connections, so an
/// idle connection holds none of it.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    hpack: hpack::Scratch,
    head: HeaderList,
}

/// What this side advertises.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    pub(crate) max_concurrent_streams: u32,
    /// Each stream's receive window.
    pub(crate) stream_window: u32,
    /// The connection's receive window.
    pub(crate) conn_window: u32,
    pub(crate) header_table_size: u32,
    pub(crate) max_header_list_size: u32,
    /// RFC 8441: extended CONNECT (WebSocket over HTTP/2).
    pub(crate) connect_protocol: bool,
}

impl Default for Config {
    /// The server's defaults ([`Http2Config`](super::config::Http2Config)'s) with a 16 KiB
    /// header list: one set of defaults.
    fn default() -> Config {
        super::config::Http2Config::default().codec(16 * 1024)
    }
}

/// A window computed in 64 bits, kept in 32: windows are bounded by [`MAX_WINDOW`] (checked
/// before), and by −[`MAX_WINDOW`] below.
fn window(value: i64) -> i32 {
    value.clamp(-i64::from(MAX_WINDOW), i64::from(MAX_WINDOW)) as i32
}

/// What the codec keeps per open stream.
#[cfg(test)]
pub(crate) fn stream_size() -> usize {
    std::mem::size_of::<Stream>()
}

/// What the peer sent, for the server to act on.
#[derive(Debug)]
pub(crate) enum Event<'a> {
    /// A request's head; `end_stream` when it has no body.
    Request {
        stream: u32,
        head: &'a HeaderList,
        end_stream: bool,
    },
    /// A request refused before its handler: answer it with `status` (431: its header list is
    /// larger than advertised).
    Refuse { stream: u32, status: u16 },
    /// A piece of a request's body; `end_stream` with its last.
    Data {
        stream: u32,
        data: &'a [u8],
        end_stream: bool,
    },
    /// The stream ended without its reply being wanted (reset by the peer, or by this side for
    /// a broken rule): forget it.
    Reset { stream: u32 },
    /// Stream windows opened: what waits to be sent may go on.
    WindowOpened,
}

/// Where a stream is (RFC 9113 §5.1), as this side sees it; closed streams are not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Both sides may send.
    Open,
    /// The peer ended its side (END_STREAM): only the reply is to come.
    HalfClosedRemote,
    /// This side ended the reply; the peer's body still comes.
    HalfClosedLocal,
}

#[derive(Debug)]
struct Stream {
    id: u32,
    state: State,
    /// What the peer may still send on it (kept in 32 bits: a window is at most 2³¹ − 1, and
    /// a stream is small for the many an idle connection may hold).
    recv_window: i32,
    /// What this side may send on it beyond the peer's initial window (its WINDOW_UPDATEs less
    /// what was sent): the window is `peer_initial_window + send_credit`, so a change of the
    /// initial window moves every stream's at once, touching none (RFC 9113 §6.9.2). Within
    /// ±(2³¹ − 1): a send leaves the window at 0 or more, an update at most 2³¹ − 1.
    send_credit: i32,
}

/// A header block arriving in fragments.
#[derive(Debug)]
struct Block {
    stream: u32,
    end_stream: bool,
    fragments: u32,
}

/// Where the connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the client's preface.
    Preface,
    /// Waiting for the client's first frame, which must be SETTINGS.
    FirstSettings,
    Open,
    /// This side sent GOAWAY: no new streams; the ones in flight finish.
    GoingAway,
    /// A connection error was sent: nothing more is read.
    Closed,
}

/// One HTTP/2 connection's state.
#[derive(Debug)]
pub(crate) struct Conn {
    config: Config,
    phase: Phase,
    decoder: Decoder,
    streams: Vec<Stream>,
    /// What each open stream's `content-length` leaves of its request's body to come (only
    /// streams whose request gave one and still sends), checked against its DATA; kept apart
    /// so that a stream — hundreds of idle event streams — is 16 bytes.
    lengths: Vec<(u32, u64)>,
    /// Where each stream is in `streams`, and in `lengths`: found in one step.
    stream_index: StreamIndex,
    length_index: StreamIndex,
    /// The highest stream the peer opened.
    last_stream: u32,
    block: Option<Block>,
    /// The header block's fragments so far.
    fragments: Vec<u8>,
    /// The last streams that closed (to tell a frame on one from an unexpected id).
    closed: [u32; 4],
    recv_window: i64,
    send_window: i64,
    /// The peer's settings this side acts on.
    peer_initial_window: u32,
    /// At least the largest `send_credit` of the open streams (0 with none open): a change of
    /// the initial window that keeps it plus this within 2³¹ − 1 overflows no stream's window.
    most_credit: i32,
    peer_max_frame_size: u32,
    flood: u32,
    /// The peer acknowledged this side's SETTINGS.
    acked: bool,
}

impl Conn {
    /// A connection that will advertise `config`; its first output is [`Conn::preface`].
    pub(crate) fn new(config: Config) -> Conn {
        Conn {
            // RFC 7541's default until the peer acknowledges ours (it may encode with it
            // before it has read them).
            decoder: Decoder::new(DEFAULT_TABLE_SIZE.max(config.header_table_size as usize)),
            config,
            phase: Phase::Preface,
            streams: Vec::new(),
            lengths: Vec::new(),
            stream_index: StreamIndex::default(),
            length_index: StreamIndex::default(),
            last_stream: 0,
            block: None,
            fragments: Vec::new(),
            closed: [0; 4],
            recv_window: i64::from(DEFAULT_WINDOW),
            send_window: i64::from(DEFAULT_WINDOW),
            peer_initial_window: DEFAULT_WINDOW,
            most_credit: 0,
            peer_max_frame_size: frame::MIN_MAX_FRAME_SIZE,
            flood: FLOOD_BUDGET,
            acked: false,
        }
    }

    /// The server's preface: its SETTINGS, and the connection window opened to its size.
    pub(crate) fn preface(&self, out: &mut Vec<u8>) {
        let c = &self.config;
        frame::write_settings(
            out,
            &[
                Setting::MaxConcurrentStreams(c.max_concurrent_streams),
                Setting::InitialWindowSize(c.stream_window),
                Setting::HeaderTableSize(c.header_table_size),
                Setting::MaxHeaderListSize(c.max_header_list_size),
                Setting::EnableConnectProtocol(c.connect_protocol),
            ],
        );
        if c.conn_window > DEFAULT_WINDOW {
            frame::write_window_update(out, 0, c.conn_window - DEFAULT_WINDOW);
        }
    }

    /// Reads what `input` holds of whole frames (and the preface), hands what they mean to
    /// `event`, and appends what is owed to the peer to `out`: the bytes used (the rest is an
    /// incomplete frame, or waits while `out` is past [`OUTPUT_HIGH`]). After a connection
    /// error, GOAWAY is in `out` and nothing more is read: close once it is written.
    pub(crate) fn receive(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
        event: &mut dyn FnMut(Event<'_>),
    ) -> usize {
        let mut used = 0;
        if self.phase == Phase::Preface {
            let n = input.len().min(PREFACE.len());
            if input[..n] != PREFACE[..n] {
                return self.fail(out, ErrorCode::Protocol, used);
            }
            if n < PREFACE.len() {
                return 0;
            }
            used = PREFACE.len();
            self.phase = Phase::FirstSettings;
        }
        while self.phase != Phase::Closed && out.len() < OUTPUT_HIGH {
            let rest = &input[used..];
            let Some(head) = Head::parse(rest) else {
                break;
            };
            if head.len > frame::MIN_MAX_FRAME_SIZE {
                return self.fail(out, ErrorCode::FrameSize, used);
            }
            let end = HEAD_LEN + head.len as usize;
            let Some(payload) = rest.get(HEAD_LEN..end) else {
                break;
            };
            used += end;
            if let Err(error) = self.frame(&head, payload, out, scratch, event) {
                match error {
                    H2Error::Connection(code) => return self.fail(out, code, used),
                    H2Error::Stream(stream, code) => self.reset(stream, code, out, event),
                }
            }
        }
        used
    }

    /// A connection error: GOAWAY with `code` and the last stream this side processed.
    fn fail(&mut self, out: &mut Vec<u8>, code: ErrorCode, used: usize) -> usize {
        frame::write_goaway(out, self.last_stream, code);
        self.phase = Phase::Closed;
        self.streams = Vec::new();
        self.lengths = Vec::new();
        self.stream_index = StreamIndex::default();
        self.length_index = StreamIndex::default();
        used
    }

    /// Whether the peer acknowledged this side's SETTINGS.
    pub(crate) fn settings_acked(&self) -> bool {
        self.acked
    }

    /// The peer did not acknowledge this side's SETTINGS within its settings timeout
    /// ([`Http2Config::settings_timeout`](super::config::Http2Config::settings_timeout)): GOAWAY
    /// with SETTINGS_TIMEOUT (nothing if it did, or if the connection ended already).
    pub(crate) fn settings_timed_out(&mut self, out: &mut Vec<u8>) {
        if !self.acked && self.phase != Phase::Closed {
            self.fail(out, ErrorCode::SettingsTimeout, 0);
        }
    }

    /// Whether the connection ended in error (GOAWAY sent): close after writing.
    pub(crate) fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Draws on the flood budget: a connection error when it is spent.
    fn spend(&mut self, cost: u32) -> Result<(), H2Error> {
        self.flood = self
            .flood
            .checked_sub(cost)
            .ok_or(H2Error::Connection(ErrorCode::EnhanceYourCalm))?;
        Ok(())
    }

    fn frame(
        &mut self,
        head: &Head,
        payload: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
        event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), H2Error> {
        let parsed = frame::parse(head, payload, frame::MIN_MAX_FRAME_SIZE)?;
        if self.phase == Phase::FirstSettings {
            if !matches!(parsed, Frame::Settings { ack: false, .. }) {
                return Err(H2Error::Connection(ErrorCode::Protocol));
            }
            self.phase = Phase::Open;
        }
        if let Some(block) = &self.block {
            // Nothing but the block's CONTINUATION may come between its fragments.
            match parsed {
                Frame::Continuation { stream, .. } if stream == block.stream => {}
                _ => return Err(H2Error::Connection(ErrorCode::Protocol)),
            }
        }
        match parsed {
            Frame::Settings { ack: true, .. } => {
                // Our SETTINGS are in force: HPACK's table shrinks to what we advertised.
                self.decoder.settle(self.config.header_table_size as usize);
                self.acked = true;
                Ok(())
            }
            Frame::Settings { params, .. } => {
                self.spend(1)?;
                for setting in frame::settings(params) {
                    self.apply(setting, event)?;
                }
                frame::write_settings_ack(out);
                Ok(())
            }
            Frame::Ping { ack: true, .. } => Ok(()),
            Frame::Ping { data, .. } => {
                self.spend(1)?;
                frame::write_ping(out, data, true);
                Ok(())
            }
            Frame::GoAway { .. } => {
                // The peer starts no new streams; those in flight finish.
                if self.phase == Phase::Open {
                    self.phase = Phase::GoingAway;
                }
                Ok(())
            }
            Frame::WindowUpdate {
                stream: 0,
                increment,
            } => {
                self.send_window += i64::from(increment);
                if self.send_window > i64::from(MAX_WINDOW) {
                    return Err(H2Error::Connection(ErrorCode::FlowControl));
                }
                event(Event::WindowOpened);
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => {
                self.idle_is_an_error(stream)?;
                let initial = i64::from(self.peer_initial_window);
                if let Some(s) = self.stream_mut(stream) {
                    let credit = i64::from(s.send_credit) + i64::from(increment);
                    if initial + credit > i64::from(MAX_WINDOW) {
                        return Err(H2Error::Stream(stream, ErrorCode::FlowControl));
                    }
                    s.send_credit = window(credit);
                    self.most_credit = self.most_credit.max(window(credit));
                    event(Event::WindowOpened);
                }
                Ok(())
            }
            Frame::RstStream { stream, .. } => {
                self.idle_is_an_error(stream)?;
                if self.remove(stream) {
                    // A stream the peer opened and reset before its reply: Rapid Reset's unit.
                    self.spend(FLOOD_REFILL / 2)?;
                    event(Event::Reset { stream });
                }
                Ok(())
            }
            Frame::Priority => self.spend(1),
            Frame::Unknown => Ok(()),
            Frame::Headers {
                stream,
                block,
                end_stream,
                end_headers,
            } => self.headers(stream, block, end_stream, end_headers, out, scratch, event),
            Frame::Continuation {
                stream,
                block,
                end_headers,
            } => {
                self.spend(u32::from(block.is_empty()))?;
                let Some(b) = self.block.as_mut() else {
                    // A CONTINUATION with no block open.
                    return Err(H2Error::Connection(ErrorCode::Protocol));
                };
                b.fragments += 1;
                if b.fragments > MAX_FRAGMENTS {
                    return Err(H2Error::Connection(ErrorCode::EnhanceYourCalm));
                }
                self.append_fragment(block)?;
                if end_headers {
                    let Block { end_stream, .. } = self
                        .block
                        .take()
                        .ok_or(H2Error::Connection(ErrorCode::Internal))?;
                    // (Freed with the block: fragmented blocks are rare.)
                    let fragments = std::mem::take(&mut self.fragments);
                    self.header_block(stream, &fragments, end_stream, out, scratch, event)?;
                }
                Ok(())
            }
            Frame::Data {
                stream,
                data,
                end_stream,
                flow_len,
            } => self.data(stream, data, end_stream, flow_len, out, event),
        }
    }

    /// A setting of the peer's, applied.
    fn apply(&mut self, setting: Setting, event: &mut dyn FnMut(Event<'_>)) -> Result<(), H2Error> {
        match setting {
            Setting::InitialWindowSize(size) => {
                // Every stream's window moves by the difference (RFC 9113 §6.9.2): each is the
                // initial window plus its credit, so nothing is walked — unless the largest
                // credit known might take one past 2³¹ − 1, when the streams say exactly.
                let over =
                    |credit: i32| i64::from(size) + i64::from(credit) > i64::from(MAX_WINDOW);
                if over(self.most_credit) {
                    self.most_credit = self
                        .streams
                        .iter()
                        .map(|s| s.send_credit)
                        .max()
                        .unwrap_or(0)
                        .max(0);
                    if over(self.most_credit) {
                        return Err(H2Error::Connection(ErrorCode::FlowControl));
                    }
                }
                let grew = size > self.peer_initial_window;
                self.peer_initial_window = size;
                if grew {
                    event(Event::WindowOpened);
                }
            }
            Setting::MaxFrameSize(size) => self.peer_max_frame_size = size,
            // This side's encoder keeps no table and never pushes: nothing to change.
            Setting::HeaderTableSize(_)
            | Setting::EnablePush(_)
            | Setting::MaxConcurrentStreams(_)
            | Setting::MaxHeaderListSize(_)
            | Setting::EnableConnectProtocol(_) => {}
        }
        Ok(())
    }

    /// A frame other than HEADERS, PRIORITY or a reset on a stream the peer never opened.
    fn idle_is_an_error(&self, stream: u32) -> Result<(), H2Error> {
        if stream > self.last_stream {
            return Err(H2Error::Connection(ErrorCode::Protocol));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn headers(
        &mut self,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        end_headers: bool,
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
        event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), H2Error> {
        if end_headers {
            return self.header_block(stream, block, end_stream, out, scratch, event);
        }
        self.block = Some(Block {
            stream,
            end_stream,
            fragments: 1,
        });
        self.fragments.clear();
        self.append_fragment(block)
    }

    fn append_fragment(&mut self, fragment: &[u8]) -> Result<(), H2Error> {
        // Bounded by what a header list this side accepts can take, and a margin: a block
        // past it cannot be decoded without holding it whole.
        let bound = self.config.max_header_list_size as usize + 16 * 1024;
        if self.fragments.len() + fragment.len() > bound {
            return Err(H2Error::Connection(ErrorCode::EnhanceYourCalm));
        }
        self.fragments.extend_from_slice(fragment);
        Ok(())
    }

    /// A whole header block on `stream`: a new request, or trailers.
    fn header_block(
        &mut self,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
        event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), H2Error> {
        let trailers = self.stream(stream).is_some();
        let max = self.config.max_header_list_size as usize;
        let Scratch { hpack, head } = scratch;
        head.clear();
        let decoded = self
            .decoder
            .decode(block, hpack, |n, v| head.push(n, v, max, trailers));
        match decoded {
            Err(_) => Err(H2Error::Connection(ErrorCode::Compression)),
            Ok(()) if trailers => self.trailers(stream, head, end_stream, event),
            Ok(()) => self.open(stream, head, end_stream, out, event),
        }
    }

    /// Trailers on an open stream: they must end it.
    fn trailers(
        &mut self,
        stream: u32,
        head: &HeaderList,
        end_stream: bool,
        event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), H2Error> {
        let Some(s) = self.stream(stream) else {
            return Err(H2Error::Connection(ErrorCode::Internal));
        };
        if s.state != State::Open && s.state != State::HalfClosedLocal {
            return Err(H2Error::Stream(stream, ErrorCode::StreamClosed));
        }
        let short = self.remaining(stream).is_some_and(|n| n != 0);
        if !end_stream || short || head.finish_trailers().is_err() {
            return Err(H2Error::Stream(stream, ErrorCode::Protocol));
        }
        // The request is whole: its body ends here (the trailers themselves are not kept).
        event(Event::Data {
            stream,
            data: &[],
            end_stream: true,
        });
        self.end_remote(stream)
    }

    /// A new stream.
    fn open(
        &mut self,
        stream: u32,
        head: &HeaderList,
        end_stream: bool,
        out: &mut Vec<u8>,
        event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), H2Error> {
        if stream.is_multiple_of(2) || stream <= self.last_stream {
            // An even id is a server's, a lower one unexpected (RFC 9113 §5.1.1) — unless it
            // is a stream that just closed: a frame on a closed stream (§5.1).
            let code = if self.closed.contains(&stream) {
                ErrorCode::StreamClosed
            } else {
                ErrorCode::Protocol
            };
            return Err(H2Error::Connection(code));
        }
        self.last_stream = stream;
        if self.phase == Phase::GoingAway {
            frame::write_rst_stream(out, stream, ErrorCode::RefusedStream);
            return Ok(());
        }
        if self.streams.len() >= self.config.max_concurrent_streams as usize {
            self.spend(FLOOD_REFILL)?;
            return Err(H2Error::Stream(stream, ErrorCode::RefusedStream));
        }
        let Ok(content_length) = head.content_length() else {
            return Err(H2Error::Stream(stream, ErrorCode::Protocol));
        };
        match head.finish_request(self.config.connect_protocol) {
            Err(Refused::Malformed(_)) => return Err(H2Error::Stream(stream, ErrorCode::Protocol)),
            Err(Refused::TooLarge) => {
                self.add(self.new_stream(stream, end_stream), content_length);
                event(Event::Refuse {
                    stream,
                    status: 431,
                });
                return Ok(());
            }
            Ok(()) => {}
        }
        if end_stream && content_length.is_some_and(|n| n > 0) {
            return Err(H2Error::Stream(stream, ErrorCode::Protocol));
        }
        self.add(self.new_stream(stream, end_stream), content_length);
        event(Event::Request {
            stream,
            head,
            end_stream,
        });
        Ok(())
    }

    fn new_stream(&self, id: u32, end_stream: bool) -> Stream {
        Stream {
            id,
            state: if end_stream {
                State::HalfClosedRemote
            } else {
                State::Open
            },
            recv_window: window(i64::from(self.config.stream_window)),
            send_credit: 0,
        }
    }

    fn data(
        &mut self,
        stream: u32,
        data: &[u8],
        end_stream: bool,
        flow_len: u32,
        out: &mut Vec<u8>,
        event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), H2Error> {
        self.idle_is_an_error(stream)?;
        // The connection window counts every DATA, on any stream (RFC 9113 §6.9).
        self.recv_window -= i64::from(flow_len);
        if self.recv_window < 0 {
            return Err(H2Error::Connection(ErrorCode::FlowControl));
        }
        self.replenish_connection(out);
        if data.is_empty() && !end_stream {
            self.spend(1)?;
        }
        let Some(s) = self.stream_mut(stream) else {
            // Closed: not this side's to read (RFC 9113 §5.1).
            return Err(H2Error::Stream(stream, ErrorCode::StreamClosed));
        };
        if s.state == State::HalfClosedRemote {
            return Err(H2Error::Stream(stream, ErrorCode::StreamClosed));
        }
        let left = i64::from(s.recv_window) - i64::from(flow_len);
        s.recv_window = window(left);
        if left < 0 {
            return Err(H2Error::Stream(stream, ErrorCode::FlowControl));
        }
        if let Some(at) = self.length_at(stream) {
            let left = self.lengths[at].1.checked_sub(data.len() as u64);
            match left {
                Some(left) if !(end_stream && left != 0) => self.lengths[at].1 = left,
                _ => return Err(H2Error::Stream(stream, ErrorCode::Protocol)),
            }
        }
        event(Event::Data {
            stream,
            data,
            end_stream,
        });
        if end_stream {
            self.end_remote(stream)?;
        }
        Ok(())
    }

    /// Some of what `stream` received was read, `unread` bytes of it not yet: its window
    /// reopens to what leaves the unread and the window together within the window's size
    /// (see [`Conn::allow`]).
    pub(crate) fn consumed(&mut self, stream: u32, unread: usize, out: &mut Vec<u8>) {
        let full = u64::from(self.config.stream_window);
        let unread = u64::try_from(unread).unwrap_or(u64::MAX);
        self.allow(stream, full.saturating_sub(unread), out);
    }

    /// Stream `stream` may receive `room` bytes more: its window reopens to that, at most the
    /// window's size, once it is down to half of that (a request body near its limit gets no
    /// window past it).
    pub(crate) fn allow(&mut self, stream: u32, room: u64, out: &mut Vec<u8>) {
        let full = i64::from(self.config.stream_window);
        if let Some(s) = self.stream_mut(stream)
            && s.state == State::Open
        {
            let target = i64::try_from(room).unwrap_or(full).min(full);
            let increment = target - i64::from(s.recv_window);
            // Once the window is down to half of what it may be (for a full window: half of
            // it used), never left shut below what is allowed.
            if increment > 0 && i64::from(s.recv_window) <= target / 2 {
                s.recv_window = window(i64::from(s.recv_window) + increment);
                frame::write_window_update(out, stream, increment as u32);
            }
        }
    }

    /// Whether a header block is arriving in fragments (nothing else may come meanwhile).
    pub(crate) fn in_header_block(&self) -> bool {
        self.block.is_some()
    }

    /// A header block did not arrive whole within the header timeout: GOAWAY, and nothing
    /// more is read.
    pub(crate) fn header_timed_out(&mut self, out: &mut Vec<u8>) {
        if self.block.is_some() && self.phase != Phase::Closed {
            self.fail(out, ErrorCode::NoError, 0);
        }
    }

    /// Whether the peer ended its side of `stream` (END_STREAM), which is still open for
    /// this side's.
    pub(crate) fn peer_ended(&self, stream: u32) -> bool {
        self.stream(stream)
            .is_some_and(|s| s.state == State::HalfClosedRemote)
    }

    /// Whether `stream` is open (either side may still send on it).
    pub(crate) fn is_open(&self, stream: u32) -> bool {
        self.stream(stream).is_some()
    }

    /// Opens the connection window again once half of it is used (the body is the
    /// application's to bound: it refuses one past its limit).
    fn replenish_connection(&mut self, out: &mut Vec<u8>) {
        let full = i64::from(self.config.conn_window);
        if self.recv_window < full / 2 {
            let increment = (full - self.recv_window) as u32;
            self.recv_window += i64::from(increment);
            frame::write_window_update(out, 0, increment);
        }
    }

    /// The peer ended its side of `stream`.
    fn end_remote(&mut self, stream: u32) -> Result<(), H2Error> {
        self.forget_length(stream);
        let Some(s) = self.stream_mut(stream) else {
            return Ok(());
        };
        match s.state {
            State::Open => s.state = State::HalfClosedRemote,
            State::HalfClosedLocal => {
                self.remove(stream);
                self.finished();
            }
            State::HalfClosedRemote => {
                return Err(H2Error::Stream(stream, ErrorCode::StreamClosed));
            }
        }
        Ok(())
    }

    /// This side resets `stream` for a broken rule.
    fn reset(
        &mut self,
        stream: u32,
        code: ErrorCode,
        out: &mut Vec<u8>,
        event: &mut dyn FnMut(Event<'_>),
    ) {
        frame::write_rst_stream(out, stream, code);
        if self.remove(stream) {
            event(Event::Reset { stream });
        }
        if self.spend(FLOOD_REFILL / 2).is_err() {
            let _ = self.fail(out, ErrorCode::EnhanceYourCalm, 0);
        }
    }

    /// Opens a stream, its list taken from the worker's pool when the connection had none.
    fn add(&mut self, stream: Stream, content_length: Option<u64>) {
        // Both lists stay in stream order (streams open in increasing order).
        if let (Some(n), State::Open) = (content_length, stream.state) {
            debug_assert!(self.lengths.last().is_none_or(|(id, _)| *id < stream.id));
            self.lengths.push((stream.id, n));
            self.length_index.pushed(&self.lengths, |(id, _)| *id);
        }
        debug_assert!(self.streams.last().is_none_or(|s| s.id < stream.id));
        if self.streams.capacity() == 0
            && let Some(list) = reuse(&STREAM_LISTS)
        {
            self.streams = list;
        }
        push_thrifty(&mut self.streams, stream);
        self.stream_index.pushed(&self.streams, |s| s.id);
    }

    /// What `id`'s `content-length` leaves of its body to come, if it gave one.
    fn remaining(&self, id: u32) -> Option<u64> {
        Some(self.lengths[self.length_at(id)?].1)
    }

    /// `id`'s body is over (or its stream): its length is not checked any more.
    fn forget_length(&mut self, id: u32) {
        if let Some(at) = self.length_at(id) {
            self.lengths.remove(at);
            self.length_index.removed(self.lengths.len());
            if self.lengths.is_empty() {
                self.lengths = Vec::new(); // an idle connection holds none
            }
        }
    }

    /// Where stream `id` is in `streams` (both lists are in stream order: streams open in
    /// increasing order, and leave without moving the rest out of it).
    #[inline]
    fn stream_at(&self, id: u32) -> Option<usize> {
        self.stream_index.find(&self.streams, id, |s| s.id)
    }

    /// Where stream `id`'s content length is in `lengths`, if it gave one.
    #[inline]
    fn length_at(&self, id: u32) -> Option<usize> {
        self.length_index.find(&self.lengths, id, |(s, _)| *s)
    }

    fn stream(&self, id: u32) -> Option<&Stream> {
        Some(&self.streams[self.stream_at(id)?])
    }

    fn stream_mut(&mut self, id: u32) -> Option<&mut Stream> {
        let at = self.stream_at(id)?;
        Some(&mut self.streams[at])
    }

    /// Forgets `id`; whether it was open.
    fn remove(&mut self, id: u32) -> bool {
        let Some(at) = self.stream_at(id) else {
            return false;
        };
        self.streams.remove(at);
        self.stream_index.removed(self.streams.len());
        self.forget_length(id);
        self.closed.rotate_right(1);
        self.closed[0] = id;
        if self.streams.is_empty() {
            self.most_credit = 0;
            // Back to the worker's pool (a small one): an idle connection holds no list.
            let list = std::mem::take(&mut self.streams);
            if list.capacity() <= 16 {
                keep(&STREAM_LISTS, list);
            }
        }
        true
    }

    /// A stream finished as it should: the flood budget is refilled a little.
    fn finished(&mut self) {
        self.flood = (self.flood + FLOOD_REFILL).min(FLOOD_BUDGET);
    }

    /// Appends the reply's head on `stream` (its fields already HPACK-encoded in `block`);
    /// `end_stream` when no body follows.
    pub(crate) fn send_headers(
        &mut self,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
    ) {
        let max = self.peer_max_frame_size as usize;
        let mut chunks = block.chunks(max.max(1));
        let first = chunks.next().unwrap_or_default();
        let more = block.len() > max;
        let mut f = if end_stream { flags::END_STREAM } else { 0 };
        if !more {
            f |= flags::END_HEADERS;
        }
        frame::write_head(out, first.len(), Kind::Headers, f, stream);
        out.extend_from_slice(first);
        let mut rest = chunks.peekable();
        while let Some(chunk) = rest.next() {
            let last = rest.peek().is_none();
            frame::write_head(
                out,
                chunk.len(),
                Kind::Continuation,
                if last { flags::END_HEADERS } else { 0 },
                stream,
            );
            out.extend_from_slice(chunk);
        }
        if end_stream {
            self.end_local(stream);
        }
    }

    /// Appends as much of `data` as the windows and the peer's frame size allow on `stream`:
    /// the bytes taken (the rest waits for a [`Event::WindowOpened`]). `end_stream` ends the
    /// stream with the last of `data`, once all of it went.
    pub(crate) fn send_data(
        &mut self,
        stream: u32,
        data: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> usize {
        let max = self.peer_max_frame_size as usize;
        let initial = i64::from(self.peer_initial_window);
        let Some(at) = self.stream_at(stream) else {
            return 0;
        };
        let s = &mut self.streams[at];
        let mut sent = 0;
        loop {
            let stream_window = initial + i64::from(s.send_credit);
            let room = stream_window.min(self.send_window).max(0) as usize;
            let n = (data.len() - sent).min(room).min(max);
            let last = sent + n == data.len();
            if n == 0 && !(last && end_stream) {
                break;
            }
            frame::write_head(
                out,
                n,
                Kind::Data,
                if last && end_stream {
                    flags::END_STREAM
                } else {
                    0
                },
                stream,
            );
            out.extend_from_slice(&data[sent..sent + n]);
            s.send_credit = window(i64::from(s.send_credit) - n as i64);
            self.send_window -= n as i64;
            sent += n;
            if last {
                break;
            }
        }
        if sent == data.len() && end_stream {
            self.end_local(stream);
        }
        sent
    }

    /// This side ended `stream`'s reply.
    fn end_local(&mut self, stream: u32) {
        let Some(s) = self.stream_mut(stream) else {
            return;
        };
        match s.state {
            State::HalfClosedRemote => {
                self.remove(stream);
                self.finished();
            }
            _ => s.state = State::HalfClosedLocal,
        }
    }

    /// A graceful stop: GOAWAY with the last stream taken; the streams in flight finish.
    pub(crate) fn go_away(&mut self, out: &mut Vec<u8>) {
        if matches!(
            self.phase,
            Phase::Open | Phase::FirstSettings | Phase::Preface
        ) {
            frame::write_goaway(out, self.last_stream, ErrorCode::NoError);
            self.phase = Phase::GoingAway;
        }
    }

    /// This side ends `stream` with `code` (RST_STREAM): a reply it cannot finish, or — with
    /// NO_ERROR after a complete reply — a request body it no longer wants (RFC 9113 §8.1).
    pub(crate) fn cancel(&mut self, stream: u32, code: ErrorCode, out: &mut Vec<u8>) {
        if self.remove(stream) {
            frame::write_rst_stream(out, stream, code);
            self.finished();
        }
    }

    /// The largest frame the peer takes.
    pub(crate) fn max_frame(&self) -> usize {
        self.peer_max_frame_size as usize
    }

    /// Streams open now.
    pub(crate) fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Heap bytes held.
    pub(crate) fn held_bytes(&self) -> usize {
        self.decoder.held_bytes()
            + self.streams.capacity() * std::mem::size_of::<Stream>()
            + self.lengths.capacity() * std::mem::size_of::<(u32, u64)>()
            + self.stream_index.held_bytes()
            + self.length_index.held_bytes()
            + self.fragments.capacity()
    }
}

#[cfg(test)]
mod tests;
