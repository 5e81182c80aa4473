//! The client's reply parsing: never a panic, and the helpers agree with the head parser.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::http::{content_length, parse_reply_head, response_body, status_of};

fuzz_target!(|data: &[u8]| {
    let head = parse_reply_head(data);
    let _ = content_length(data);
    let _ = response_body(data);
    if let Ok(Some(head)) = head {
        assert!(head.len <= data.len());
        assert_eq!(status_of(data), Some(head.status));
    }
});
