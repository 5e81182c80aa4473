//! A connection's unwritten output: rendered replies in one buffer (taken from a per-worker pool
//! while there is something to write, given back when all of it is written) and, after them, a
//! large body written from its own buffer so it is never copied.

use std::cell::RefCell;
use std::io::IoSlice;

use reactor::Io;

use crate::http::Body;
use crate::http::message::pool::{self, POOL_BUFFER_MAX};
use crate::live::Command;

thread_local! {
    /// Output buffers of finished replies, reused so a busy connection does not allocate one per
    /// request and an idle one holds none.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Empties this thread's output buffer pool (a worker with no connection left keeps none).
pub(crate) fn clear_pool() {
    pool::empty(&POOL);
}

/// What a connection still has to write.
#[derive(Default)]
pub(crate) struct Output {
    /// Rendered replies; written from `out_at` on.
    out: Vec<u8>,
    out_at: usize,
    /// A large body to write after `out`, from `body_at` on.
    body: Body,
    body_at: usize,
}

impl Output {
    /// Whether anything is left to write.
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        self.out_at < self.out.len() || self.body_at < self.body.len()
    }

    /// Bytes left to write.
    pub(crate) fn pending(&self) -> usize {
        (self.out.len() - self.out_at) + (self.body.len() - self.body_at)
    }

    /// Whether a large body is still being written (reading pauses meanwhile: backpressure).
    pub(crate) fn writing_body(&self) -> bool {
        self.body_at < self.body.len()
    }

    /// The buffer replies are rendered into (a pooled one when this had none), and how much of
    /// it is already written.
    #[inline]
    pub(crate) fn buffer(&mut self) -> (&mut Vec<u8>, usize) {
        if self.out.capacity() == 0 {
            self.out = pool::reuse(&POOL).unwrap_or_default();
        }
        (&mut self.out, self.out_at)
    }

    /// Drops the written front of the buffer once it is at least as long as what is left, so
    /// a buffer that is appended to while it drains (a streamed body) stays within about twice
    /// what is pending; each byte is moved at most once on average.
    pub(crate) fn compact(&mut self) {
        if self.out_at > 0 && self.out_at >= self.out.len() - self.out_at {
            self.out.drain(..self.out_at);
            self.out_at = 0;
        }
    }

    /// Queues a large body after what is rendered.
    pub(crate) fn set_body(&mut self, body: Body) {
        self.body = body;
        self.body_at = 0;
    }

    /// Writes what is pending: `Ok(true)` when all of it went, `Ok(false)` when the socket is
    /// full. Sets `progressed` when any byte went.
    #[inline]
    pub(crate) fn flush(
        &mut self,
        io: &mut Io<'_, Command>,
        progressed: &mut bool,
    ) -> std::io::Result<bool> {
        while self.has_pending() {
            let n = if self.body_at == self.body.len() {
                // One buffer: a plain write costs the kernel less than writev.
                io.write(&self.out[self.out_at..])?
            } else {
                io.write_vectored(&[
                    IoSlice::new(&self.out[self.out_at..]),
                    IoSlice::new(&self.body[self.body_at..]),
                ])?
            };
            if n == 0 {
                return Ok(false);
            }
            *progressed = true;
            let from_out = n.min(self.out.len() - self.out_at);
            self.out_at += from_out;
            self.body_at += n - from_out;
        }
        self.release();
        Ok(true)
    }

    /// Gives the buffers back once everything is written.
    #[inline]
    fn release(&mut self) {
        if self.out.capacity() == 0 && self.body.is_empty() && self.body.held_bytes() == 0 {
            return; // nothing held (an idle connection's output): nothing to give back
        }
        self.out_at = 0;
        self.body_at = 0;
        self.body = Body::default();
        let mut out = std::mem::take(&mut self.out);
        if out.capacity() > 0 && out.capacity() <= POOL_BUFFER_MAX {
            out.clear();
            pool::keep(&POOL, out);
        }
    }

    /// The rendered bytes not yet written (what a connection turning WebSocket still owes).
    pub(crate) fn take_unwritten(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.out);
        out.drain(..self.out_at);
        self.out_at = 0;
        out
    }

    /// Heap bytes held.
    pub(crate) fn held_bytes(&self) -> usize {
        self.out.capacity() + self.body.held_bytes()
    }
}
