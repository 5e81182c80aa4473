//! The request-head parser: never a panic; the same answer however the input arrives — fed as
//! growing prefixes (the first byte picks where the first one ends, the second how much each next
//! one adds, 1 to 256 bytes) it gives what the whole gives at once; `parse_request` never panics
//! and what it hands out is consistent. Only `==` and the accessors are used on `Request`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use web::http::{parse_request, HeadParser, ParseError, RequestHead};

fn in_prefixes(input: &[u8], first: usize, stride: usize) -> Result<Option<RequestHead>, ParseError> {
    let mut p = HeadParser::default();
    let mut end = first;
    loop {
        match p.parse(&input[..end]) {
            Ok(None) if end < input.len() => end = (end + stride).min(input.len()),
            answer => return answer,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [cut, stride, input @ ..] = data else {
        return;
    };
    let whole = HeadParser::default().parse(input);
    let first = usize::from(*cut) * input.len() / 256;
    let pieces = in_prefixes(input, first, 1 + usize::from(*stride));
    match (&whole, &pieces) {
        // A complete head may end before the first cut: both must agree on it.
        (Ok(Some(a)), Ok(Some(b))) => {
            assert_eq!(a, b);
            assert!(a.len <= input.len());
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        (Ok(None), Ok(None)) => {}
        _ => panic!("whole {whole:?} but from {first} by {stride}: {pieces:?}"),
    }
    if let Ok(req) = parse_request(input) {
        let _ = (req.method(), req.path(), req.body().len());
        for h in req.headers() {
            assert_eq!(h.name(), h.name().to_ascii_lowercase());
            let first_value = req.headers().find(|x| x.name() == h.name()).map(|x| x.value());
            assert_eq!(Some(req.header_bytes(h.name())), first_value);
        }
        let copy = req.clone();
        assert_eq!(copy, req);
        let _ = req.into_body();
    }
});
