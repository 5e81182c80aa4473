//! The WebSocket frame-head parser and message decoder (both roles): never a panic; fed in two
//! pieces the decoder gives the same events as fed whole.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::ws::{parse_frame_head, Decoder, Role};

#[path = "events.rs"]
mod events;

fn events(role: Role, pieces: &[&[u8]]) -> (Vec<web::ws::Event>, Option<u16>) {
    events::events(Decoder::new(role, 1 << 12), pieces)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let role = if pick & 1 == 0 { Role::Server } else { Role::Client };
    let _ = parse_frame_head(input, role);
    let split = usize::from(pick) * input.len() / 256;
    let whole = events(role, &[input]);
    let split_up = events(role, &[&input[..split], &input[split..]]);
    assert_eq!(whole, split_up, "split at {split}");
});
