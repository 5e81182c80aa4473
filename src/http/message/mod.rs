//! The specification's three message types — [`Header`], [`Request`], [`Response`] — the
//! response builders, the per-thread pools buffers are recycled through, and the codecs of
//! messages: the strict request-head parser (head.rs), the field rules (fields.rs), chunked
//! bodies (chunked.rs), replies (reply.rs), rendering (render.rs), parse_request.

mod caller;
pub(crate) mod chunked;
pub(crate) mod fields;
pub(crate) mod head;
mod header;
mod params;
pub(crate) mod parse_request;
pub(crate) mod pool;
pub(crate) mod render;
pub(crate) mod reply;
mod request;
mod response;
mod rules;
pub(crate) mod text;

pub(crate) use caller::{Caller, Proxies, forwarded};
pub use header::{Header, HeaderRef, InvalidHeader, header, header_in};
pub use request::{Headers, Request};
pub(crate) use request::{Line, Span};
pub use response::{
    Body, HTML, JSON, Response, TEXT, html_response, json_response, set_cookie, text_response,
    try_with_header, with_header,
};
pub(crate) use rules::ReplyRules;
