//! The specification's three message types — [`Header`], [`Request`], [`Response`] — the
//! response builders, and the per-thread pool request buffers are recycled through.

mod header;
pub(crate) mod pool;
mod request;
mod response;

pub use header::{Header, HeaderRef, InvalidHeader, header, header_in};
pub use request::{Headers, Request};
pub(crate) use request::{Line, Span};
pub use response::{
    Body, HTML, JSON, Response, TEXT, html_response, json_response, set_cookie, text_response,
    try_with_header, with_header,
};
