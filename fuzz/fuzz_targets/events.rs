//! Shared by the decoder targets: every event a decoder gives for input fed in `pieces`, and
//! the close code it ended with, if any.
use web::ws::{Decoder, Event};

pub fn events(mut d: Decoder, pieces: &[&[u8]]) -> (Vec<Event>, Option<u16>) {
    let mut seen = Vec::new();
    for piece in pieces {
        let mut rest = *piece;
        while !rest.is_empty() {
            match d.next(rest) {
                Ok((used, event)) => {
                    seen.extend(event);
                    if used == 0 {
                        break;
                    }
                    rest = &rest[used..];
                }
                Err(broken) => return (seen, Some(broken.code())),
            }
        }
    }
    (seen, None)
}
