//! permessage-deflate in the message decoder (both roles): arbitrary bytes as a compressed
//! message's data and as raw frames — never a panic, never a message over the limit, the same
//! events whether fed whole or in two pieces; and any input, compressed by zlib, comes back
//! as it was.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::ws::{write_frame, Decoder, Event, Role};

const MAX: usize = 1 << 12;

#[path = "events.rs"]
mod events;

/// The events, each message checked to be within the limit.
fn events(role: Role, pieces: &[&[u8]]) -> (Vec<Event>, Option<u16>) {
    let (seen, code) = events::events(Decoder::deflating(role, MAX), pieces);
    for e in &seen {
        if let Event::Text(t) = e {
            assert!(t.len() <= MAX);
        }
        if let Event::Binary(b) = e {
            assert!(b.len() <= MAX);
        }
    }
    (seen, code)
}

fn frame(role: Role, first: u8, payload: &[u8]) -> Vec<u8> {
    let mask = (role == Role::Server).then_some([1, 2, 3, 4]);
    let mut out = Vec::new();
    write_frame(&mut out, first, payload, mask);
    out
}

fn compress(data: &[u8]) -> Vec<u8> {
    let mut c = zlib_rs::Deflate::new(6, false, 15);
    let mut out = vec![0u8; data.len() + data.len() / 100 + 64];
    c.compress(data, &mut out, zlib_rs::DeflateFlush::SyncFlush)
        .expect("room for the worst case");
    out.truncate(c.total_out() as usize);
    out.truncate(out.len() - 4); // the tail a peer leaves off
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let role = if pick & 1 == 0 { Role::Server } else { Role::Client };
    let split = usize::from(pick) * input.len() / 256;
    // The input as raw frames.
    let whole = events(role, &[input]);
    assert_eq!(whole, events(role, &[&input[..split], &input[split..]]), "split at {split}");
    // The input as a compressed binary message's data.
    let wire = frame(role, 0xc2, input);
    let whole = events(role, &[&wire]);
    let cut = split.min(wire.len());
    assert_eq!(whole, events(role, &[&wire[..cut], &wire[cut..]]));
    // The input compressed: it comes back, or is refused as too big.
    let wire = frame(role, 0xc2, &compress(input));
    match events(role, &[&wire]) {
        (seen, None) => assert_eq!(seen, vec![Event::Binary(input.to_vec())]),
        (_, Some(code)) => assert!(code == 1009 && input.len() > MAX, "{code}"),
    }
});
