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

/// One HTTP/2 connection fed the preface and then `data` in pieces of the sizes its first
/// bytes choose, each request answered at once with a small body: never a panic, the output
/// owed never far past its bound, nothing read after a connection error, and the state held
/// within its bounds.
pub fn h2_connection(data: &[u8]) {
    use crate::h2::conn::{Config, Conn, Event, OUTPUT_HIGH, PREFACE, Scratch};
    use crate::h2::hpack::encoder;
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let piece = usize::from(split % 64) + 1;
    let mut conn = Conn::new(Config::default());
    let mut out = Vec::new();
    conn.preface(&mut out);
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(rest);
    let mut scratch = Scratch::default();
    let mut pending: Vec<u8> = Vec::new();
    for chunk in input.chunks(piece) {
        pending.extend_from_slice(chunk);
        let mut answer = Vec::new();
        let used = conn.receive(&pending, &mut out, &mut scratch, &mut |e| {
            if let Event::Request { stream, .. } | Event::Refuse { stream, .. } = e {
                answer.push(stream);
            }
        });
        pending.drain(..used);
        for stream in answer {
            let mut block = Vec::new();
            encoder::write_status(&mut block, 200);
            encoder::write_field(&mut block, "content-type", b"text/plain");
            conn.send_headers(stream, &block, false, &mut out);
            conn.send_data(stream, b"hello", true, &mut out);
        }
        assert!(out.len() < OUTPUT_HIGH + 64 * 1024);
        if conn.is_closed() {
            assert_eq!(conn.open_streams(), 0);
            return;
        }
        // The peer reads what it is owed.
        out.clear();
        assert!(conn.held_bytes() < 1 << 20);
    }
}

/// Reads `data` as Redis's replies to the fleet: framed and bounded as a connection frames
/// them, then read as a Redis Cluster's map, a redirection and a pushed message.
#[cfg(feature = "redis")]
pub fn redis_replies(data: &[u8]) {
    crate::fleet::fuzz_replies(data);
}
