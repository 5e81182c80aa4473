//! The chunked decoder: never a panic; fed in two pieces it decodes exactly as fed whole.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::http::ChunkedDecoder;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let mut whole = ChunkedDecoder::new(1 << 16);
    let mut out_whole = Vec::new();
    let r_whole = whole.decode(input, &mut out_whole);

    let split = usize::from(pick) * input.len() / 256;
    let mut pieces = ChunkedDecoder::new(1 << 16);
    let mut out_pieces = Vec::new();
    let r_pieces = pieces.decode(&input[..split], &mut out_pieces).and_then(|n| {
        if pieces.is_done() {
            Ok(n)
        } else {
            pieces
                .decode(&input[split..], &mut out_pieces)
                .map(|m| n + m)
        }
    });
    assert_eq!(r_whole, r_pieces, "split at {split}");
    if r_whole.is_ok() {
        assert_eq!(out_whole, out_pieces);
        assert_eq!(whole.is_done(), pieces.is_done());
        assert!(out_whole.len() as u64 == whole.decoded() || !whole.is_done());
    }
});
