//! The per-thread pool of request storage: a request's [`Parts`] (one box: its buffer, its
//! header lines and the positions of its parts) go back to the pool of the thread that drops
//! the request, and the next request parsed there takes them again, so a server worker in
//! steady state allocates nothing per request. A `Request` is the pointer to its parts: moving
//! one (parser to dispatch to handler) copies eight bytes.
//!
//! The pool is small and keeps only small buffers ([`POOL_BUFFERS`] of at most
//! [`POOL_BUFFER_MAX`] bytes), so what a burst of large requests grew is given back to the
//! allocator, and an idle worker holds at most a few kilobytes here.

use std::cell::RefCell;
use std::thread::LocalKey;

use super::request::{Line, Span};

/// Buffers each thread keeps for reuse, in each of its pools (request parts here, output
/// buffers in `server/output.rs`).
pub(crate) const POOL_BUFFERS: usize = 4;
/// The largest buffer kept for reuse (bytes of a request's head and body, or of rendered
/// output): so a worker keeps at most 64 KiB per pool.
pub(crate) const POOL_BUFFER_MAX: usize = 16 * 1024;
/// The most header lines a kept buffer has room for.
const POOL_LINES_MAX: usize = 128;

/// A thread's pool of buffers for reuse: the one policy of every such pool of the library.
pub(crate) type ThreadPool<T> = LocalKey<RefCell<Vec<T>>>;

/// A pooled buffer, if this thread has one (none during the thread's teardown).
#[inline]
pub(crate) fn reuse<T>(pool: &'static ThreadPool<T>) -> Option<T> {
    pool.try_with(|p| p.borrow_mut().pop()).ok().flatten()
}

/// Keeps `buffer` for reuse if the pool has room (the caller keeps only buffers of at most
/// [`POOL_BUFFER_MAX`] bytes); else, or during the thread's teardown, it is simply freed.
#[inline]
pub(crate) fn keep<T>(pool: &'static ThreadPool<T>, buffer: T) {
    let _ = pool.try_with(|p| {
        let mut pool = p.borrow_mut();
        if pool.len() < POOL_BUFFERS {
            pool.push(buffer);
        }
    });
}

/// Empties the pool (a worker with no connection left keeps none).
pub(crate) fn empty<T>(pool: &'static ThreadPool<T>) {
    let _ = pool.try_with(|p| *p.borrow_mut() = Vec::new());
}

/// A request's storage: its bytes (head as received, then the body), the positions of its
/// header lines in them, and where its method, target and body lie.
#[derive(Clone, Debug, Default)]
pub(crate) struct Parts {
    pub(crate) bytes: Vec<u8>,
    pub(crate) lines: Vec<Line>,
    pub(crate) method: Span,
    pub(crate) target: Span,
    pub(crate) body: Span,
    pub(crate) caller: super::Caller,
    /// The route the request was matched to (its pattern, copied to `bytes`), and its path
    /// parameters: where each name (copied) and value (in the target) lie.
    pub(crate) route: Span,
    pub(crate) params: Vec<(Span, Span)>,
}

impl Parts {
    /// Heap bytes held, the box itself included.
    pub(crate) fn held_bytes(&self) -> usize {
        std::mem::size_of::<Parts>()
            + self.bytes.capacity()
            + self.lines.capacity() * std::mem::size_of::<Line>()
            + self.params.capacity() * std::mem::size_of::<(Span, Span)>()
    }
}

thread_local! {
    // The boxes themselves are what is reused: a request is the pointer to its parts, so a
    // pooled box is handed out as it is, without allocating one.
    #[allow(clippy::vec_box)]
    static POOL: RefCell<Vec<Box<Parts>>> = const { RefCell::new(Vec::new()) };
}

/// Empty parts: pooled ones when this thread has some.
#[inline]
pub(crate) fn take() -> Box<Parts> {
    reuse(&POOL).unwrap_or_default()
}

/// Empties this thread's pool (a worker with no connection left keeps none).
pub(crate) fn clear() {
    empty(&POOL);
}

/// Gives parts back to this thread's pool (or to the allocator when their buffer is large or
/// was never allocated, or the pool is full).
#[inline]
pub(crate) fn give(mut buf: Box<Parts>) {
    let worth_keeping = buf.bytes.capacity() > 0
        && buf.bytes.capacity() <= POOL_BUFFER_MAX
        && buf.lines.capacity() <= POOL_LINES_MAX
        && buf.params.capacity() <= POOL_LINES_MAX;
    if !worth_keeping {
        return;
    }
    buf.bytes.clear();
    buf.lines.clear();
    buf.method = Span::default();
    buf.target = Span::default();
    buf.body = Span::default();
    buf.caller = super::Caller::default();
    buf.route = Span::default();
    buf.params.clear();
    keep(&POOL, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_buffers_come_back_and_large_ones_do_not() {
        std::thread::spawn(|| {
            let mut small = take();
            small.bytes.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
            let ptr = small.bytes.as_ptr();
            give(small);
            let again = take();
            assert_eq!(again.bytes.as_ptr(), ptr, "the same buffer is reused");
            assert!(again.bytes.is_empty() && again.lines.is_empty());

            let mut large = take();
            large.bytes.resize(POOL_BUFFER_MAX + 1, 0);
            give(large);
            assert_eq!(take().bytes.capacity(), 0, "a large buffer is not kept");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_pool_is_bounded() {
        std::thread::spawn(|| {
            for _ in 0..POOL_BUFFERS * 2 {
                let mut b = Box::<Parts>::default();
                b.bytes.reserve(64);
                give(b);
            }
            let kept = POOL.with(|p| p.borrow().len());
            assert_eq!(kept, POOL_BUFFERS);
        })
        .join()
        .unwrap();
    }
}

/// Pushes `item`, growing `list` by an eighth of its length (at least 4) when full rather than
/// doubling it: a list held as long as its connection (an HTTP/2 connection's streams, which
/// may be hundreds of idle event streams) stays within an eighth of what it holds.
pub(crate) fn push_thrifty<T>(list: &mut Vec<T>, item: T) {
    if list.len() == list.capacity() {
        list.reserve_exact((list.len() / 8).max(4));
    }
    list.push(item);
}

#[cfg(test)]
mod thrifty_tests {
    #[test]
    fn a_list_pushed_one_at_a_time_keeps_within_an_eighth_of_its_length_or_four() {
        let mut list = Vec::new();
        for i in 0..1000usize {
            super::push_thrifty(&mut list, i);
            assert!(
                list.capacity() <= list.len() + (list.len() / 8).max(4),
                "{i}"
            );
        }
        assert_eq!(list.len(), 1000);
    }
}
