//! The route pattern a request matched, kept for whoever asked before its handler ran (the
//! server's access log): a worker-local string written only when asked, so a server without
//! an access log pays one flag read per routed request, and one with a log no allocation once
//! the string has grown to its longest pattern.

use std::cell::{Cell, RefCell};

thread_local! {
    static ASKED: Cell<bool> = const { Cell::new(false) };
    static PATTERN: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The route matched on this thread from now on is to be kept, until [`stop`].
pub(crate) fn ask() {
    ASKED.set(true);
    PATTERN.with_borrow_mut(String::clear);
}

/// No route is kept from now on; what was is still read by [`with`].
pub(crate) fn stop() {
    ASKED.set(false);
}

/// A router matched `pattern` (the last one matched wins, as the innermost router answers).
pub(crate) fn matched(pattern: &str) {
    if ASKED.get() {
        PATTERN.with_borrow_mut(|p| {
            p.clear();
            p.push_str(pattern);
        });
    }
}

/// `f` of the pattern kept since the last [`ask`] (`""`: no route matched).
pub(crate) fn with<T>(f: impl FnOnce(&str) -> T) -> T {
    PATTERN.with_borrow(|p| f(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_kept_only_when_asked_and_until_the_next_ask() {
        matched("/unasked");
        ask();
        assert_eq!(with(str::to_owned), "");
        matched("/orders/:id");
        stop();
        matched("/after/the/stop");
        assert_eq!(with(str::to_owned), "/orders/:id");
        ask();
        assert_eq!(with(str::to_owned), "");
        stop();
    }
}
