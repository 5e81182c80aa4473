//! The request-head parser: never a panic; the same answer however the input is split (the first
//! byte picks the split point); what a parsed request hands out is consistent.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::http::{parse_request, HeadParser};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let whole = HeadParser::default().parse(input);
    let split = usize::from(pick) * input.len() / 256;
    let mut p = HeadParser::default();
    let first = p.parse(&input[..split]);
    let pieces = match first {
        Ok(None) => p.parse(input),
        other => other,
    };
    match (&whole, &pieces) {
        // A complete head in the prefix may end before the split: both must agree on it.
        (Ok(Some(a)), Ok(Some(b))) => {
            assert_eq!(a.request, b.request);
            assert_eq!(a.len, b.len);
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        (Ok(None), Ok(None)) => {}
        _ if split == 0 => {}
        _ => panic!("whole {whole:?} but split at {split} {pieces:?}"),
    }
    if let Ok(req) = parse_request(input) {
        let _ = (req.method(), req.path(), req.body().len());
        for h in req.headers() {
            assert_eq!(h.name(), h.name().to_ascii_lowercase());
            assert_eq!(req.header_bytes(h.name()).is_empty(), req.headers().find(|x| x.name() == h.name()).is_some_and(|x| x.value().is_empty()));
        }
        let copy = req.clone();
        assert_eq!(copy, req);
        let _ = req.into_body();
    }
});
