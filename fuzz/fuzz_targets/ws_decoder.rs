//! The WebSocket frame-head parser and message decoder (both roles): never a panic; fed in two
//! pieces the decoder gives the same events as fed whole.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::ws::{parse_frame_head, Decoder, Role};

fn events(role: Role, pieces: &[&[u8]]) -> (Vec<String>, Option<u16>) {
    let mut d = Decoder::new(role, 1 << 12);
    let mut seen = Vec::new();
    for piece in pieces {
        let mut rest = *piece;
        while !rest.is_empty() {
            match d.next(rest) {
                Ok((used, event)) => {
                    if let Some(e) = event {
                        seen.push(format!("{e:?}"));
                    }
                    if used == 0 {
                        break;
                    }
                    rest = &rest[used..];
                }
                Err(code) => return (seen, Some(code)),
            }
        }
    }
    (seen, None)
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
