//! Entry points of the fuzz targets that reach inside the library (built only under
//! `cargo fuzz`, which sets `--cfg fuzzing`).

/// Plays the steps `data` describes on a server's rooms and checks them against a model after
/// each (see `rooms/check.rs`).
pub fn rooms(data: &[u8]) {
    crate::rooms::check::run(&crate::rooms::check::Op::decode(data));
}

/// Reads `data` as HTTP/2 frames one after another, and every header block in them through
/// one HPACK decoder: never a panic, the decoder's table within its bound, and every
/// Huffman-coded string re-encoded and decoded back the same.
pub fn h2_frames(data: &[u8]) {
    use crate::h2::frame::{self, Frame, HEAD_LEN, Head, MIN_MAX_FRAME_SIZE};
    use crate::h2::hpack::{Decoder, Scratch};
    let Some((&limit, mut rest)) = data.split_first() else {
        return;
    };
    let limit = usize::from(limit) * 16;
    let mut decoder = Decoder::new(limit);
    let mut scratch = Scratch::default();
    while let Some(head) = Head::parse(rest) {
        let Some(payload) = rest.get(HEAD_LEN..HEAD_LEN + head.len as usize) else {
            return;
        };
        rest = &rest[HEAD_LEN + payload.len()..];
        match frame::parse(&head, payload, MIN_MAX_FRAME_SIZE) {
            Ok(Frame::Headers { block, .. } | Frame::Continuation { block, .. }) => {
                let mut listed = 0usize;
                if decoder
                    .decode(block, &mut scratch, |n, v| listed += n.len() + v.len())
                    .is_err()
                {
                    // The table may be out of step now: a new connection's decoder.
                    decoder = Decoder::new(limit);
                }
                assert!(decoder.held_bytes() <= limit * 2 + 4096);
            }
            Ok(Frame::Settings { params, .. }) => {
                let _ = frame::settings(params).count();
            }
            _ => {}
        }
    }
}
