//! Property tests of the WebSocket codec (`web::ws`): any sequence of valid frames decodes to
//! the same events however the bytes are split; arbitrary bytes never panic the decoder, the
//! frame-head parser or the close-payload parser; masking twice is the identity at any offset;
//! text that is not UTF-8 earns 1007 however it is split; and the streaming UTF-8 check agrees
//! with `std::str::from_utf8` on any bytes split anywhere.

use proptest::prelude::*;
use web::ws::{
    Decoder, Event, OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT, Role,
    Utf8Check, WsError, apply_mask, is_valid_code, parse_close, parse_frame_head, write_frame,
};

/// A position in a sequence of any length, as a fraction of that length (proptest's `Index`
/// cannot be built by hand, and the fixed cases below need positions).
#[derive(Clone, Copy, Debug)]
struct Frac(u16);

impl Frac {
    fn of(f: f64) -> Frac {
        Frac((f * 65536.0).min(65535.0) as u16)
    }

    /// A position in `0..size`.
    fn index(&self, size: usize) -> usize {
        assert!(size > 0);
        size * usize::from(self.0) / 65536
    }
}

fn frac() -> impl Strategy<Value = Frac> {
    any::<u16>().prop_map(Frac)
}

/// Large enough for every message generated here.
const MAX: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// A model of what a peer sends, and the events it must decode to.

#[derive(Clone, Debug)]
enum Control {
    Ping(Vec<u8>),
    Pong(Vec<u8>),
}

#[derive(Clone, Debug)]
enum Msg {
    Text(String),
    Binary(Vec<u8>),
    /// A binary message long enough for a 16- or 64-bit length: (length, seed of its bytes).
    Big(usize, u8),
    Control(Control),
    /// A message sent in fragments, with control frames between them: is it text, its bytes
    /// (UTF-8 when text, cut anywhere, even inside a code point), the cuts, and the control
    /// frames with the fragment each one follows.
    Fragmented {
        text: bool,
        data: Vec<u8>,
        cuts: Vec<Frac>,
        controls: Vec<(Frac, Control)>,
    },
}

/// What ends the sequence: nothing, or a close frame (empty, or code and reason).
#[derive(Clone, Debug)]
enum End {
    Nothing,
    Close(Option<(u16, String)>),
}

fn small_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..=max)
}

fn control() -> impl Strategy<Value = Control> {
    prop_oneof![
        small_bytes(125).prop_map(Control::Ping),
        small_bytes(125).prop_map(Control::Pong),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z ]{0,40}",
        // Multi-byte code points, so fragments split them.
        "[κόσμε€𝄞é中文]{0,30}",
    ]
}

fn msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        3 => text().prop_map(Msg::Text),
        2 => small_bytes(200).prop_map(Msg::Binary),
        1 => prop_oneof![126usize..=2000, 65_530usize..=65_600].prop_flat_map(|len| any::<u8>().prop_map(move |seed| Msg::Big(len, seed))),
        2 => control().prop_map(Msg::Control),
        3 => (
            any::<bool>(),
            text(),
            small_bytes(200),
            prop::collection::vec(frac(), 0..5),
            prop::collection::vec((frac(), control()), 0..4),
        )
            .prop_map(|(text, s, bytes, cuts, controls)| Msg::Fragmented {
                text,
                data: if text { s.into_bytes() } else { bytes },
                cuts,
                controls,
            }),
    ]
}

fn close_code() -> impl Strategy<Value = u16> {
    prop_oneof![1000u16..=1003, 1007u16..=1014, 3000u16..=4999]
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        Just(End::Nothing),
        Just(End::Close(None)),
        (close_code(), text()).prop_map(|(code, reason)| {
            // A control frame's payload is at most 125 bytes: the code and up to 123 of reason.
            let mut reason = reason;
            while reason.len() > 123 {
                reason.pop();
            }
            End::Close(Some((code, reason)))
        }),
    ]
}

fn big_payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Appends one frame: (wire, first byte, payload).
type FrameFn<'a> = dyn FnMut(&mut Vec<u8>, u8, &[u8]) + 'a;

/// Frames the model, masked with a fresh key per frame for `Role::Server` (reading a
/// client), unmasked for `Role::Client`. Returns the wire bytes and the events they must
/// decode to.
fn encode(
    role: Role,
    msgs: &[Msg],
    end: &End,
    keys: &mut impl FnMut() -> [u8; 4],
) -> (Vec<u8>, Vec<Event>) {
    let mut wire = Vec::new();
    let mut events = Vec::new();
    let mut frame = |wire: &mut Vec<u8>, first: u8, payload: &[u8]| {
        let mask = (role == Role::Server).then(&mut *keys);
        write_frame(wire, first, payload, mask);
    };
    let control =
        |wire: &mut Vec<u8>, events: &mut Vec<Event>, frame: &mut FrameFn, c: &Control| match c {
            Control::Ping(p) => {
                frame(wire, 0x80 | OP_PING, p);
                events.push(Event::Ping(p.clone()));
            }
            Control::Pong(p) => {
                frame(wire, 0x80 | OP_PONG, p);
                events.push(Event::Pong(p.clone()));
            }
        };
    for m in msgs {
        match m {
            Msg::Text(s) => {
                frame(&mut wire, 0x80 | OP_TEXT, s.as_bytes());
                events.push(Event::Text(s.clone()));
            }
            Msg::Binary(b) => {
                frame(&mut wire, 0x80 | OP_BINARY, b);
                events.push(Event::Binary(b.clone()));
            }
            Msg::Big(len, seed) => {
                let b = big_payload(*len, *seed);
                frame(&mut wire, 0x80 | OP_BINARY, &b);
                events.push(Event::Binary(b));
            }
            Msg::Control(c) => control(&mut wire, &mut events, &mut frame, c),
            Msg::Fragmented {
                text,
                data,
                cuts,
                controls,
            } => {
                let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(data.len() + 1)).collect();
                cuts.sort_unstable();
                // Fragment boundaries: 0, the cuts (repeats give empty fragments, which are
                // allowed), and the end; at least two fragments, so the message is fragmented.
                let mut bounds = vec![0];
                bounds.extend(cuts);
                bounds.push(data.len());
                if bounds.len() == 2 {
                    bounds.push(data.len());
                }
                let fragments = bounds.len() - 1;
                let mut after: Vec<Vec<&Control>> = vec![Vec::new(); fragments - 1];
                for (at, c) in controls {
                    after[at.index(fragments - 1)].push(c);
                }
                for f in 0..fragments {
                    let opcode = match (f, *text) {
                        (0, true) => OP_TEXT,
                        (0, false) => OP_BINARY,
                        _ => OP_CONTINUATION,
                    };
                    let fin = if f == fragments - 1 { 0x80 } else { 0 };
                    frame(&mut wire, fin | opcode, &data[bounds[f]..bounds[f + 1]]);
                    if let Some(cs) = after.get(f) {
                        for c in cs {
                            control(&mut wire, &mut events, &mut frame, c);
                        }
                    }
                }
                events.push(if *text {
                    Event::Text(String::from_utf8(data.clone()).expect("generated text is UTF-8"))
                } else {
                    Event::Binary(data.clone())
                });
            }
        }
    }
    if let End::Close(close) = end {
        let payload = match close {
            None => Vec::new(),
            Some((code, reason)) => [&code.to_be_bytes()[..], reason.as_bytes()].concat(),
        };
        frame(&mut wire, 0x80 | OP_CLOSE, &payload);
        events.push(Event::Close(close.clone()));
    }
    (wire, events)
}

/// Cut points in `0..=len`, sorted.
fn cut_points(len: usize, cuts: &[Frac]) -> Vec<usize> {
    let mut points: Vec<usize> = cuts.iter().map(|i| i.index(len + 1)).collect();
    points.sort_unstable();
    points
}

/// Feeds `wire` to a decoder in the pieces `cuts` make, as reads would bring them, calling
/// `next` until each piece is used up. Checks that every call makes progress and never claims
/// more than it was given.
fn decode(
    role: Role,
    max: usize,
    wire: &[u8],
    cuts: &[usize],
) -> Result<(Vec<Event>, Decoder), WsError> {
    let mut d = Decoder::new(role, max);
    let mut events = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain(std::iter::once(&wire.len())) {
        let piece = &wire[from..to];
        from = to;
        let mut at = 0;
        while at < piece.len() {
            let (used, event) = d.next(&piece[at..])?;
            assert!(
                used <= piece.len() - at,
                "used {used} of {}",
                piece.len() - at
            );
            assert!(
                used > 0 || event.is_some(),
                "no progress at {at} of a {}-byte piece",
                piece.len()
            );
            at += used;
            events.extend(event);
        }
    }
    Ok((events, d))
}

fn key_source(seed: u64) -> impl FnMut() -> [u8; 4] {
    let mut state = seed | 1;
    move || {
        // xorshift64
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state as u32).to_le_bytes()
    }
}

// ---------------------------------------------------------------------------------------------
// Split anywhere, decode the same.

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn client_frames_split_anywhere_decode_the_same(
        msgs in prop::collection::vec(msg(), 0..8),
        end in end(),
        seed in any::<u64>(),
        cuts in prop::collection::vec(frac(), 0..12),
    ) {
        let (wire, want) = encode(Role::Server, &msgs, &end, &mut key_source(seed));
        let (whole, d) = decode(Role::Server, MAX, &wire, &[]).expect("valid frames decode");
        prop_assert_eq!(&whole, &want);
        prop_assert!(d.is_idle());
        prop_assert_eq!(d.held_bytes(), 0);
        let (split, d) = decode(Role::Server, MAX, &wire, &cut_points(wire.len(), &cuts)).expect("valid frames decode when split");
        prop_assert_eq!(&split, &want);
        prop_assert!(d.is_idle());
        prop_assert_eq!(d.held_bytes(), 0);
    }

    #[test]
    fn server_frames_split_anywhere_decode_the_same(
        msgs in prop::collection::vec(msg(), 0..8),
        end in end(),
        cuts in prop::collection::vec(frac(), 0..12),
    ) {
        let (wire, want) = encode(Role::Client, &msgs, &end, &mut key_source(1));
        let (whole, _) = decode(Role::Client, MAX, &wire, &[]).expect("valid frames decode");
        prop_assert_eq!(&whole, &want);
        let (split, d) = decode(Role::Client, MAX, &wire, &cut_points(wire.len(), &cuts)).expect("valid frames decode when split");
        prop_assert_eq!(&split, &want);
        prop_assert!(d.is_idle());
    }

    /// Byte by byte: the worst split of all.
    #[test]
    fn client_frames_byte_by_byte_decode_the_same(
        msgs in prop::collection::vec(msg().prop_filter("small", |m| !matches!(m, Msg::Big(..))), 0..6),
        end in end(),
        seed in any::<u64>(),
    ) {
        let (wire, want) = encode(Role::Server, &msgs, &end, &mut key_source(seed));
        let every: Vec<usize> = (1..wire.len()).collect();
        let (split, d) = decode(Role::Server, MAX, &wire, &every).expect("valid frames decode byte by byte");
        prop_assert_eq!(&split, &want);
        prop_assert!(d.is_idle());
    }
}

/// One fixed sequence with every kind of frame, split at every single offset and at every pair
/// of offsets.
#[test]
fn a_mixed_sequence_split_at_every_offset_and_pair() {
    let msgs = vec![
        Msg::Text("héllo €𝄞".into()),
        Msg::Control(Control::Ping(b"are you there".to_vec())),
        Msg::Binary(vec![0, 1, 2, 255]),
        Msg::Fragmented {
            text: true,
            data: "κόσμε 𝄞".as_bytes().to_vec(),
            cuts: vec![Frac::of(0.2), Frac::of(0.55)],
            controls: vec![
                (Frac::of(0.0), Control::Pong(vec![])),
                (Frac::of(0.9), Control::Ping(vec![9])),
            ],
        },
        Msg::Big(300, 7),
        Msg::Fragmented {
            text: false,
            data: vec![5; 20],
            cuts: vec![],
            controls: vec![(Frac::of(0.5), Control::Ping(b"mid".to_vec()))],
        },
    ];
    let end = End::Close(Some((1000, "bye".into())));
    let (wire, want) = encode(Role::Server, &msgs, &end, &mut key_source(42));
    assert_eq!(decode(Role::Server, MAX, &wire, &[]).unwrap().0, want);
    for a in 0..=wire.len() {
        assert_eq!(
            decode(Role::Server, MAX, &wire, &[a]).unwrap().0,
            want,
            "cut at {a}"
        );
    }
    // Pairs over the first part (heads and small frames), where splits matter most.
    let n = wire.len().min(120);
    for a in 0..=n {
        for b in a..=n {
            assert_eq!(
                decode(Role::Server, MAX, &wire, &[a, b]).unwrap().0,
                want,
                "cuts at {a}, {b}"
            );
        }
    }
}

/// A 64-bit length (65 536 bytes and more) split inside its head and inside its payload.
#[test]
fn a_64_bit_length_split_in_its_head_and_payload() {
    let (wire, want) = encode(
        Role::Server,
        &[Msg::Big(70_000, 3), Msg::Text("after".into())],
        &End::Nothing,
        &mut key_source(5),
    );
    assert_eq!(wire[1], 0x80 | 127);
    for a in (0..=20).chain([1000, 65_535, 65_536, 70_013, 70_014, 70_015]) {
        for b in [a, a + 1, a + 5, 30_000, 70_014] {
            let mut cuts = [a, b.max(a)];
            cuts.sort_unstable();
            let cuts: Vec<usize> = cuts.iter().map(|&c| c.min(wire.len())).collect();
            assert_eq!(
                decode(Role::Server, MAX, &wire, &cuts).unwrap().0,
                want,
                "cuts {cuts:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Arbitrary bytes never panic.

/// Bytes that look like frames more often than uniform noise does: first bytes from the valid
/// ones, mask bits set or not, lengths at their boundaries.
fn frame_ish_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => any::<u8>(),
        2 => prop::sample::select(vec![0x00u8, 0x01, 0x02, 0x80, 0x81, 0x82, 0x88, 0x89, 0x8a]),
        2 => prop::sample::select(vec![0x7du8, 0x7e, 0x7f, 0xfd, 0xfe, 0xff, 0x80, 0x00]),
    ];
    prop::collection::vec(byte, 0..300)
}

fn valid_then_mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(
            msg().prop_filter("small", |m| !matches!(m, Msg::Big(..))),
            1..5,
        ),
        any::<u64>(),
        prop::collection::vec((frac(), any::<u8>()), 1..6),
    )
        .prop_map(|(msgs, seed, flips)| {
            let (mut wire, _) = encode(Role::Server, &msgs, &End::Nothing, &mut key_source(seed));
            for (at, xor) in flips {
                let i = at.index(wire.len());
                wire[i] ^= xor;
            }
            wire
        })
}

/// Feeds bytes, stopping at the first error; panics are what is being looked for.
fn feed_noise(role: Role, max: usize, bytes: &[u8], cuts: &[usize]) {
    let _ = decode(role, max, bytes, cuts);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn decoder_survives_arbitrary_bytes(
        bytes in prop_oneof![prop::collection::vec(any::<u8>(), 0..400), frame_ish_bytes(), valid_then_mutated()],
        max in prop_oneof![0usize..=200, Just(MAX_SMALL), Just(MAX)],
        cuts in prop::collection::vec(frac(), 0..8),
    ) {
        let cuts = cut_points(bytes.len(), &cuts);
        feed_noise(Role::Server, max, &bytes, &[]);
        feed_noise(Role::Server, max, &bytes, &cuts);
        feed_noise(Role::Client, max, &bytes, &[]);
        feed_noise(Role::Client, max, &bytes, &cuts);
    }

    /// Whatever the bytes, a decoder fed them whole and fed them in pieces agrees: same events
    /// up to the same error, if any.
    #[test]
    fn decoder_on_arbitrary_bytes_split_anywhere_agrees(
        bytes in prop_oneof![frame_ish_bytes(), valid_then_mutated()],
        cuts in prop::collection::vec(frac(), 0..8),
    ) {
        for role in [Role::Server, Role::Client] {
            let whole = events_until_error(role, &bytes, &[]);
            let split = events_until_error(role, &bytes, &cut_points(bytes.len(), &cuts));
            prop_assert_eq!(whole, split);
        }
    }

    #[test]
    fn parse_frame_head_survives_arbitrary_bytes(bytes in prop_oneof![prop::collection::vec(any::<u8>(), 0..20), frame_ish_bytes()]) {
        for role in [Role::Server, Role::Client] {
            if let Ok(Some(head)) = parse_frame_head(&bytes, role) {
                prop_assert!(head.head_len <= bytes.len());
                prop_assert!(matches!(head.head_len, 2 | 4 | 6 | 8 | 10 | 14));
                prop_assert_eq!(head.mask.is_some(), role == Role::Server);
                prop_assert!(head.len < 1 << 63);
                if head.is_control() {
                    prop_assert!(head.fin && head.len <= 125);
                }
                // A head is a head: more bytes after it change nothing.
                let mut longer = bytes[..head.head_len].to_vec();
                longer.extend_from_slice(&[0xaa; 16]);
                prop_assert_eq!(parse_frame_head(&longer, role), Ok(Some(head)));
            }
        }
    }

    #[test]
    fn parse_close_survives_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..130)) {
        match parse_close(&bytes) {
            Ok(None) => prop_assert!(bytes.is_empty()),
            Ok(Some((code, reason))) => {
                prop_assert!(is_valid_code(code));
                prop_assert_eq!(code, u16::from_be_bytes([bytes[0], bytes[1]]));
                prop_assert_eq!(reason.as_bytes(), &bytes[2..]);
            }
            Err(e) => prop_assert!(e == WsError::Protocol || e == WsError::InvalidData, "{e}"),
        }
    }
}

/// Between the small and the large limit: messages may or may not fit.
const MAX_SMALL: usize = 64;

fn events_until_error(role: Role, bytes: &[u8], cuts: &[usize]) -> (Vec<Event>, Option<WsError>) {
    let mut d = Decoder::new(role, MAX_SMALL);
    let mut events = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let piece = &bytes[from..to];
        from = to;
        let mut at = 0;
        while at < piece.len() {
            match d.next(&piece[at..]) {
                Ok((used, event)) => {
                    assert!(used > 0 || event.is_some(), "no progress");
                    at += used;
                    events.extend(event);
                }
                Err(code) => return (events, Some(code)),
            }
        }
    }
    (events, None)
}

// ---------------------------------------------------------------------------------------------
// Masking.

proptest! {
    #[test]
    fn masking_twice_is_the_identity_at_any_offset(
        data in prop::collection::vec(any::<u8>(), 0..200),
        key in any::<[u8; 4]>(),
        offset in prop_oneof![0usize..64, any::<u32>().prop_map(|o| o as usize)],
    ) {
        let mut masked = data.clone();
        apply_mask(&mut masked, key, offset);
        for (i, b) in masked.iter().enumerate() {
            prop_assert_eq!(*b, data[i] ^ key[(offset + i) % 4]);
        }
        apply_mask(&mut masked, key, offset);
        prop_assert_eq!(masked, data);
    }

    #[test]
    fn masking_in_pieces_equals_masking_whole(
        data in prop::collection::vec(any::<u8>(), 0..200),
        key in any::<[u8; 4]>(),
        cuts in prop::collection::vec(frac(), 0..6),
    ) {
        let mut whole = data.clone();
        apply_mask(&mut whole, key, 0);
        let mut pieces = data.clone();
        let mut from = 0;
        for to in cut_points(data.len(), &cuts).into_iter().chain(std::iter::once(data.len())) {
            apply_mask(&mut pieces[from..to], key, from);
            from = to;
        }
        prop_assert_eq!(pieces, whole);
    }
}

/// Offsets near the top of `usize` (a payload offset is a count of bytes, so these are
/// theoretical, but `apply_mask` is public and takes any `usize`).
#[test]
fn masking_at_the_largest_offsets() {
    let data: Vec<u8> = (0..40).collect();
    let key = [1, 2, 4, 8];
    for offset in [usize::MAX - 3, usize::MAX - 1, usize::MAX] {
        let mut masked = data.clone();
        apply_mask(&mut masked, key, offset);
        apply_mask(&mut masked, key, offset);
        assert_eq!(masked, data, "offset {offset}");
    }
}

// ---------------------------------------------------------------------------------------------
// Invalid UTF-8 earns 1007, however it is split.

/// Byte sequences that can never be UTF-8, wherever they stand.
fn invalid_utf8() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(vec![
            b"\xff".to_vec(),
            b"\xfe".to_vec(),
            b"\x80".to_vec(), // a lone continuation byte
            b"\xbf".to_vec(),
            b"\xc0\xaf".to_vec(), // overlong '/'
            b"\xc1\xbf".to_vec(),
            b"\xe0\x80\xaf".to_vec(),     // overlong
            b"\xed\xa0\x80".to_vec(),     // surrogate U+D800
            b"\xed\xbf\xbf".to_vec(),     // surrogate U+DFFF
            b"\xf4\x90\x80\x80".to_vec(), // above U+10FFFF
            b"\xf5\x80\x80\x80".to_vec(),
            b"\xf8\x88\x80\x80\x80".to_vec(),
            b"\xe2\x82A".to_vec(),    // a code point cut short by ASCII
            b"\xf0\x9d\x84".to_vec(), // cut short by whatever follows, or the end
        ]),
        prop::collection::vec(any::<u8>(), 1..40)
            .prop_filter("not UTF-8", |b| std::str::from_utf8(b).is_err()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn invalid_utf8_anywhere_is_1007_however_split(
        before in text(),
        bad in invalid_utf8(),
        after in text(),
        fragment_cuts in prop::collection::vec(frac(), 0..5),
        controls in prop::collection::vec((frac(), control()), 0..3),
        fragmented in any::<bool>(),
        seed in any::<u64>(),
        read_cuts in prop::collection::vec(frac(), 0..8),
        lead in prop::collection::vec(msg().prop_filter("small", |m| !matches!(m, Msg::Big(..))), 0..3),
    ) {
        // "\xf0\x9d\x84" followed by a continuation byte would become valid; keep what follows
        // ASCII-led so the sequence stays invalid.
        let after = format!("!{after}");
        let data = [before.as_bytes(), &bad, after.as_bytes()].concat();
        prop_assume!(std::str::from_utf8(&data).is_err());
        let msg = if fragmented {
            Msg::Fragmented { text: true, data: data.clone(), cuts: fragment_cuts, controls }
        } else {
            Msg::Binary(data.clone()) // re-framed as text below
        };
        let mut keys = key_source(seed);
        let (mut wire, _) = encode(Role::Server, &lead, &End::Nothing, &mut keys);
        match msg {
            Msg::Binary(data) => write_frame(&mut wire, 0x80 | OP_TEXT, &data, Some(keys())),
            fragmented => {
                let frames = encode_unchecked_text(&fragmented, &mut keys);
                wire.extend(frames);
            }
        }
        let whole = decode(Role::Server, MAX, &wire, &[]).err();
        prop_assert_eq!(whole, Some(WsError::InvalidData));
        let split = decode(Role::Server, MAX, &wire, &cut_points(wire.len(), &read_cuts)).err();
        prop_assert_eq!(split, Some(WsError::InvalidData));
    }

    /// A message whose only fault is a code point left unfinished at its very end.
    #[test]
    fn text_ending_inside_a_code_point_is_1007(
        before in text(),
        tail in prop::sample::select(vec![b"\xc3".to_vec(), b"\xe2\x82".to_vec(), b"\xe2".to_vec(), b"\xf0\x9d\x84".to_vec(), b"\xf0".to_vec()]),
        cuts in prop::collection::vec(frac(), 0..4),
        read_cuts in prop::collection::vec(frac(), 0..6),
    ) {
        let data = [before.as_bytes(), &tail].concat();
        let wire = encode_unchecked_text(&Msg::Fragmented { text: true, data, cuts, controls: vec![] }, &mut key_source(9));
        prop_assert_eq!(decode(Role::Server, MAX, &wire, &[]).err(), Some(WsError::InvalidData));
        prop_assert_eq!(decode(Role::Server, MAX, &wire, &cut_points(wire.len(), &read_cuts)).err(), Some(WsError::InvalidData));
    }
}

/// Frames a fragmented text message whose bytes need not be UTF-8 (so `encode`, which builds the
/// expected event, cannot be used).
fn encode_unchecked_text(msg: &Msg, keys: &mut impl FnMut() -> [u8; 4]) -> Vec<u8> {
    let Msg::Fragmented {
        data,
        cuts,
        controls,
        ..
    } = msg
    else {
        unreachable!()
    };
    // Encode it as binary, then flip the first frame's opcode to text: the frames are the same
    // but for that byte (the mask key does not cover the first byte).
    let as_binary = Msg::Fragmented {
        text: false,
        data: data.clone(),
        cuts: cuts.clone(),
        controls: controls.clone(),
    };
    let (mut wire, _) = encode(Role::Server, &[as_binary], &End::Nothing, keys);
    assert_eq!(wire[0], OP_BINARY, "the first fragment comes first");
    wire[0] = OP_TEXT;
    wire
}

// ---------------------------------------------------------------------------------------------
// Utf8Check against std.

/// Bytes rich in UTF-8 structure: lead bytes of every length, continuation bytes, the edges
/// (surrogates, overlongs, above U+10FFFF) and ASCII, plus real text.
fn utf8_ish_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        2 => 0x00u8..0x80,
        3 => 0x80u8..0xc0,
        1 => 0xc0u8..0xe0,
        1 => 0xe0u8..0xf0,
        1 => 0xf0u8..0xf8,
        1 => 0xf8u8..=0xff,
        1 => prop::sample::select(vec![0xc2u8, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0x9f, 0xa0, 0x8f, 0x90]),
    ];
    prop_oneof![
        prop::collection::vec(byte, 0..40),
        any::<String>().prop_map(String::into_bytes),
        (
            any::<String>(),
            prop::collection::vec((frac(), any::<u8>()), 1..3)
        )
            .prop_map(|(s, flips)| {
                let mut b = s.into_bytes();
                if !b.is_empty() {
                    for (at, v) in flips {
                        let i = at.index(b.len());
                        b[i] = v;
                    }
                }
                b
            }),
        prop::collection::vec(any::<u8>(), 0..40),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// After every piece, the check's verdict is std's on the bytes so far: a definite error
    /// (`error_len` is `Some`) fails the feed, a valid prefix (`error_len` is `None`) passes it
    /// but is not complete, valid text passes and is complete.
    #[test]
    fn utf8_check_agrees_with_std_split_anywhere(
        bytes in utf8_ish_bytes(),
        cuts in prop::collection::vec(frac(), 0..8),
    ) {
        let mut check = Utf8Check::default();
        let mut from = 0;
        let mut failed = false;
        for to in cut_points(bytes.len(), &cuts).into_iter().chain(std::iter::once(bytes.len())) {
            if !failed {
                failed = !check.feed(&bytes[from..to]);
            }
            from = to;
            let so_far = &bytes[..to];
            match std::str::from_utf8(so_far) {
                Ok(_) => {
                    prop_assert!(!failed, "feed failed on valid {so_far:?}");
                    prop_assert!(check.is_complete(), "incomplete after valid {so_far:?}");
                }
                Err(e) if e.error_len().is_none() => {
                    prop_assert!(!failed, "feed failed on a valid prefix {so_far:?}");
                    prop_assert!(!check.is_complete(), "complete after a cut code point {so_far:?}");
                }
                Err(_) => prop_assert!(failed, "feed passed invalid {so_far:?}"),
            }
        }
        let verdict = !failed && check.is_complete();
        prop_assert_eq!(verdict, std::str::from_utf8(&bytes).is_ok());
    }

    #[test]
    fn utf8_check_byte_by_byte_agrees_with_std(bytes in utf8_ish_bytes()) {
        let mut check = Utf8Check::default();
        let ok = bytes.iter().all(|b| check.feed(std::slice::from_ref(b))) && check.is_complete();
        prop_assert_eq!(ok, std::str::from_utf8(&bytes).is_ok());
    }
}
