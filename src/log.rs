//! What the library has to say — a refusal, a failed handshake, a lagging peer closed, a
//! stalled worker — goes out as [`tracing`](https://docs.rs/tracing) events with the `tracing`
//! feature (on by default), target `web`; the library never prints. Without the feature the
//! events compile to nothing, their arguments only type-checked.
//!
//! One macro per level, `name = value` fields (any `Display`) then a message:
//!
//! ```ignore
//! crate::log::warning!(status = 431, peer = addr; "request refused: {}", reason);
//! ```
//!
//! Nothing is emitted per request on the fast path: only on errors, refusals and the ends of
//! long-lived connections, at levels a production log keeps (`warn` for what an operator acts
//! on, `info` for a peer's misbehaviour, `debug` for ordinary ends).

/// Emits one event at `$level`; see the module's documentation.
macro_rules! event {
    ($level:ident, $($key:ident = $value:expr),* ; $($message:tt)+) => {{
        #[cfg(feature = "tracing")]
        ::tracing::event!(
            target: "web",
            ::tracing::Level::$level,
            $($key = ::tracing::field::display(&$value),)*
            $($message)+
        );
        #[cfg(not(feature = "tracing"))]
        if false {
            $(let _ = &$value;)*
            let _ = format_args!($($message)+);
        }
    }};
}

/// What an operator acts on: a stalled worker, a failing Redis, descriptors running out.
macro_rules! warning {
    ($($t:tt)+) => { $crate::log::event!(WARN, $($t)+) };
}

/// A peer's misbehaviour, met and handled: a refusal, a failed TLS handshake, a lagging member
/// closed.
macro_rules! info {
    ($($t:tt)+) => { $crate::log::event!(INFO, $($t)+) };
}

/// Ordinary ends worth seeing while debugging.
macro_rules! debug {
    ($($t:tt)+) => { $crate::log::event!(DEBUG, $($t)+) };
}

#[allow(unused_imports)] // each is used where the feature set has something to say
pub(crate) use {debug, event, info, warning};

#[cfg(test)]
mod tests {
    #[test]
    fn events_compile_with_fields_and_without() {
        let status = 431;
        super::warning!(status = status, peer = "127.0.0.1:9"; "refused: {}", "head too large");
        super::info!(; "nothing to add");
        super::debug!(took_ms = 5u64; "done");
    }
}
