//! A Server-Sent Events stream kept inside the reactor: the HTTP connection whose request an
//! [`SseHandler`] accepted becomes this strand in the same slab entry.
//!
//! The body is delimited by the connection's close (`Connection: close`, no length, no
//! chunking), so an event's bytes are the same for every stream: a room's publish is encoded
//! once and each member's output holds the same shared bytes. An idle stream holds no buffer:
//! output exists only while the peer has not taken it, under the same rules as WebSocket
//! output (the server's output budget, [`WS_MAX_BACKLOG`](crate::ws::WS_MAX_BACKLOG), the write
//! timeout). What the client sends is read and dropped; its end of stream ends the stream.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use reactor::{ConnId, Io, Remote, Then};

use super::app::{Sse, SseHandler};
use crate::http::event_stream::HEARTBEAT;
use crate::http::{Request, Response};
use crate::live::{
    Command, LiveConn, LiveSettings, Outbox, OutputBudget, Timeouts, Watch, drop_unread,
    linger_until, send_alone, write_out,
};
use crate::rooms::{Delivery, Forms, Joined, Joining, Seat, history_back, join_back, leave_all};

/// An event-stream route's application, whatever its handler type.
pub(crate) trait SseApp: Send + Sync {
    /// The application's decision on a request for the stream: the connection to become, or
    /// the response that refuses it.
    fn accept(
        &self,
        req: &Request,
        settings: &Arc<LiveSettings>,
        remote: &Remote<Command>,
    ) -> Result<Box<dyn LiveConn>, Response>;
}

/// A route's application: its handler and, from the first stream on, what every stream of the
/// route shares.
pub(crate) struct SseRoute<H> {
    handler: Arc<H>,
    endpoint: OnceLock<Arc<Endpoint<H>>>,
    /// What a callback that holds its worker is reported as: the route's method and path.
    label: Arc<str>,
}

impl<H> SseRoute<H> {
    /// The application of the route at `path`.
    pub(crate) fn new(handler: H, path: &str) -> SseRoute<H> {
        SseRoute {
            handler: Arc::new(handler),
            endpoint: OnceLock::new(),
            label: format!("GET {path} (event stream)").into(),
        }
    }
}

/// What the streams of one route share: the handler, the server's settings and remote.
struct Endpoint<H> {
    handler: Arc<H>,
    settings: Arc<LiveSettings>,
    remote: Remote<Command>,
    label: Arc<str>,
}

impl<H: SseHandler> SseApp for SseRoute<H> {
    fn accept(
        &self,
        req: &Request,
        settings: &Arc<LiveSettings>,
        remote: &Remote<Command>,
    ) -> Result<Box<dyn LiveConn>, Response> {
        let state = self.handler.accept(req)?;
        let endpoint = self.endpoint.get_or_init(|| {
            Arc::new(Endpoint {
                handler: Arc::clone(&self.handler),
                settings: Arc::clone(settings),
                remote: remote.clone(),
                label: Arc::clone(&self.label),
            })
        });
        Ok(Box::new(SseStrand {
            member: Some(Member {
                endpoint: Arc::clone(endpoint),
                state,
            }),
            joined: Joined::default(),
            busy: None,
        }))
    }
}

/// A stream in the reactor: idle, three pointers and the application's state.
struct SseStrand<H: SseHandler> {
    /// The application's side, `None` once its state was handed back (the stream is ending).
    member: Option<Member<H>>,
    /// The rooms the stream is in.
    joined: Joined,
    /// `None` while idle: nothing to write, no timer.
    busy: Option<Box<Busy>>,
}

struct Member<H: SseHandler> {
    endpoint: Arc<Endpoint<H>>,
    state: H::State,
}

thread_local! {
    /// The heartbeat's bytes, shared by every stream of the worker.
    static BEAT: Arc<[u8]> = HEARTBEAT.into();
}

/// Where a stream stands in ending, in the order it goes through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Sending events.
    Open,
    /// Ends once what is queued is written (the application, the server or its stop asked).
    Ending,
    /// Ended: our side is shut; what the client still sends is read and dropped until it
    /// closes (or the linger time passes).
    Shut,
}

/// What a stream keeps while it has something to do.
struct Busy {
    out: Outbox,
    stage: Stage,
    /// When the socket must have taken some output.
    deadline: Option<Instant>,
    joining: Joining,
}

impl Busy {
    /// The stream is to end once its output is written (if it is not ending already).
    fn end(&mut self) {
        if self.stage == Stage::Open {
            self.stage = Stage::Ending;
        }
    }

    fn is_done(&self) -> bool {
        self.stage == Stage::Open
            && self.deadline.is_none()
            && self.joining.is_empty()
            && self.out.pending() == 0
            && self.out.held_bytes() == 0
    }
}

impl<H: SseHandler> SseStrand<H> {
    /// The busy part, made if the stream was idle.
    fn b(&mut self) -> &mut Busy {
        let budget = self.member.as_ref().map(|m| &m.endpoint.settings.budget);
        self.busy.get_or_insert_with(|| {
            let budget = budget.map_or_else(|| OutputBudget::new(usize::MAX), Arc::clone);
            Box::new(Busy {
                out: Outbox::new(budget),
                stage: Stage::Open,
                deadline: None,
                joining: Joining::default(),
            })
        })
    }

    fn pending(&self) -> usize {
        self.busy.as_ref().map_or(0, |b| b.out.pending())
    }

    fn ending(&self) -> bool {
        self.busy.as_ref().is_some_and(|b| b.stage != Stage::Open)
    }

    fn shut(&self) -> bool {
        self.busy.as_ref().is_some_and(|b| b.stage == Stage::Shut)
    }

    /// Runs `f` with the stream as a callback sees it; a close it asked for ends the stream.
    fn with_sse(
        &mut self,
        id: ConnId,
        now: Instant,
        f: impl FnOnce(&H, &mut Sse<'_>, &mut H::State),
    ) {
        let _ = self.b();
        let (Some(member), Some(busy)) = (self.member.as_mut(), self.busy.as_deref_mut()) else {
            return;
        };
        let endpoint = &*member.endpoint;
        let mut close = busy.stage != Stage::Open;
        let mut sse = Sse {
            out: &mut busy.out,
            close: &mut close,
            remote: &endpoint.remote,
            seat: Seat {
                id,
                rooms: &endpoint.settings.rooms,
                joined: &mut self.joined,
                joining: &mut busy.joining,
                max_rooms: endpoint.settings.max_rooms,
            },
        };
        // Timed: a callback holds its worker as an HTTP handler does.
        let watch = Watch::start(&endpoint.settings.stalls, now);
        f(&endpoint.handler, &mut sse, &mut member.state);
        let stalls = &endpoint.settings.stalls;
        watch.stop(stalls, id.worker() as usize, || &endpoint.label);
        if close {
            busy.end();
        }
    }

    /// The stream ended: it leaves its rooms and the application gets its state back (once).
    fn tell(&mut self, id: ConnId) {
        let Some(Member { endpoint, state }) = self.member.take() else {
            return;
        };
        let joining = self.busy.as_deref().map(|b| &b.joining);
        leave_all(&mut self.joined, joining, &endpoint.settings.rooms, id);
        endpoint.settings.streams.fetch_sub(1, Ordering::Relaxed);
        endpoint.handler.close(id, state);
    }

    /// Writes what is queued, reads (and drops) what the client sent, and parks.
    fn run(&mut self, io: &mut Io<'_, Command>) -> Then {
        let mut progressed = false;
        let timeouts = self.timeouts();
        if let Some(busy) = self.busy.as_deref_mut() {
            // An ending body shuts our side once all is written: not behind a gathered send.
            let gather = busy.stage != Stage::Ending;
            let written = write_out(&mut busy.out, io, &mut progressed, gather);
            busy.out.reconcile();
            // Checked as output is queued (a history replay at the start, say), not only when
            // more arrives.
            if written.is_ok() && busy.out.falls_behind() {
                self.tell(io.id());
                return Then::Close;
            }
            match written {
                Err(_) => {
                    self.tell(io.id());
                    return Then::Close;
                }
                Ok(true) if busy.stage == Stage::Ending => {
                    // The body ends where the connection does: our side is shut, and what
                    // the client still sends is read and dropped until it closes, or until
                    // it has all we sent (see `linger_until`).
                    busy.stage = Stage::Shut;
                    let stopping = io.remote().is_shutting_down();
                    busy.deadline = Some(io.now() + timeouts.now(stopping).linger);
                    self.tell(io.id());
                    if io.shutdown_write().is_err() {
                        return Then::Close;
                    }
                }
                Ok(_) => {}
            }
        }
        if (io.read_ready() || self.shut()) && !drop_unread(io) {
            self.tell(io.id());
            return Then::Close;
        }
        match self.busy.as_ref() {
            Some(b) if b.stage == Stage::Shut => {
                linger_until(io, b.deadline.unwrap_or_else(|| io.now()))
            }
            _ => self.park(io.now(), progressed),
        }
    }

    /// The server's timeouts (the defaults once the application's side is gone).
    fn timeouts(&self) -> Timeouts {
        self.member
            .as_ref()
            .map_or_else(Timeouts::default, |m| m.endpoint.settings.timeouts)
    }

    fn park(&mut self, now: Instant, progressed: bool) -> Then {
        let write_timeout = self.timeouts().write;
        let Some(busy) = self.busy.as_deref_mut() else {
            return Then::read();
        };
        let write = busy.out.pending() > 0;
        if !write {
            busy.deadline = None;
        } else if progressed || busy.deadline.is_none() {
            busy.deadline = Some(now + write_timeout);
        }
        let next = Then::Park {
            read: true,
            write,
            deadline: busy.deadline,
        };
        if busy.is_done() {
            self.busy = None;
        }
        next
    }

    /// Whether the client is so far behind that the stream is to be dropped (as a WebSocket
    /// peer would be; see [`Outbox::falls_behind`]).
    fn falls_behind(&self) -> bool {
        self.busy.as_ref().is_some_and(|b| b.out.falls_behind())
    }
}

impl<H: SseHandler> LiveConn for SseStrand<H> {
    fn start(&mut self, io: &mut Io<'_, Command>, out: Vec<u8>, _early: &[u8]) -> Then {
        self.b().out.push_own(out);
        if let Some(member) = &self.member {
            member
                .endpoint
                .settings
                .streams
                .fetch_add(1, Ordering::Relaxed);
        }
        if let Some(every) = self
            .member
            .as_ref()
            .and_then(|m| m.endpoint.settings.ping_interval)
        {
            // The client sends nothing: the kernel tells a peer gone from heartbeats that go
            // unacknowledged (best effort: a failure leaves the connection as it was).
            let _ = io.give_up_unacknowledged_after(every * 2);
        }
        let id = io.id();
        self.with_sse(id, io.now(), |handler, sse, state| handler.open(sse, state));
        if io.remote().is_shutting_down() {
            self.b().end();
        }
        self.run(io)
    }

    fn resume(&mut self, io: &mut Io<'_, Command>, timeout: bool) -> Then {
        if timeout && self.shut() {
            // Looked at again each tick until the client has all (see `linger_until`).
            return self.run(io);
        }
        if timeout {
            // The client took no output for the write timeout (or lingered past our end).
            self.tell(io.id());
            return Then::Close;
        }
        self.run(io)
    }

    fn message(&mut self, io: &mut Io<'_, Command>, cmd: Command) -> Then {
        if self.shut() {
            return self.run(io);
        }
        let behind = self.pending() > 0;
        if !self.ending() {
            match cmd {
                Command::Event(event)
                | Command::Room(Delivery::Publish {
                    forms:
                        Forms {
                            event: Some(event), ..
                        },
                    ..
                }) => match send_alone(self.busy.is_none(), io, event) {
                    None => {}
                    Some((event, 0)) => self.b().out.push_shared(&event),
                    Some((event, sent)) => self.b().out.put_back_shared(event, sent),
                },
                Command::Heartbeat if !behind => {
                    let out = &mut self.b().out;
                    let _ = BEAT.try_with(|beat| out.push_shared(beat));
                }
                Command::Close(_) => self.b().end(),
                Command::Room(Delivery::Join(room)) => {
                    if let Some(member) = &self.member {
                        let joining = self.busy.as_deref_mut().map(|b| &mut b.joining);
                        let rooms = &member.endpoint.settings.rooms;
                        join_back(joining, &self.joined, rooms, &room, io.id());
                    }
                }
                Command::Room(Delivery::History(came)) => {
                    self.b();
                    if let Some(b) = self.busy.as_deref_mut() {
                        let out = &mut b.out;
                        history_back(Some(&mut b.joining), &self.joined, &came, |line| {
                            out.push_shared(&line.event)
                        });
                    }
                }
                // WebSocket frames and binary messages are not for an event stream.
                _ => {}
            }
        }
        if behind {
            self.b().out.reconcile();
        }
        if self.falls_behind() {
            self.tell(io.id());
            return Then::Close;
        }
        if self.ending() {
            return self.run(io);
        }
        // Written at the end of the worker's turn, with whatever else the turn brings.
        self.park(io.now(), false)
    }

    fn drain(&mut self, io: &mut Io<'_, Command>) -> Then {
        if self.shut() {
            return self.run(io);
        }
        self.b().end();
        self.run(io)
    }

    fn unsent(&mut self, io: &mut Io<'_, Command>, frame: Arc<[u8]>, from: usize) -> Then {
        self.b().out.put_back_shared(frame, from);
        self.run(io)
    }

    fn closed(&mut self, id: ConnId) {
        self.tell(id);
    }

    fn held_bytes(&self) -> usize {
        self.joined.held_bytes()
            + self.busy.as_ref().map_or(0, |b| {
                std::mem::size_of::<Busy>() + b.out.held_bytes() + b.joining.held_bytes()
            })
    }

    fn wants(&self, msg: &Command) -> bool {
        matches!(msg, Command::Heartbeat)
    }

    fn sends_only(&self) -> bool {
        true
    }
}
