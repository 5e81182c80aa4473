//! This worker thread's server: set when the worker opens a connection, read by its HTTP
//! strands on every resume — so that a connection's slab entry need not hold a pointer to
//! what every connection of the worker shares.

use std::cell::RefCell;
use std::sync::Arc;

use super::shared::ServerShared;

thread_local! {
    static SERVER: RefCell<Option<Arc<ServerShared>>> = const { RefCell::new(None) };
}

/// This thread serves `shared`'s connections (called on the worker's thread).
pub(crate) fn install(shared: &Arc<ServerShared>) {
    SERVER.with_borrow_mut(|s| {
        if !s.as_ref().is_some_and(|have| Arc::ptr_eq(have, shared)) {
            *s = Some(Arc::clone(shared));
        }
    });
}

/// Runs `f` with this worker's server; `None` on a thread that serves none (a strand is only
/// ever resumed on the worker that opened it, after [`install`]).
pub(crate) fn with<T>(f: impl FnOnce(Option<&ServerShared>) -> T) -> T {
    SERVER.with_borrow(|s| f(s.as_deref()))
}
