//! The fleet's Redis replies: any bytes framed as a connection frames them (bounded before
//! anything is decoded), then read as a cluster's map, a redirection (`MOVED`, `ASK`,
//! `TRYAGAIN`) and a pushed message of (sharded) pub/sub.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    web::fuzzing::redis_replies(data);
});
